// Finds training steps in a stream of kernels without annotations: the repeating unit of the
// kernel-name sequence of the busiest stream, aligned so that a step begins where the stream's
// first repetition begins. Online and bounded: fed kernels one at a time, it learns the pattern
// from a bounded prefix, then emits a boundary each time the pattern's step-opening kernels pass.
// Free of any I/O and shared by the decoder (`cupmon-decode steps`) and the monitor's writer
// thread (CUPMON_AUTO_WINDOW), so both cut steps the same way (issue 18).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "cupmon/base/huge_pages.h"

namespace cupmon {

struct StepDetectorOptions {
  // Learning tries at this many buffered kernels, then at twice as many, up to max_learn_kernels;
  // past that the buffer slides (the older half is dropped when full) and attempts come less and
  // less often, at most 8 buffers apart (memory: ~24 bytes per kernel).
  size_t first_attempt = 4096;
  size_t max_learn_kernels = size_t{1} << 18;
  // A pattern needs this many repetitions in the buffer, and its exact repetitions must cover at
  // least min_coverage of the busiest stream's buffered kernels.
  uint32_t min_cycles = 4;
  double min_coverage = 0.5;
  // CUPTI hands one stream's kernels over in several buffers filled side by side, so the delivery
  // order is not the start order (the bundled H200 sample needs 16,847 held to restore it). This
  // many kernels are held to put them back in start order (0: the input is in order already).
  size_t reorder_kernels = size_t{1} << 17;
  // Buffers of kHugeMappingMin bytes and more in the decoder's huge mappings (MapHugeBytes, kept
  // from one recording to the next) instead of the heap, where the reorder runs of 2^17 held
  // kernels would grow 4 KiB page by page, a fault each. Off in the monitor: kept mappings would
  // stay in the host's memory.
  bool huge_mappings = false;
};

// The first kernel of a step (on the pattern's stream).
struct StepBoundary {
  uint64_t number = 0;  // 1-based, in order
  uint64_t start = 0;   // the kernel's start (the caller's clock, usually CUPTI ns)
  uint64_t tag = 0;     // what the caller gave with that kernel (OnKernel)
};

// The repeating unit that was found.
struct StepPattern {
  uint64_t stream_key = 0;         // the stream the steps are cut on (the caller's key)
  uint32_t period = 0;             // kernels per step on that stream, in the repeated steps
  double coverage = 0;             // share of the learning buffer in exact repetitions
  // Name ids that open a step: the step's first kernel is signature.back(), preceded on the same
  // stream by the rest (the end of the previous step). Unique within one repetition.
  std::vector<uint32_t> signature;
  bool aligned_to_start = false;   // the phase came from the stream's first repetition
};

// Single-threaded. Kernels may come in any order within the reorder bound.
class StepDetector {
 public:
  explicit StepDetector(StepDetectorOptions options = {});

  // One kernel: `stream_key` names its (device, stream), `name` is an id where equal kernel names
  // have equal ids; `tag` comes back in the boundary this kernel opens (a record index, say).
  void OnKernel(uint64_t stream_key, uint32_t name, uint64_t start, uint64_t tag = 0);
  // End of the stream: learns from what is buffered when no pattern was found yet.
  void Finish();
  // The caller knows that no kernel to come starts before those given so far (CUPTI flushed:
  // every buffer filled up to then has been handed over): puts the kernels held for reordering
  // through, in start order, without ending the stream. Learning goes on.
  void ReleaseHeld();

  // Boundaries found since the last call, in order (moved out to the caller).
  std::vector<StepBoundary> TakeBoundaries();
  bool has_boundaries() const { return !out_.empty(); }
  const std::optional<StepPattern>& pattern() const { return pattern_; }
  bool learning() const { return !pattern_; }
  // Kernels held for learning (bounded by max_learn_kernels) and for reordering.
  size_t buffered() const { return buffer_.size() + held_; }
  // Every step that starts at or before this time has been emitted: while learning, the earliest
  // buffered kernel's start (0 when the buffer is empty); after it, the latest start seen on the
  // pattern's stream. A caller holding other activities until their step is known releases those
  // that start before it.
  uint64_t settled_until() const;

 private:
  struct Buffered {
    uint64_t stream_key;
    uint64_t start;
    uint64_t tag;
    uint32_t name;
  };
  // The heap, or with `huge` MapHugeBytes for kHugeMappingMin bytes and more (huge_mappings).
  // One detector's containers all carry the same flag, and it moves with their memory.
  template <class T>
  struct Allocator {
    using value_type = T;
    using propagate_on_container_copy_assignment = std::true_type;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_swap = std::true_type;
    bool huge = false;
    Allocator() = default;
    explicit Allocator(bool h) : huge(h) {}
    template <class U>
    Allocator(const Allocator<U>& other) noexcept : huge(other.huge) {}
    T* allocate(size_t n) {
      if (Mapped(n)) return static_cast<T*>(MapHugeBytes(n * sizeof(T)));
      return std::allocator<T>{}.allocate(n);
    }
    void deallocate(T* p, size_t n) noexcept {
      if (Mapped(n)) return UnmapHugeBytes(p, n * sizeof(T));
      std::allocator<T>{}.deallocate(p, n);
    }
    bool Mapped(size_t n) const {
      return huge && n <= SIZE_MAX / sizeof(T) && n * sizeof(T) >= kHugeMappingMin;
    }
    friend bool operator==(const Allocator& a, const Allocator& b) { return a.huge == b.huge; }
  };
  using Kernels = std::vector<Buffered, Allocator<Buffered>>;
  void Process(const Buffered& b);
  void ReleaseOne();
  bool TryLearn(bool final);
  void Track(const Buffered& b, bool emit);
  void Emit(const Buffered& b);

  StepDetectorOptions options_;
  // Reorder stage: a kernel joins the sorted run (FIFO) whose tail it extends, so buffers filled
  // side by side cost one run each; a kernel that extends none waits in a min-heap.
  struct Run {
    Kernels items;
    size_t head = 0;
    bool empty() const { return head == items.size(); }
  };
  static constexpr size_t kMaxRuns = 8;
  std::vector<Run> runs_;
  Kernels heap_;
  size_t held_ = 0;
  Kernels buffer_;
  size_t next_attempt_;
  // Past the bound, attempts wait for this many new kernels, doubling after each failure (a
  // stream that never repeats costs O(n log n) a few times, not per buffer).
  size_t retry_after_ = 0, retry_wait_ = 0;
  bool dropped_prefix_ = false;  // older kernels were dropped: the stream's start is unknown
  std::optional<StepPattern> pattern_;
  // Tracking: the last signature.size() names on the pattern's stream (a ring).
  std::vector<uint32_t> ring_;
  size_t ring_pos_ = 0, ring_fill_ = 0;
  uint64_t last_start_ = 0;
  uint64_t count_ = 0;
  std::vector<StepBoundary> out_;
};

}  // namespace cupmon

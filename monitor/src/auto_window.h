// Windows that open themselves (CUPMON_AUTO_WINDOW, issue 18): StepWatch times steps on the writer
// thread from the always-on kernel records; AutoWindowMailbox hands a slow step to the control
// thread, which opens the window (control_loop.cc).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cupmon/format/step_detector.h"
#include "session_facts.h"

namespace cupmon {

// A step that took longer than `factor` times the median of the steps timed before it.
struct SlowStep {
  uint64_t step = 0;         // 1-based, as the detector numbers the steps it saw
  uint64_t duration_ns = 0;  // its first kernel's start to the next step's first kernel's start
  uint64_t median_ns = 0;
  double factor = 0;         // the threshold it passed
  bool once = false;         // the one-shot trigger (cupmonctl window --when-slower) fired
};

// The hand-over between the writer (Offer, once_factor) and the control thread (Take, ArmOnce,
// Disarm). Memory ordering: mu_ guards pending_ (held for a copy, never while calling anything);
// once_milli_ is a relaxed atomic, a threshold with no other memory behind it. Bounded: one
// pending step; while it is unread, later ones are refused (the first slow step is the one the
// window should show).
class AutoWindowMailbox {
 public:
  // Control thread: arms the one-shot trigger with `factor` (> 1), or disarms it.
  void ArmOnce(double factor) {
    once_milli_.store(static_cast<uint32_t>(factor * 1000 + 0.5), std::memory_order_relaxed);
  }
  void Disarm() { once_milli_.store(0, std::memory_order_relaxed); }
  // Any thread: the armed one-shot factor; 0 when not armed.
  double once_factor() const { return once_milli_.load(std::memory_order_relaxed) / 1000.0; }

  // Writer: false when an unread step is there already (`s` is dropped).
  bool Offer(const SlowStep& s) {
    std::lock_guard<std::mutex> lk(mu_);
    if (pending_) return false;
    pending_ = s;
    return true;
  }
  std::optional<SlowStep> Take() {
    std::lock_guard<std::mutex> lk(mu_);
    std::optional<SlowStep> out = pending_;
    pending_.reset();
    return out;
  }

 private:
  std::atomic<uint32_t> once_milli_{0};
  std::mutex mu_;
  std::optional<SlowStep> pending_;
};

// Writer thread only. Reads the start, device, stream and name pointer of each kernel record
// (the offsets in SessionFacts; nothing when the loaded CUPTI's layout is unknown), maps name
// pointers to small ids, and feeds `cupmon-decode steps`' StepDetector. Each finished step is
// compared with the median of the last kMedianSteps steps before it.
//
// Memory: bounded by the detector's options (~32 bytes per held kernel), kMaxNames names and
// kMedianSteps durations.
class StepWatch {
 public:
  struct Options {
    double factor = 1.5;     // the CUPMON_AUTO_WINDOW threshold; 0: only the one-shot trigger
    uint32_t min_steps = 10;  // steps timed before any comparison
    StepDetectorOptions detector = MonitorDetectorOptions();
  };
  static constexpr size_t kMedianSteps = 64;
  static constexpr size_t kMaxNames = size_t{1} << 16;
  // The monitor's detector bounds: the decoder's defaults, with smaller learning and reorder
  // buffers (a slow step is noticed sooner; the H200 sample needs 16,847 kernels reordered).
  static StepDetectorOptions MonitorDetectorOptions();

  StepWatch(const SessionFacts& facts, Options options, AutoWindowMailbox& mailbox);

  // One completed buffer (the writer, after writing it).
  void Add(const uint8_t* buffer, size_t valid);
  uint64_t kernels() const { return kernels_; }
  uint64_t steps_timed() const { return timed_; }
  uint64_t slow_refused() const { return refused_; }  // slow steps the mailbox did not take

 private:
  uint32_t NameId(uint64_t pointer);
  void OnBoundaries();
  uint64_t Median();

  const SessionFacts& facts_;
  const Options options_;
  AutoWindowMailbox& mailbox_;
  StepDetector detector_;
  std::unordered_map<uint64_t, uint32_t> names_;  // name pointer -> id (1, 2, ...)
  uint64_t last_pointer_ = 0;
  uint32_t last_id_ = 0;
  uint64_t kernels_ = 0;
  uint64_t timed_ = 0;
  uint64_t refused_ = 0;
  std::optional<StepBoundary> last_boundary_;
  std::vector<uint64_t> recent_;  // ring of the last kMedianSteps durations
  size_t recent_pos_ = 0;
  std::vector<uint64_t> scratch_;
};

}  // namespace cupmon

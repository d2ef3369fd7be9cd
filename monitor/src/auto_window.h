// Windows that open themselves (CUPMON_AUTO_WINDOW, issue 18): StepWatch times steps on the writer
// thread from the always-on kernel records; AutoWindowMailbox hands a slow step to the control
// thread, which opens the window (auto_window_trigger.cc).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cupmon.pb.h"

#include "cupmon/base/thread_annotations.h"
#include "cupmon/format/step_detector.h"
#include "session_facts.h"
#include "step_sums.h"

namespace cupmon {

// A step that took longer than `factor` times the median of the steps timed before it (and, for
// CUPMON_AUTO_WINDOW, longer than the median plus kSpreadMads times their median absolute
// deviation).
//
// With CUPMON_AUTO_WINDOW_BY other than step, the test runs on that quantity of each step (its
// work, host gap, or both): duration_ns and median_ns are then that quantity's.
struct SlowStep {
  uint64_t step = 0;         // 1-based, as the detector numbers the steps it saw
  uint64_t duration_ns = 0;  // its first kernel's start to the next step's first kernel's start
  uint64_t median_ns = 0;
  AutoWindowBy by = AutoWindowBy::kStep;  // what duration_ns and median_ns measure
  double factor = 0;         // the threshold it passed
  bool once = false;         // the one-shot trigger (cupmonctl window --when-slower) fired
};

// The hand-over between the writer (Offer, once_factor) and the control thread (Take, ArmOnce,
// Disarm). Memory ordering: mu_ guards pending_ (held for a copy, never while calling anything);
// once_milli_ is a relaxed atomic with no other memory behind it; mark_state_ is sequentially
// consistent (the queue's lock orders the marks themselves). Bounded: one
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

  // Flush marks (AutoWindowTrigger::MarkFlushed): at most one queued at a time, so that a stalled
  // writer and a short CUPMON_FLUSH_MS cannot fill the queue's task quota with them; a flush while
  // one is queued is remembered, and the writer queues the next mark itself when it takes that
  // one (it then follows the flush's buffers). Any thread, after a flush: true when the caller
  // should queue a mark. The writer, at a mark: true when it should queue another.
  bool ClaimMark() {
    int s = mark_state_.load();
    for (;;) {
      if (s == kMarkQueuedAgain) return false;
      if (mark_state_.compare_exchange_weak(s, s == kNoMark ? kMarkQueued : kMarkQueuedAgain))
        return s == kNoMark;
    }
  }
  bool MarkTaken() {
    if (mark_state_.exchange(kNoMark) != kMarkQueuedAgain) return false;
    int none = kNoMark;  // a flush since may have queued its own already
    return mark_state_.compare_exchange_strong(none, kMarkQueued);
  }
  // The mark just claimed could not be queued (the queue is closed or full).
  void DropMark() { mark_state_.store(kNoMark); }

  // Writer: false when an unread step is there already (`s` is dropped).
  bool Offer(const SlowStep& s) {
    MutexLock lk(mu_);
    if (pending_) return false;
    pending_ = s;
    return true;
  }
  std::optional<SlowStep> Take() {
    MutexLock lk(mu_);
    std::optional<SlowStep> out = pending_;
    pending_.reset();
    return out;
  }

 private:
  std::atomic<uint32_t> once_milli_{0};
  static constexpr int kNoMark = 0, kMarkQueued = 1, kMarkQueuedAgain = 2;
  std::atomic<int> mark_state_{kNoMark};
  Mutex mu_;
  std::optional<SlowStep> pending_ CUPMON_GUARDED_BY(mu_);
};

// Writer thread only. Reads the start, device, stream and name pointer of each kernel record
// (the offsets in SessionFacts; nothing when the loaded CUPTI's layout is unknown), maps name
// pointers to small ids, and cuts steps: with an anchor (CUPMON_AUTO_WINDOW_ANCHOR=kernel:TEXT),
// a step begins at each kernel whose name contains TEXT, on the stream of the first such kernel;
// without one, `cupmon-decode steps`' StepDetector finds them. Each finished step is compared with
// the median of the last kMedianSteps steps before it.
//
// Order: CUPTI fills one stream's kernels into buffers side by side (the bundled H200 sample: two
// at a time, each in start order), hands a full one over at once and the others at the next flush,
// so the delivery order is not the start order. The detector holds kernels to restore it (at most
// 2^15), and the control thread marks the end of each periodic flush (Settle): every buffer filled
// until then has come, so the held kernels are put through at once. A step is thus timed with the
// flush that delivers the next step's first kernel: within CUPMON_FLUSH_MS, not after 2^15 more
// kernels (~160 steps of a 200-kernel loop). Anchor kernels are held and sorted the same way (at
// most kMaxHeldAnchors between flushes).
//
// Per-step figures (Options::sums): StepSums gets every buffer and boundary, and the figures of
// each step summed feed the totals the metrics serve and, with Options::by other than kStep, the
// slow-step test (which then waits for those figures: one step later than the step time).
//
// Memory: bounded by the detector's learning buffer (~32 bytes per kernel), kMaxNames names,
// 2 x kMedianSteps values and, with sums, StepSums' cap.
class StepWatch {
 public:
  struct Options {
    double factor = 3;     // the CUPMON_AUTO_WINDOW threshold; 0: only the one-shot trigger
    uint32_t min_steps = 10;  // steps timed before any comparison
    std::string anchor_kernel;  // CUPMON_AUTO_WINDOW_ANCHOR=kernel:TEXT; empty: the detector
    StepDetectorOptions detector = MonitorDetectorOptions();
    bool sums = false;  // per-step work, collective time and host gap (StepSums)
    // What `factor` compares (CUPMON_AUTO_WINDOW_BY); not kStep needs `sums`. The one-shot
    // trigger (--when-slower) always compares step times.
    AutoWindowBy by = AutoWindowBy::kStep;
  };
  static constexpr size_t kMedianSteps = 64;
  static constexpr size_t kMaxNames = size_t{1} << 16;
  static constexpr size_t kMaxHeldAnchors = 4096;
  // CUPMON_AUTO_WINDOW's second condition: a step must also be longer than the median plus this
  // many median absolute deviations of the steps before it (the one-shot --when-slower K is K
  // times the median only, as asked).
  static constexpr double kSpreadMads = 10;
  // CUPMON_AUTO_WINDOW_BY other than step: a step must also exceed the median by this much (a
  // host gap's median is often 0, where any gap would be "3x the median").
  static constexpr uint64_t kMinExcessNs = 50'000;
  // The monitor's detector bounds: the decoder's defaults with smaller learning and reorder
  // buffers (the reorder bound only matters when flushes are rare or off; see the class comment).
  static StepDetectorOptions MonitorDetectorOptions();

  StepWatch(const SessionFacts& facts, Options options, AutoWindowMailbox& mailbox);

  // The writer, for every string entry it writes (before the records that use it), from the
  // first buffer on, whether the trigger is armed or not: with an anchor, notes the name
  // pointers whose text contains it; with sums, those of collectives.
  void NoteStrings(const std::vector<pb::StringEntry>& entries);
  // One completed buffer (the writer, after writing it, while the trigger is armed).
  void Add(const uint8_t* buffer, size_t valid);
  // The writer, at the control thread's mark after a periodic flush: the buffers given so far
  // are all those filled until the flush (see the class comment).
  void Settle();
  uint64_t kernels() const { return kernels_; }
  uint64_t steps_timed() const { return timed_; }
  uint64_t slow_refused() const { return refused_; }  // slow steps the mailbox did not take
  // With Options::sums: the published steps' totals, and what the cap cut; else null.
  const StepSums* sums() const { return sums_.get(); }

 private:
  // The last kMedianSteps values of one quantity.
  struct Recent {
    std::vector<uint64_t> values;
    size_t pos = 0;
    void Add(uint64_t v);
  };
  // Whether `value` passes `factor` x the median of `r` and (with `spread`) the median plus
  // kSpreadMads MADs; *median is set.
  bool Exceeds(const Recent& r, uint64_t value, double factor, bool spread, uint64_t* median);
  void OnFigures(const StepFigures& f);
  uint32_t NameId(uint64_t pointer);
  void OnBoundaries();
  void OnBoundary(const StepBoundary& b);
  void ReleaseAnchors(size_t count);
  uint64_t Median(const Recent& r);
  uint64_t Mad(const Recent& r, uint64_t median);

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
  std::vector<uint64_t> anchors_;  // anchor name pointers (sorted; few)
  std::vector<bool> anchor_id_;    // by name id: an anchor
  uint64_t anchor_stream_ = 0;
  bool have_anchor_stream_ = false;
  uint64_t anchor_count_ = 0;
  std::vector<uint64_t> held_anchors_;  // anchor kernels' starts since the last Settle
  std::optional<StepBoundary> last_boundary_;
  Recent recent_;     // step durations
  Recent recent_by_;  // Options::by's quantity, when not kStep
  uint64_t figures_seen_ = 0;
  std::vector<uint64_t> scratch_;
  std::unique_ptr<StepSums> sums_;
};

}  // namespace cupmon

// StepSums: per step of the writer's step watch, the GPU work, collective time and host gap of this
// process, for the metrics (cupmon_step_*_seconds_total) and the work-driven automatic windows
// (CUPMON_AUTO_WINDOW_BY). Definitions: docs/CONTROL.md, "Per-step figures".
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/metrics/metrics_server.h"
#include "session_facts.h"

namespace cupmon {

// NCCL's collective and point-to-point kernels, as the decoder's job command names them
// (decoder/src/job/job_analysis.cc): ncclDevKernel_* (NCCL 2.19 on) and ncclKernel_*.
bool IsCollectiveKernelName(std::string_view name);

// One step's figures. Step n runs from its first kernel's start s(n) to the next step's s(n+1);
// its activities are the kernels, memcpys and memsets that started in [s(n), s(n+1)).
struct StepFigures {
  uint64_t number = 0;         // the step watch's step number (1-based)
  uint64_t step_ns = 0;        // s(n+1) - s(n)
  uint64_t work_ns = 0;        // union of its non-collective activities
  uint64_t collective_ns = 0;  // union of its collective kernels
  uint64_t host_gap_ns = 0;    // idle from the previous steps' last end to its first collective
};

// Writer thread only. Holds the intervals of the steps whose figures are not known yet, and sums a
// step once the boundary after its end has come too (s(n+2)): an activity of step n still running
// when s(n+1) was delivered has come by then. Activities are read at SessionFacts' offsets
// (kernels, memcpy, peer copies, memset; a kind whose layout is unknown is not read).
//
// Intervals are held from the first boundary on: before it (while the watch learns the pattern, or
// when it never finds one) only their latest start and end are kept, and steps that began before
// that latest start are not published.
//
// Memory: at most kMaxHeld intervals (24 bytes each) and kMaxCollectiveNames name pointers. When
// the held intervals reach the cap, the earliest-started half is dropped (counted); a step in or
// after which an interval was dropped is not published (counted in steps_cut), and the figures of
// the steps after it are exact again (the dropped intervals' ends still bound the next host gap).
class StepSums {
 public:
  static constexpr size_t kMaxHeld = size_t{1} << 16;
  static constexpr size_t kMaxCollectiveNames = size_t{1} << 16;

  explicit StepSums(const SessionFacts& facts);

  // Every string entry the writer writes (before the records that use it).
  void NoteStrings(const std::vector<pb::StringEntry>& entries);
  // One completed buffer.
  void Add(const uint8_t* buffer, size_t valid);
  // The step watch's boundaries, in order of strictly increasing start.
  void OnBoundary(uint64_t number, uint64_t start);
  // Steps summed since the last call (published ones only), oldest first.
  const std::vector<StepFigures>& finished() const { return finished_; }
  void ClearFinished() { finished_.clear(); }

  // Cumulative, over the published steps.
  const metrics::StepTotals& totals() const { return totals_; }
  uint64_t intervals_dropped() const { return dropped_; }  // over the cap, or after their step
  uint64_t steps_cut() const { return cut_steps_; }
  size_t held() const { return held_.size(); }

 private:
  struct Interval {
    uint64_t start = 0;
    uint64_t end = 0;
    bool collective = false;
  };
  struct Boundary {
    uint64_t number = 0;
    uint64_t start = 0;
  };
  void Hold(uint64_t start, uint64_t end, bool collective);
  void DropOldest();
  void SumOldestStep();
  bool IsCollective(uint64_t pointer);

  const SessionFacts& facts_;
  std::unordered_set<uint64_t> collective_names_;
  uint64_t last_pointer_ = 0;
  bool last_collective_ = false;
  std::vector<Interval> held_;
  std::deque<Boundary> bounds_;   // starts of the steps not summed yet, and the next ones
  uint64_t summed_until_ = 0;     // start of the first step not summed: earlier ones are late
  uint64_t floor_end_ = 0;        // latest end of the activities no longer held
  bool have_cut_ = false;
  uint64_t cut_until_ = 0;        // latest start of a dropped interval
  bool holding_ = false;          // from the first boundary on
  bool have_unheld_ = false;
  uint64_t unheld_until_ = 0;     // latest start of an activity before the first boundary
  std::vector<StepFigures> finished_;
  metrics::StepTotals totals_;
  uint64_t dropped_ = 0;
  uint64_t cut_steps_ = 0;
};

}  // namespace cupmon

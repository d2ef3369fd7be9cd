// Training steps of a recording: found by StepDetector in the kernel stream (or taken from step
// annotations such as "step 12" / "ProfilerStep#12"), with per-step GPU time, idle gaps and
// memcpy bytes. `cupmon-decode steps` prints them; exports may mark them (ProfilerStep#N).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cupmon/decoder/record_consumer.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/step_detector.h"
#include "cupmon/decoder/step_options.h"

namespace cupmon::decoder {

// One device's share of a step.
// A step's activities are the kernels, memcpys and memsets that start in it (at or after its
// start, before the next step's); its span is [since, end] (Step). Per device with one of them:
// busy_ns is the length of the union of their intervals, and max_gap_ns the longest stretch of the
// span that union leaves uncovered (the lead-in from `since` to the first start and the tail from
// the last end to `end` included). So idle = duration - busy_ns is the sum of the uncovered
// stretches, and max_gap_ns <= idle (docs/DECODER.md, "Training steps", Figures).
struct StepDeviceTime {
  uint32_t device = 0;
  uint64_t busy_ns = 0;
  uint64_t max_gap_ns = 0;
  uint64_t first_start = 0, last_end = 0;  // CUPTI ns: of the union
};

struct Step {
  uint64_t number = 0;     // 1-based
  uint64_t start = 0;      // CUPTI ns: the step's first kernel on the pattern's stream
  uint64_t end = 0;        // the end of its last activity
  // The previous step's end (the first step: its start). Durations count from here, end to end
  // as a training loop times its steps: a wait before a step's launches is that step's.
  uint64_t since = 0;
  int64_t wall_start = 0, wall_end = 0;  // unix ns of start and end
  // Unix ns for gpu-trace --from/--to: from the step's first kernel to just before the next
  // step's, as the trace builder maps them (annotated steps: midway through the idle gaps around).
  int64_t drill_from = 0, drill_to = 0;
  uint64_t first_record = UINT64_MAX;  // its first kernel's index among GPU and API records
  uint64_t kernels = 0, memcpys = 0, memsets = 0;
  uint64_t memcpy_bytes = 0;
  uint64_t comm_ns = 0;    // summed durations of communication kernels (NCCL)
  std::vector<StepDeviceTime> devices;
  std::string label;       // the step annotation its kernels carry ("step 12"), "" when none
  uint64_t duration() const { return end > since ? end - since : 0; }
};

// A trace window of the recording, from its BEGIN marker: for the steps table's "windows" list,
// with why the monitor's step trigger opened it (source TRIGGER_AUTO).
struct StepWindow {
  uint32_t id = 0;
  std::string source;   // "TRIGGER_AUTO", "TRIGGER_SIGNAL", ...
  int64_t wall_begin = 0;  // unix ns (the marker's realtime_ns)
  // TRIGGER_AUTO: the monitor's step number, duration, median and threshold. The monitor cuts
  // steps at their first kernels, so a wait before step N+1's launches is in its step N.
  uint64_t trigger_step = 0, trigger_step_ns = 0, trigger_median_ns = 0;
  double trigger_factor = 0;
  std::string trigger_by;  // empty: the step time; else CUPMON_AUTO_WINDOW_BY's quantity
};

struct StepList {
  std::vector<Step> steps;
  std::vector<StepWindow> windows;  // in marker order
  StepSource source = StepSource::kPattern;  // where the steps came from (never kAuto)
  std::optional<StepPattern> pattern;        // the kernel pattern, when one was found
  std::vector<std::string> signature_names;  // pattern->signature as demangled names
  uint64_t pattern_steps = 0, annotated_steps = 0;  // what each source found
  uint64_t kernels_before = 0;   // kernels that start before the first step (initialisation)
  uint64_t activities = 0;       // kernels, memcpys and memsets read
  // Unix ns of the earliest start and the latest end among them (0 when none), through the
  // final calibration: the span a chart over the whole recording covers.
  int64_t first_wall = 0, last_wall = 0;
  uint64_t unresolved_names = 0;
  // Activities that came further out of start order than the step consumer holds (steps.cc's kReorder
  // later ones), and the part of their time left out of busy_ns so that no overlap counts twice.
  uint64_t late_activities = 0, late_busy_ns = 0;
  ReadIntegrity integrity;
};

// Reads one recording and finds its steps: one pass of a decode-only TraceBuilder feeding a
// StepFinder's consumer. Memory bounded by the learning buffer plus one small record per step.
StepList FindSteps(const Recording& recording, const StepOptions& options,
                   const ReadProgressFn& progress = {});

// The steps of one recording, taken from the records of a TraceBuilder that reads it anyway (the
// kineto export's): add consumer() to that builder before its read (TraceBuilder::AddConsumer),
// then call Finish once after it. The steps are FindSteps' for the same recording
// (StepList::integrity stays empty: the caller's pass counts it). Single-threaded.
class StepFinder {
 public:
  explicit StepFinder(const StepOptions& options);
  ~StepFinder();
  StepFinder(const StepFinder&) = delete;
  StepFinder& operator=(const StepFinder&) = delete;
  RecordConsumer& consumer();
  StepList Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Per-step rolling statistics used for the slow-step list: the median of the steps before each
// one (see StepOptions), 0 when there is none.
std::vector<uint64_t> RollingMedians(const std::vector<Step>& steps, uint32_t window);
// Indices of slow steps, slowest excess (duration minus rolling median) first; `medians` from
// RollingMedians(steps, options.rolling).
std::vector<size_t> SlowSteps(const std::vector<Step>& steps, const std::vector<uint64_t>& medians,
                              const StepOptions& options);

}  // namespace cupmon::decoder

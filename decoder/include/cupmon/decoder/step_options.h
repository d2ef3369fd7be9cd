// How the training steps of a recording are found and shown (StepOptions): the choices of the
// commands that find steps (commands.h) and of FindSteps (steps.h).
#pragma once

#include <cstdint>

#include "cupmon/decoder/step_detector.h"

namespace cupmon::decoder {

enum class StepSource { kAuto, kPattern, kAnnotation };
enum class StepFormat { kTable, kCsv, kJsonl };

struct StepOptions {
  // kAuto: annotated steps when the recording has step labels on at least half as many steps as
  // the kernel pattern finds (or the pattern finds none), else the kernel pattern.
  StepSource source = StepSource::kAuto;
  StepFormat format = StepFormat::kTable;
  // A step is slow when it lasts at least slow_factor times the median of the `rolling` steps
  // before it (the median of all steps while fewer than 5 came before) and 50 us more.
  double slow_factor = 1.5;
  uint32_t rolling = 50;
  StepDetectorOptions detector;
  // Only where the pattern's steps lie in time, for a caller that needs no more (the kineto
  // export's detected steps): each Step's number, start, end, since, wall times, drill range and
  // first_record, as without it. Its counts, device times and label stay empty, annotations are
  // not read (`source` counts as kPattern, annotated_steps is 0), and the scan costs less.
  bool times_only = false;
  // Steps' wall-clock times (start_ns, end_ns, the drill ranges) are their CUPTI times: the
  // recording's calibration is not applied (`--clock cupti`, as TraceFilter::cupti_clock).
  bool cupti_clock = false;
};

}  // namespace cupmon::decoder

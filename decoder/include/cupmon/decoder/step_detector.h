// The decoder's name for the online step detector, which lives in cupmon::format
// (cupmon/format/step_detector.h) so that the monitor's writer thread runs the same code.
#pragma once

#include "cupmon/format/step_detector.h"

namespace cupmon::decoder {

using ::cupmon::StepBoundary;
using ::cupmon::StepDetector;
using ::cupmon::StepDetectorOptions;
using ::cupmon::StepPattern;

}  // namespace cupmon::decoder

// Session facts for tests and benchmarks that feed StepWatch (monitor/src/auto_window.h) records
// laid out as CUDA 13's CUpti_ActivityKernel10, the layout the H200 recordings carry.
#pragma once

#include <cupti.h>

#include <cstddef>

#include "cupmon/format/record_sizes.h"
#include "monitor/src/session_facts.h"

namespace cupmon::testing {

inline SessionFacts Kernel10Facts() {
  SessionFacts f;
  f.sizes = RecordSizeTable::Cupti13();
  f.sizes.Set(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, sizeof(CUpti_ActivityKernel10));
  f.kernel = {offsetof(CUpti_ActivityKernel10, start), offsetof(CUpti_ActivityKernel10, end),
              offsetof(CUpti_ActivityKernel10, deviceId),
              offsetof(CUpti_ActivityKernel10, streamId)};
  f.kernel_name_offset = offsetof(CUpti_ActivityKernel10, name);
  return f;
}

}  // namespace cupmon::testing

// DurationStat: calls and durations of one name (a kernel, a memcpy kind, an API call), as summary
// and the HTML report count them. Private to the decoder.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cupmon/decoder/trace_builder.h"

namespace cupmon::decoder {

struct DurationStat {
  uint64_t calls = 0;  // rows
  uint64_t timed = 0;  // rows with a known time: total, min and max are over these
  uint64_t total = 0, min = UINT64_MAX, max = 0;

  void Add(const Row& r) {
    ++calls;
    if (!r.valid_time) return;
    ++timed;
    total += r.duration;
    min = std::min(min, r.duration);
    max = std::max(max, r.duration);
  }
  void Merge(const DurationStat& o) {
    calls += o.calls;
    timed += o.timed;
    total += o.total;
    min = std::min(min, o.min);
    max = std::max(max, o.max);
  }
};

}  // namespace cupmon::decoder

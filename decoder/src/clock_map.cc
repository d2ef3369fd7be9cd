// ClockMap: piecewise-linear CUPTI -> wall-clock mapping.
#include "cupmon/decoder/clock_map.h"

#include <algorithm>

namespace cupmon::decoder {

// 128-bit intermediates keep the interpolation exact (GCC/Clang extension).
__extension__ typedef __int128 Int128;

void ClockMap::Add(const pb::CalibrationSample& s) {
  if (s.cupti_ns() == 0 || (!samples_.empty() && s.cupti_ns() <= samples_.back().cupti)) {
    ++non_monotonic_;
    return;
  }
  if (samples_.size() >= kMaxSamples) return;
  samples_.push_back(Sample{s.cupti_ns(), s.realtime_ns()});
}

int64_t ClockMap::ToWall(uint64_t cupti_ns) const {
  if (samples_.empty()) return static_cast<int64_t>(cupti_ns);
  auto it = std::upper_bound(samples_.begin(), samples_.end(), cupti_ns,
                             [](uint64_t t, const Sample& s) { return t < s.cupti; });
  if (it == samples_.begin() || it == samples_.end()) {
    const Sample& s = it == samples_.begin() ? samples_.front() : samples_.back();
    return s.wall + (static_cast<int64_t>(cupti_ns) - static_cast<int64_t>(s.cupti));
  }
  const Sample& b = *it;
  const Sample& a = *(it - 1);
  // Exact integer interpolation: the offset at `a` plus the drift accumulated since `a`.
  const Int128 since = static_cast<Int128>(cupti_ns - a.cupti);
  const Int128 span = static_cast<Int128>(b.cupti - a.cupti);
  const Int128 drift = static_cast<Int128>(b.wall - a.wall) - span;
  return a.wall + static_cast<int64_t>(since + drift * since / span);
}

}  // namespace cupmon::decoder

// ClockMap: piecewise-linear CUPTI -> wall-clock mapping, one map per CUPTI clock domain.
#include "cupmon/decoder/clock_map.h"

#include <algorithm>
#include <cmath>

namespace cupmon::decoder {

// 128-bit intermediates keep the interpolation exact (GCC/Clang extension).
__extension__ typedef __int128 Int128;

namespace {
constexpr double kMinRate = 1.0 / 128, kMaxRate = 128.0;  // CUPTI units per wall ns for a clock
}  // namespace

bool ClockMap::Continues(const Segment& g, const Sample& s) const {
  const Sample& a = g.samples.back();
  const Int128 dc = static_cast<Int128>(s.cupti) - static_cast<Int128>(a.cupti);
  const Int128 dw = static_cast<Int128>(s.wall) - static_cast<Int128>(a.wall);
  const Int128 off = dc - dw;
  if (off <= kDomainTolerance && off >= -kDomainTolerance) return true;  // a nanosecond clock
  if (dc <= 0 || dw <= 0) return false;
  const double r = static_cast<double>(dc) / static_cast<double>(dw);
  if (r < kMinRate || r > kMaxRate) return false;
  return !g.rate_known || (r >= g.rate / 2 && r <= g.rate * 2);
}

void ClockMap::Add(const pb::CalibrationSample& in) {
  const Sample s{in.cupti_ns(), in.realtime_ns()};
  if (s.cupti == 0) {
    ++non_monotonic_;
    return;
  }
  size_t found = segments_.size();
  if (!segments_.empty()) {
    if (Continues(segments_[current_], s)) {
      found = current_;
    } else {
      for (size_t i = segments_.size(); i-- > 0;) {
        if (i != current_ && Continues(segments_[i], s)) {
          found = i;
          break;
        }
      }
    }
  }
  if (found < segments_.size() && s.cupti <= segments_[found].samples.back().cupti) {
    ++non_monotonic_;  // same domain, but CUPTI time did not increase
    return;
  }
  if (kept_ >= kMaxSamples) return;
  if (found == segments_.size()) segments_.emplace_back();
  if (!segments_.empty() && found != current_ && kept_ != 0) ++domain_changes_;
  current_ = found;
  Segment& g = segments_[found];
  g.samples.push_back(s);
  ++kept_;
  const Sample& first = g.samples.front();
  const int64_t span_wall = s.wall - first.wall;
  if (span_wall >= kRateSpan) {
    g.rate = static_cast<double>(s.cupti - first.cupti) / static_cast<double>(span_wall);
    g.rate_known = true;
    g.ns_clock = std::fabs(g.rate - 1.0) <= 0.01;
  }
}

const ClockMap::Segment* ClockMap::SegmentFor(uint64_t cupti_ns) const {
  if (segments_.empty()) return nullptr;
  const Segment* best = &segments_.front();
  uint64_t best_distance = UINT64_MAX;
  for (const Segment& g : segments_) {
    const uint64_t lo = g.samples.front().cupti, hi = g.samples.back().cupti;
    const uint64_t d = cupti_ns < lo ? lo - cupti_ns : cupti_ns > hi ? cupti_ns - hi : 0;
    if (d <= best_distance) {  // ties: the later segment
      best = &g;
      best_distance = d;
    }
  }
  return best;
}

int64_t ClockMap::MapIn(const Segment& g, uint64_t cupti_ns) {
  const std::vector<Sample>& samples = g.samples;
  auto it = std::upper_bound(samples.begin(), samples.end(), cupti_ns,
                             [](uint64_t t, const Sample& s) { return t < s.cupti; });
  if (it == samples.begin() || it == samples.end()) {
    const Sample& s = it == samples.begin() ? samples.front() : samples.back();
    if (g.ns_clock) return s.wall + (static_cast<int64_t>(cupti_ns) - static_cast<int64_t>(s.cupti));
    const double units = static_cast<double>(static_cast<Int128>(cupti_ns) -
                                             static_cast<Int128>(s.cupti));
    return s.wall + static_cast<int64_t>(std::llround(units / g.rate));
  }
  const Sample& b = *it;
  const Sample& a = *(it - 1);
  // Exact integer interpolation: the offset at `a` plus the drift accumulated since `a`.
  const Int128 since = static_cast<Int128>(cupti_ns - a.cupti);
  const Int128 span = static_cast<Int128>(b.cupti - a.cupti);
  const Int128 drift = static_cast<Int128>(b.wall - a.wall) - span;
  return a.wall + static_cast<int64_t>(since + drift * since / span);
}

int64_t ClockMap::ToWall(uint64_t cupti_ns) const {
  const Segment* g = SegmentFor(cupti_ns);
  return g ? MapIn(*g, cupti_ns) : static_cast<int64_t>(cupti_ns);
}

int64_t ClockMap::WallDuration(uint64_t start, uint64_t end) const {
  const Segment* g = SegmentFor(start);
  if (!g || g->ns_clock) return static_cast<int64_t>(end - start);
  return MapIn(*g, end) - MapIn(*g, start);
}

}  // namespace cupmon::decoder

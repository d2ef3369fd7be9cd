// ClockMap: piecewise-linear CUPTI -> wall-clock mapping, one map per CUPTI clock domain.
#include "cupmon/decoder/clock_map.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace cupmon::decoder {

// 128-bit intermediates keep the interpolation exact (GCC/Clang extension).
__extension__ typedef __int128 Int128;

namespace {
constexpr double kMinRate = 1.0 / 128, kMaxRate = 128.0;  // CUPTI units per wall ns for a clock

// Calibration comes from files, so its values can be absurd (damage, fuzzing): every sum and
// difference is formed in 128 bits and clamped into int64, never left to overflow.
int64_t Clamp(Int128 v) {
  constexpr Int128 kMax = INT64_MAX, kMin = INT64_MIN;
  return static_cast<int64_t>(v > kMax ? kMax : v < kMin ? kMin : v);
}
int64_t ClampDouble(long double v) {
  if (!(v == v)) return 0;  // NaN
  if (v >= static_cast<long double>(INT64_MAX)) return INT64_MAX;
  if (v <= static_cast<long double>(INT64_MIN)) return INT64_MIN;
  return static_cast<int64_t>(std::llround(v));
}
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
    // A sample seen before (each file's preamble restates the last ones written) adds nothing;
    // any other is CUPTI time that did not increase within the domain.
    const std::vector<Sample>& v = segments_[found].samples;
    const auto it = std::lower_bound(v.begin(), v.end(), s.cupti,
                                     [](const Sample& a, uint64_t t) { return a.cupti < t; });
    if (it == v.end() || it->cupti != s.cupti || it->wall != s.wall) ++non_monotonic_;
    return;
  }
  if (held_ >= kMaxSamples) Thin();
  if (found == segments_.size()) segments_.emplace_back();
  if (!segments_.empty() && found != current_ && kept_ != 0) ++domain_changes_;
  current_ = found;
  Segment& g = segments_[found];
  g.samples.push_back(s);
  ++kept_;
  ++held_;
  const Sample& first = g.samples.front();
  const Int128 span_wall = static_cast<Int128>(s.wall) - static_cast<Int128>(first.wall);
  if (span_wall >= kRateSpan) {
    g.rate = static_cast<double>(s.cupti - first.cupti) / static_cast<double>(span_wall);
    g.rate_known = true;
    g.ns_clock = std::fabs(g.rate - 1.0) <= 0.01;
  }
}

void ClockMap::Thin() {
  held_ = 0;
  for (Segment& g : segments_) {
    std::vector<Sample>& v = g.samples;
    size_t out = 0;
    for (size_t i = 0; i < v.size(); i += 2) v[out++] = v[i];
    if (v.size() % 2 == 0 && v.size() > 1) v[out++] = v.back();  // the last sample stays
    v.resize(out);
    held_ += out;
    g.hint = 0;
    g.fast = Segment::Pair{};
  }
}

const ClockMap::Segment* ClockMap::SegmentFor(uint64_t cupti_ns) const {
  if (segments_.empty()) return nullptr;
  if (segments_.size() == 1) return &segments_.front();  // one clock domain: nearly every recording
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

namespace {
// True when samples[i] <= t < samples[i + 1]: the pair std::upper_bound would find for t.
template <class Samples>
bool HoldsBetween(const Samples& samples, size_t i, uint64_t t) {
  return i + 1 < samples.size() && samples[i].cupti <= t && t < samples[i + 1].cupti;
}
}  // namespace

int64_t ClockMap::MapIn(const Segment& g, uint64_t cupti_ns) {
  // Timestamps come nearly in time order: most fall in the pair the last one fell in.
  if (g.fast.Holds(cupti_ns)) return g.fast.Map(cupti_ns);
  const std::vector<Sample>& samples = g.samples;
  // Samples of a segment strictly increase in CUPTI time (Add drops the others), so the pair
  // holding cupti_ns is unique: the remembered pair or the next one is the search's answer.
  std::vector<Sample>::const_iterator it;
  if (HoldsBetween(samples, g.hint, cupti_ns)) {
    it = samples.begin() + static_cast<std::ptrdiff_t>(g.hint + 1);
  } else if (HoldsBetween(samples, g.hint + 1, cupti_ns)) {
    it = samples.begin() + static_cast<std::ptrdiff_t>(++g.hint + 1);
  } else {
    it = std::upper_bound(samples.begin(), samples.end(), cupti_ns,
                          [](uint64_t t, const Sample& s) { return t < s.cupti; });
    if (it != samples.begin() && it != samples.end())
      g.hint = static_cast<size_t>(it - samples.begin()) - 1;
  }
  if (it == samples.begin() || it == samples.end()) {
    const Sample& s = it == samples.begin() ? samples.front() : samples.back();
    const Int128 units = static_cast<Int128>(cupti_ns) - static_cast<Int128>(s.cupti);
    if (g.ns_clock) return Clamp(static_cast<Int128>(s.wall) + units);
    return ClampDouble(static_cast<long double>(s.wall) +
                       static_cast<long double>(units) / static_cast<long double>(g.rate));
  }
  const Sample& b = *it;
  const Sample& a = *(it - 1);
  // Exact integer interpolation: the offset at `a` plus the drift accumulated since `a`.
  const Int128 since = static_cast<Int128>(cupti_ns - a.cupti);
  const Int128 span = static_cast<Int128>(b.cupti - a.cupti);
  const Int128 drift = static_cast<Int128>(b.wall) - static_cast<Int128>(a.wall) - span;
  // The fast path of the next call, when nothing below can overflow for any timestamp of this
  // pair: since < span, so |since * drift| < span * |drift| <= INT64_MAX (both factors below
  // 2^63: their product fits 128 bits), and the result lies within a.wall - |drift| and
  // a.wall + span + |drift|, inside int64. Then the 64-bit formula gives what the code below
  // gives (the same truncation toward zero; no clamp is reached).
  const Int128 abs_drift = drift < 0 ? -drift : drift;
  if (span <= INT64_MAX && abs_drift <= INT64_MAX && abs_drift * span <= INT64_MAX &&
      static_cast<Int128>(a.wall) - abs_drift >= INT64_MIN &&
      static_cast<Int128>(a.wall) + span + abs_drift <= INT64_MAX) {
    g.fast =
        Segment::Pair{a.cupti, static_cast<uint64_t>(span), a.wall, static_cast<int64_t>(drift)};
  }
  // Real calibration drifts by microseconds between samples taken minutes apart, so the product
  // fits 64 bits and the division is a 64-bit one (a 128-bit division is a library call, which
  // was most of the decoder's time placement): same truncation toward zero, same result.
  if (drift >= INT64_MIN && drift <= INT64_MAX && since <= INT64_MAX && span <= INT64_MAX) {
    int64_t product = 0;
    if (!__builtin_mul_overflow(static_cast<int64_t>(drift), static_cast<int64_t>(since), &product))
      return Clamp(static_cast<Int128>(a.wall) + since + product / static_cast<int64_t>(span));
  }
  // |drift * since| < 2^126 whenever |drift| < 2^62 (since < 2^64): real calibration always is;
  // beyond that (absurd samples) the product is formed in long double instead of overflowing.
  constexpr Int128 kExactDrift = Int128{1} << 62;
  const Int128 moved = drift < kExactDrift && drift > -kExactDrift
                           ? drift * since / span
                           : static_cast<Int128>(ClampDouble(static_cast<long double>(drift) *
                                                             static_cast<long double>(since) /
                                                             static_cast<long double>(span)));
  return Clamp(static_cast<Int128>(a.wall) + since + moved);
}

int64_t ClockMap::ToWallAnywhere(uint64_t cupti_ns) const {
  const Segment* g = SegmentFor(cupti_ns);
  return g ? MapIn(*g, cupti_ns) : static_cast<int64_t>(cupti_ns);
}

int64_t ClockMap::WallDurationAnywhere(uint64_t start, uint64_t end) const {
  const Segment* g = SegmentFor(start);
  if (!g || g->ns_clock) return Clamp(static_cast<Int128>(end) - static_cast<Int128>(start));
  return Clamp(static_cast<Int128>(MapIn(*g, end)) - static_cast<Int128>(MapIn(*g, start)));
}

}  // namespace cupmon::decoder

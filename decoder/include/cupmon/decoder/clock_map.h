// Maps CUPTI timestamps to wall-clock (CLOCK_REALTIME) nanoseconds through calibration samples.
#pragma once

#include <cstdint>
#include <vector>

#include "cupmon.pb.h"

namespace cupmon::decoder {

// Samples arrive as the stream is read. With no samples CUPTI's default clock on Linux is already
// CLOCK_REALTIME, so timestamps pass through unchanged (and calibrated() is false).
//
// CUPTI's clock can change domain during a recording: another CUPTI client in the process
// (torch.profiler/Kineto) registers a timestamp callback (cuptiActivityRegisterTimestampCallback),
// and from then on CUPTI's records and cuptiGetTimestamp() use that clock (Kineto on x86-64: raw
// TSC ticks, neither CLOCK_REALTIME nor nanoseconds). So the samples are grouped into domains
// ("segments"), each with its own map. A sample continues a segment when, against the segment's
// last sample, (cupti - wall) stayed within kDomainTolerance (a nanosecond clock), or CUPTI time
// advanced at a plausible rate for a clock (between 1/128 and 128 CUPTI units per wall ns, and
// within a factor of 2 of the segment's own rate once it spans kRateSpan of wall time). Anything
// else (offsets apart by years, CUPTI going back by more than the tolerance) is another domain:
// an earlier segment it continues, or a new one. domain_changes() counts the switches.
//
// Within a segment the mapping is linear between samples; outside them it uses the offset of the
// nearest sample, or, for a segment whose clock does not run at one unit per wall ns (TSC ticks),
// the segment's average rate. A timestamp is mapped with the segment whose CUPTI range is nearest
// to it (domains differ by orders of magnitude, so the choice is unambiguous in practice). A
// sample inside a segment whose CUPTI time does not increase over the segment's last sample is
// dropped and counted (non_monotonic()), as is a zero CUPTI time; a sample equal to one the segment
// holds (a file's preamble restates the last samples written) is dropped silently.
// Not thread-safe; one decoding thread.
class ClockMap {
 public:
  static constexpr int64_t kDomainTolerance = 1'000'000'000;  // 1 s
  static constexpr int64_t kRateSpan = 100'000'000;           // wall span for a trusted rate

  void Add(const pb::CalibrationSample& s);
  void Add(const pb::Calibration& c) {
    for (const auto& s : c.samples()) Add(s);
  }
  // The common cases of both are answered inline (one clock domain, and a time in the pair of
  // samples the last one fell in, or a nanosecond domain's duration), the others out of line:
  // the same results either way.
  int64_t ToWall(uint64_t cupti_ns) const {
    if (segments_.size() == 1 && segments_.front().fast.Holds(cupti_ns))
      return segments_.front().fast.Map(cupti_ns);
    return ToWallAnywhere(cupti_ns);
  }
  // Wall-clock nanoseconds between two CUPTI times of one record: end - start in a nanosecond
  // domain (exactly as without calibration), scaled by the domain's rate otherwise.
  int64_t WallDuration(uint64_t start, uint64_t end) const {
    if ((segments_.empty() || (segments_.size() == 1 && segments_.front().ns_clock)) &&
        end >= start && end - start <= static_cast<uint64_t>(INT64_MAX))
      return static_cast<int64_t>(end - start);
    return WallDurationAnywhere(start, end);
  }
  bool calibrated() const { return kept_ != 0; }
  uint64_t samples() const { return kept_; }
  uint64_t non_monotonic() const { return non_monotonic_; }
  // Times a sample was in another domain than the sample before it.
  uint64_t domain_changes() const { return domain_changes_; }
  size_t domains() const { return segments_.size(); }

 private:
  struct Sample {
    uint64_t cupti;
    int64_t wall;
  };
  struct Segment {
    std::vector<Sample> samples;
    // CUPTI units per wall ns from the first to the last sample; 1 until they span kRateSpan.
    double rate = 1.0;
    bool rate_known = false;
    bool ns_clock = true;  // rate within 1% of 1: mapped exactly as a single-domain recording
    // The pair (samples[hint], samples[hint + 1]) that held the last timestamp mapped between two
    // samples: records come nearly in time order, so the next one mostly falls in the same pair
    // or the next, and the binary search is skipped (MapIn; the same pair the search finds).
    mutable size_t hint = 0;
    // The pair last interpolated in, when its arithmetic cannot overflow (MapIn): a timestamp in
    // [lo, lo + span) maps as wall + since + since * drift / span in 64 bits, without the
    // search, the 128-bit intermediates or the clamps, and with the same result.
    struct Pair {
      uint64_t lo = 0, span = 0;  // span 0: none
      int64_t wall = 0, drift = 0;
      bool Holds(uint64_t t) const { return t - lo < span; }
      int64_t Map(uint64_t t) const {  // for a t it Holds
        const auto since = static_cast<int64_t>(t - lo);
        return wall + since + since * drift / static_cast<int64_t>(span);
      }
    };
    mutable Pair fast;
  };
  bool Continues(const Segment& g, const Sample& s) const;
  const Segment* SegmentFor(uint64_t cupti_ns) const;
  static int64_t MapIn(const Segment& g, uint64_t cupti_ns);
  int64_t ToWallAnywhere(uint64_t cupti_ns) const;
  int64_t WallDurationAnywhere(uint64_t start, uint64_t end) const;

  // Memory is bounded: when the segments hold kMaxSamples, every second sample of each is let go
  // (its first and last kept), so the map keeps following the clock to the end of any recording at
  // half the resolution, instead of extrapolating from the last sample it could hold.
  static constexpr size_t kMaxSamples = 1 << 16;
  void Thin();
  std::vector<Segment> segments_;
  size_t held_ = 0;     // samples in segments_
  size_t current_ = 0;  // segment of the last accepted sample
  uint64_t kept_ = 0;
  uint64_t non_monotonic_ = 0;
  uint64_t domain_changes_ = 0;
};

// True when a record's [start, end] can be shown as a duration: both set and end >= start.
inline bool ValidSpan(uint64_t start, uint64_t end) { return start != 0 && end != 0 && end >= start; }

// Times at or past 2^62 ns are damage. CUPTI counts nanoseconds since the epoch, so such a time
// (after the year 2116) cannot be real; and the wall-clock mapping and the filters work in int64,
// where times near 2^63 wrapped into huge negative wall times and relative times (found by
// cupmon_record_fuzz). 2^62 leaves room for any calibration offset and difference.
inline constexpr uint64_t kTimeLimit = uint64_t{1} << 62;
// A span the decoder can place in time: ValidSpan, and no time at or past kTimeLimit. Records
// without one are shown as unknown.
inline bool TimedSpan(uint64_t start, uint64_t end) { return ValidSpan(start, end) && end < kTimeLimit; }

}  // namespace cupmon::decoder

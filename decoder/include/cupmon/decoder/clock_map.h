// Maps CUPTI timestamps to wall-clock (CLOCK_REALTIME) nanoseconds through calibration samples.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "cupmon.pb.h"

namespace cupmon::decoder {

// Samples arrive as the stream is read. Between two samples the mapping is linear; outside them
// it uses the offset of the nearest sample. With no samples CUPTI's default clock on Linux is
// already CLOCK_REALTIME, so timestamps pass through unchanged (and calibrated() is false).
// A sample whose CUPTI time does not increase over the previous one is dropped and counted.
class ClockMap {
 public:
  void Add(const pb::CalibrationSample& s);
  void Add(const pb::Calibration& c) {
    for (const auto& s : c.samples()) Add(s);
  }
  int64_t ToWall(uint64_t cupti_ns) const;
  bool calibrated() const { return !samples_.empty(); }
  uint64_t samples() const { return samples_.size(); }
  uint64_t non_monotonic() const { return non_monotonic_; }

 private:
  struct Sample {
    uint64_t cupti;
    int64_t wall;
  };
  static constexpr size_t kMaxSamples = 1 << 16;  // bounded: at one a minute, weeks of samples
  std::vector<Sample> samples_;
  uint64_t non_monotonic_ = 0;
};

// True when a record's [start, end] can be shown as a duration: both set and end >= start.
inline bool ValidSpan(uint64_t start, uint64_t end) { return start != 0 && end != 0 && end >= start; }

}  // namespace cupmon::decoder

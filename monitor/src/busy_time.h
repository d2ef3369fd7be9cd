// BusyTime: GPU busy time per device and per (device, stream) from the always-on records, for the
// metrics endpoint: the union of kernel, memcpy, peer-copy and memset intervals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "cupmon/metrics/metrics_server.h"
#include "session_facts.h"

namespace cupmon {

// Writer thread only. Counted in arrival order: exact when a device's (or a stream's) records
// arrive in start order, which CUPTI's per-stream completion gives; an interval that arrives late
// and lies entirely before what is already covered is not counted. Bounded: one entry per device
// and stream the job uses.
class BusyTime {
 public:
  explicit BusyTime(const SessionFacts& facts) : facts_(facts) {}
  void Add(const uint8_t* buffer, size_t valid);
  std::vector<metrics::DeviceBusy> Devices() const;
  std::vector<metrics::StreamBusy> Streams() const;

 private:
  struct Span {
    uint64_t busy_ns = 0;
    uint64_t covered_until = 0;
  };
  const SessionFacts& facts_;
  std::map<uint32_t, Span> devices_;
  std::map<std::pair<uint32_t, uint32_t>, Span> streams_;
};

}  // namespace cupmon

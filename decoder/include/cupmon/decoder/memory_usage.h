// Device memory in use over time, from the decoder's memory rows (CUPTI MEMORY2 and MEMORY_POOL
// records): per device the running sum of allocations minus releases, its peak, and counts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cupmon/decoder/trace_builder.h"

namespace cupmon::decoder {

// Allocations of one CUPTI memory kind on one device.
struct MemoryKindStats {
  uint64_t allocations = 0, bytes = 0;
};

// One device's memory, counted only from what the recording holds: memory allocated before the
// recording began is unknown, so "in use" means "allocated since the recording began".
struct MemoryDeviceStats {
  uint64_t allocations = 0, releases = 0;
  // Releases of an address with no live allocation seen (allocated before the recording began,
  // or its record lost): counted, never subtracted.
  uint64_t unknown_releases = 0;
  // Allocations of an address still live (its release was never recorded): the earlier one is
  // taken as released.
  uint64_t replaced = 0;
  uint64_t alloc_bytes = 0, alloc_min = 0, alloc_max = 0;  // allocation sizes
  uint64_t in_use = 0;   // at the recording's end
  uint64_t peak = 0;     // the largest in_use reached
  uint64_t peak_ts = 0;  // CUPTI ns when the peak was first reached (0: no allocation)
  int64_t peak_wall = 0;  // the same moment on the wall clock, as that row had it (unix ns)
  std::map<uint32_t, MemoryKindStats> by_kind;  // by CUpti_ActivityMemoryKind
  // MEMORY_POOL records: pools created, destroyed and trimmed, and the largest size one had.
  uint64_t pools_created = 0, pools_destroyed = 0, pools_trimmed = 0, pool_max_size = 0;
};

// Bytes in use on `device` from `ts` (CUPTI ns) on, after one allocation or release.
struct MemoryStep {
  uint64_t ts = 0;
  uint32_t device = 0;
  uint64_t in_use = 0;
};

// Collects memory rows (in any order) and, at Finish, replays them in timestamp order (CUPTI
// delivers records per buffer, not in time order). Rows with unknown times cannot be placed:
// they are counted in untimed() and left out of every sum.
class MemoryUsage {
 public:
  void Add(const Row& row);
  void Finish();  // once, after the last Add

  bool empty() const { return events_.empty() && untimed_ == 0; }
  const std::map<uint32_t, MemoryDeviceStats>& devices() const { return devices_; }
  // Every change of a device's bytes in use, in time order (after Finish).
  const std::vector<MemoryStep>& steps() const { return steps_; }
  uint64_t untimed() const { return untimed_; }
  uint64_t unknown_operations() const { return unknown_ops_; }  // neither allocation nor release

 private:
  struct Event {
    uint64_t ts, address, bytes;
    uint32_t kind, device, op, memory_kind;
    int64_t wall;  // the row's wall_start
  };
  std::vector<Event> events_;
  std::map<uint32_t, MemoryDeviceStats> devices_;
  std::vector<MemoryStep> steps_;
  uint64_t untimed_ = 0, unknown_ops_ = 0;
};

// CUPTI's memory kind as nsys names it ("device", "pinned", "managed", ...), "kind N" otherwise.
std::string MemoryKindName(uint32_t memory_kind);
// "3145728 B (3.00 MiB)".
std::string FormatByteCount(uint64_t bytes);

}  // namespace cupmon::decoder

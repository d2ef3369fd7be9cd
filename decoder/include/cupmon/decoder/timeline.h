// Fixed-size wall-clock buckets of GPU activity per device: busy time as the union of activity
// intervals, kernel counts, memcpy bytes, device memory in use. `cupmon-decode timeline` writes them; other reports
// (an HTML view) can reuse TimelineBuilder on their own activities.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "cupmon/base/error.h"

namespace cupmon::decoder {

// kAllocation and kRelease are MEMORY2 records (instants: start == end): they take no busy time
// and move the device's bytes in use.
enum class TimelineActivityKind : uint8_t { kKernel, kMemcpy, kMemset, kAllocation, kRelease };
// Memcpy directions the timeline splits bytes by; kOther (arrays, host to host, unknown) is only
// in the total.
enum class CopyDirection : uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice, kOther };

// One GPU activity on the wall clock (unix ns, end >= start; a reversed interval counts as empty).
struct TimelineActivity {
  uint32_t device = 0;
  int64_t start = 0, end = 0;
  TimelineActivityKind kind = TimelineActivityKind::kKernel;
  uint64_t bytes = 0;  // memcpy: bytes copied (memset bytes are not counted); allocation: size
  CopyDirection direction = CopyDirection::kOther;
  uint64_t address = 0;  // allocation, release: the memory's address
};

// One device's share of one bucket [start, start + length).
struct TimelineBucket {
  int64_t start = 0;    // unix ns, a multiple of length
  uint64_t length = 0;  // ns
  uint32_t device = 0;
  uint64_t busy_ns = 0;         // union of kernel, memcpy and memset intervals, clipped to it
  uint64_t kernel_busy_ns = 0;  // union of kernel intervals alone
  // Counted in the bucket where they start (a copy spanning buckets puts its bytes in the first).
  uint64_t kernels = 0, memcpys = 0, memsets = 0;
  uint64_t memcpy_bytes = 0, h2d_bytes = 0, d2h_bytes = 0, d2d_bytes = 0;
  // Device memory allocated since the recording began (MEMORY2 records, as `summary` counts it):
  // bytes in use at the bucket's end, and the most in use at any instant inside the bucket
  // (at least memory_in_use, and at least what was in use when the bucket began).
  uint64_t memory_in_use = 0, memory_peak = 0;
  uint64_t allocations = 0, releases = 0;  // MEMORY2 records in the bucket
  bool empty() const { return busy_ns == 0 && kernels == 0 && memcpys == 0 && memsets == 0; }
};

struct TimelineOptions {
  uint64_t bucket_ns = 1'000'000'000;
  // The builder refuses to write more rows than this (a bucket too small for the time span):
  // TimelineCounts::too_many_rows is set and nothing more is emitted.
  uint64_t max_rows = 100'000'000;
  // Activities held to be swept in start order: the lowest start is taken once more than this
  // many are held (0: swept as they come). Wall-clock starts are not in order even
  // where CUPTI's are: a calibration sample read later moves the mapping of the records after it.
  size_t reorder_rows = 1 << 16;
};

struct TimelineCounts {
  uint64_t activities = 0;  // given to Add
  uint64_t rows = 0;        // buckets emitted (one per device per bucket)
  // Activities that started in a bucket already emitted: left out of the rows (their kernels,
  // bytes and busy time). They came later than reorder_rows activities starting after them.
  uint64_t late = 0;
  // Busy time of activities that started before the device's sweep position inside the current
  // bucket (out of start order beyond reorder_rows): the part before that position is not
  // counted, so busy time stays a lower bound and never counts an overlap twice.
  uint64_t late_busy_ns_missed = 0;
  // The same for the kernels' own union (kernel_busy_ns): a kernel before that sweep's position
  // (an earlier kernel's start, where other activities may already have covered the time). What
  // also lay before the first sweep's position is in late_busy_ns_missed too.
  uint64_t kernel_busy_ns_missed = 0;
  // Activities with a start or end beyond +-2^62 ns (a damaged calibration): left out.
  uint64_t out_of_range = 0;
  // Releases of an address with no live allocation seen (allocated before the recording began,
  // its record lost or late): counted, never subtracted. An allocation of an address still live
  // takes the earlier one as released (MemoryUsage does the same).
  uint64_t unknown_releases = 0;
  bool too_many_rows = false;
  int64_t too_many_rows_at = 0;  // bucket start (unix ns) where the limit would have been passed
};

// Turns activities, nearly in start order, into finished buckets, streaming: reorder_rows
// activities and the current bucket per device are held, whatever the time span. Buckets are
// aligned to bucket_ns in unix time. Every bucket from the first activity's to the one holding
// the last end is emitted, in time order, one row per device seen so far (ascending device id),
// empty ones included, so that a chart of the rows shows idle time as zeros. An activity spanning
// buckets adds its busy time to each. Allocations and releases are replayed in that same start
// order (equal starts keep the order they were added in while within reorder_rows), so a release
// subtracts what its address's allocation added, on that allocation's device.
// Single-threaded; `emit` is called from Add and Finish.
class TimelineBuilder {
 public:
  using EmitFn = std::function<void(const TimelineBucket&)>;
  TimelineBuilder(TimelineOptions options, EmitFn emit);

  // Activities may come out of start order by up to reorder_rows others (see TimelineCounts for
  // what happens to those that come later).
  void Add(const TimelineActivity& a);
  // Emits the buckets still open, up to the one holding the latest end. Call once, at the end.
  void Finish();
  const TimelineCounts& counts() const { return counts_; }

 private:
  // The union of intervals on one device, swept in start order. Busy time before `pos` (the open
  // interval's start, or the end of the last one closed) is already in a bucket.
  struct Sweep {
    bool open = false;
    int64_t s = 0, e = 0;
    int64_t done = INT64_MIN;
    // Adds [start, end) and returns the busy time of a closed interval to add to the bucket, or
    // counts in *missed what lay before the sweep position.
    uint64_t Insert(int64_t start, int64_t end, uint64_t* missed);
    // The open interval's part before `boundary` (then kept open from there, or closed).
    uint64_t Cut(int64_t boundary);
  };
  struct Device {
    TimelineBucket bucket;
    Sweep all, kernels;
    uint64_t in_use = 0;  // bytes allocated and not released, swept so far
  };
  struct Live {
    uint32_t device;
    uint64_t bytes;
  };
  // Adds `delta` to a device's bytes in use at the current bucket.
  void ChangeInUse(uint32_t device, int64_t delta);
  int64_t BucketIndex(int64_t t) const;
  // Emits bucket current_ and moves to the next; false once the row limit stops the builder.
  bool Advance();
  // Sweeps the held activity with the lowest start.
  void ReleaseFirst();
  // Sweeps one activity, in start order, into the current bucket.
  void SweepOne(const TimelineActivity& a);

  TimelineOptions options_;
  EmitFn emit_;
  TimelineCounts counts_;
  bool started_ = false, stopped_ = false;
  int64_t current_ = 0;  // index of the bucket being filled
  std::map<uint32_t, Device> devices_;
  std::unordered_map<uint64_t, Live> live_;  // allocations not yet released, by address
  // Held activities (see reorder_rows): those that extend the sorted run in a FIFO, the others in
  // a min-heap by start.
  std::deque<TimelineActivity> run_;
  std::vector<TimelineActivity> late_heap_;
};

// Parses a bucket size: a positive number with a unit (ns, us, ms, s, m, h), e.g. 100ms, 1s, 1.5m,
// 1h. At least 1 us, at most 366 days. The error names the text and what was expected.
Expected<uint64_t> ParseBucketSize(const std::string& text);

}  // namespace cupmon::decoder

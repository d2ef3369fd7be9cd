#include "timeline_regrid.h"

#include <algorithm>

namespace cupmon::decoder {

namespace {
// The start of the bucket of `size` that holds `t` (buckets aligned to size in unix time).
int64_t BucketStart(int64_t t, uint64_t size) {
  const auto b = static_cast<int64_t>(size);
  return (t >= 0 ? t / b : -((-t + b - 1) / b)) * b;
}
}  // namespace

TimelineRegrid::TimelineRegrid(const TimelineOptions& fine, const std::vector<uint64_t>& sizes)
    : fine_(fine, [this](const TimelineBucket& b) { OnFine(b); }) {
  for (uint64_t size : sizes)
    if (fine.bucket_ns && size && size % fine.bucket_ns == 0) candidates_.push_back({.size = size});
}

void TimelineRegrid::OnFine(const TimelineBucket& b) {
  for (Candidate& c : candidates_) {
    std::vector<TimelineBucket>& rows = c.buckets[b.device];
    const int64_t start = BucketStart(b.start, c.size);
    if (rows.empty() || rows.back().start != start) {
      TimelineBucket fresh;
      fresh.start = start;
      fresh.length = c.size;
      fresh.device = b.device;
      rows.push_back(fresh);
      ++c.rows;
    }
    TimelineBucket& r = rows.back();
    r.busy_ns += b.busy_ns;
    r.kernel_busy_ns += b.kernel_busy_ns;
    r.kernels += b.kernels;
    r.memcpys += b.memcpys;
    r.memsets += b.memsets;
    r.memcpy_bytes += b.memcpy_bytes;
    r.h2d_bytes += b.h2d_bytes;
    r.d2h_bytes += b.d2h_bytes;
    r.d2d_bytes += b.d2d_bytes;
    r.memory_in_use = b.memory_in_use;  // at the end of its last fine bucket so far
    r.memory_peak = std::max(r.memory_peak, b.memory_peak);
    r.allocations += b.allocations;
    r.releases += b.releases;
  }
}

void TimelineRegrid::Finish() { fine_.Finish(); }

std::optional<TimelineRegrid::Result> TimelineRegrid::Take(uint64_t size, uint64_t max_rows) {
  const TimelineCounts& fine = fine_.counts();
  if (!fine.activities) return Result{.counts = fine};  // nothing to draw, in any size
  if (fine.late || fine.late_busy_ns_missed || fine.kernel_busy_ns_missed || fine.too_many_rows)
    return std::nullopt;
  for (Candidate& c : candidates_) {
    if (c.size != size) continue;
    if (c.rows > max_rows) return std::nullopt;  // that builder would have stopped
    Result out;
    out.buckets = std::move(c.buckets);
    out.counts = fine;
    out.counts.rows = c.rows;
    return out;
  }
  return std::nullopt;
}

}  // namespace cupmon::decoder

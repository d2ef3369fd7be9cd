// What `report`'s page shows of one rank (RankPage), read by html_report_read.cc on the rank's
// reading thread and drawn by html_report.cc once every rank is read.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cupmon/decoder/commands.h"
#include "cupmon/decoder/memory_usage.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/row.h"
#include "cupmon/decoder/steps.h"
#include "cupmon/decoder/timeline.h"
#include "cupmon/decoder/trace_counts.h"
#include "duration_stat.h"
#include "job/rank_table.h"

namespace cupmon::decoder::html {

// Busy buckets per device at most (about one per pixel column of the chart).
constexpr uint64_t kMaxBuckets = 2000;

// The smallest 1, 2 or 5 times a power of ten, in ns and at least 1 us, that cuts `span` into at
// most kMaxBuckets buckets.
inline uint64_t BucketFor(uint64_t span) {
  const uint64_t want = std::max<uint64_t>(span / kMaxBuckets + 1, 1000);
  for (uint64_t p = 1000;; p *= 10)
    for (uint64_t m : {1, 2, 5})
      if (p * m >= want || p > UINT64_MAX / 100) return p * m;
}

// One name's count and durations, and the kind of row it is (kernel, memcpy, memset).
struct Stat : DurationStat {
  RowType type = RowType::kKernel;
  void Add(const Row& r) {
    type = r.type;
    DurationStat::Add(r);
  }
  void Merge(const Stat& o) {
    type = o.type;
    DurationStat::Merge(o);
  }
};

struct Busy {
  std::vector<TimelineBucket> buckets;
  uint64_t busy_ns = 0;
};

// One device's bytes in use on the wall clock: every change, and the summary's figures.
struct MemoryCurve {
  std::vector<std::pair<int64_t, uint64_t>> steps;  // (unix ns, bytes in use from then on)
  MemoryDeviceStats stats;
  int64_t peak_wall = 0;
};

struct WindowRow {
  uint32_t id = 0;
  int64_t begin_wall = 0;  // 0: begin marker missing
  std::optional<uint64_t> duration;
  std::string source, note;
  std::string why;  // TRIGGER_AUTO: the slow step that opened it (AutoTriggerText)
  uint64_t launched_before = 0;
};

// Everything the page shows of one rank; the recording itself is read and let go.
struct RankPage {
  const Rank* rank = nullptr;
  StepList steps;
  std::vector<uint64_t> medians;
  std::vector<size_t> slow;  // slowest excess first
  std::map<std::string, Stat> gpu;
  std::map<uint32_t, Busy> busy;           // by device
  std::map<uint32_t, MemoryCurve> memory;  // by device, those with MEMORY2 allocations
  uint64_t bucket_ns = 0;
  TimelineCounts timeline;
  std::vector<WindowRow> windows;
  std::vector<uint32_t> missing_windows;  // merged: ids other ranks have and this one lacks
  TraceCounts counts;
  ReadIntegrity integrity;
  bool calibrated = false;
  uint64_t samples = 0;
  uint64_t gpu_time = 0, kernels = 0;
  int64_t t0 = 0, t1 = 0;  // the x range of its charts (unix ns)
  // Its step table for the job section (JobSectionApplies), built as `job` builds it.
  std::optional<job::RankTable> job_table;
};

// Fills `page` for `rank`: its steps, the activity table, the busy chart, memory and windows, and
// with `job` its step table for the job section (`paths`: the user's arguments, for its
// identity). progress(pass, done): the rank's reads in turn (one, or two: ReadRank in
// html_report_read.cc says when).
void ReadRank(const Rank& rank, const HtmlReportOptions& options, RankPage* page,
              const std::function<void(int pass, uint64_t done)>& progress,
              const std::vector<std::string>& paths, bool job);

// The busy chart's bucket sizes a read tries before the steps say which one it needs, and the
// fine buckets they are summed from (html_report_read.cc says how they are chosen); no sizes when
// the rows must be read after the steps are found.
struct BucketPlan {
  uint64_t fine = 0;
  std::vector<uint64_t> sizes;
};
BucketPlan PlanBuckets(const Recording& recording);

}  // namespace cupmon::decoder::html

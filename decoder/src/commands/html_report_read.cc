// `report`'s read of one rank (html_report_page.h): one TraceBuilder pass feeds a StepFinder,
// the activity table, the busy chart (TimelineRegrid: every bucket size the steps may ask for) and
// the job section's spans; ReadRank says when a second read is needed.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "calibration_walk.h"
#include "commands/html_report_page.h"
#include "cupmon/decoder/quick_info.h"
#include "cupmon/decoder/trace_builder.h"
#include "cupmon/decoder/window_span.h"
#include "job/rank_reading.h"
#include "ranged_read.h"
#include "timeline_regrid.h"

namespace cupmon::decoder::html {
namespace {

// Collects GPU rows (as summary does: by the builder's name id) and feeds the timeline; memory
// rows go to MemoryUsage, replayed after the pass.
class PageSink : public RowSink {
 public:
  // `timeline` takes the timed GPU rows as activities; `spans` (may be null) takes the GPU rows
  // too, for the job section.
  PageSink(std::function<void(const TimelineActivity&)> timeline, MemoryUsage* memory,
           job::SpanCollector* spans)
      : timeline_(std::move(timeline)), memory_(memory), spans_(spans) {}
  bool WantsMemory() const override { return true; }
  void OnRow(const Row& r) override {
    if (r.type == RowType::kMemory) {
      memory_->Add(r);
      return;
    }
    if (r.type == RowType::kApi || r.type == RowType::kSynchronization) return;
    if (spans_) spans_->OnRow(r);
    if (r.name_id >= stats_.size()) stats_.resize(r.name_id + 1);
    stats_[r.name_id].Add(r);
    if (!r.valid_time) return;
    timeline_({.device = r.device,
               .start = r.wall_start,
               .end = r.wall_end,
               .kind = r.type == RowType::kKernel   ? TimelineActivityKind::kKernel
                       : r.type == RowType::kMemcpy ? TimelineActivityKind::kMemcpy
                                                    : TimelineActivityKind::kMemset,
               .bytes = r.type == RowType::kMemcpy ? r.bytes : 0});
  }
  // By display name (names outlive the builder).
  std::map<std::string, Stat> Named(const TraceBuilder& b) const {
    std::map<std::string, Stat> out;
    for (size_t id = 0; id < stats_.size(); ++id)
      if (stats_[id].calls) out[std::string(b.NameOf(static_cast<uint32_t>(id)))].Merge(stats_[id]);
    return out;
  }

 private:
  std::function<void(const TimelineActivity&)> timeline_;
  MemoryUsage* memory_;
  job::SpanCollector* spans_;
  std::vector<Stat> stats_;
};

// The page's span and bucket size, from its steps.
void SetSpan(const HtmlReportOptions& options, RankPage* page) {
  page->medians = RollingMedians(page->steps.steps, options.steps.rolling);
  page->slow = SlowSteps(page->steps.steps, page->medians, options.steps);
  page->t0 = page->steps.first_wall;
  page->t1 = std::max(page->steps.last_wall, page->t0 + 1);
  page->bucket_ns = BucketFor(static_cast<uint64_t>(page->t1 - page->t0));
}

// One read of a rank's rows into its page: the activity table, the busy chart, memory, windows
// and (with `job`) the job section's spans; its steps too when `finder` is given (then the
// page's bucket size is known only after the read). The busy chart comes from `regrid` when it
// has the size the steps asked for, else from a builder of page->bucket_ns (nullptr `regrid`:
// the size is known). False when `regrid` could not give that size's buckets exactly
// (TimelineRegrid::Take): the page is then incomplete and the rank is read again.
bool ReadRows(const Rank& rank, const HtmlReportOptions& options, RankPage* page,
              StepFinder* finder, TimelineRegrid* regrid,
              const std::function<void(uint64_t)>& progress, const std::vector<std::string>& paths,
              bool job) {
  // The steps' span bounds the buckets per device; this only stops a calibration that disagrees
  // wildly with the one the steps ended with (8 times the span on 16 devices, or the header's).
  const uint64_t devices = std::max(16, rank.recording.header.devices_size());
  TimelineOptions timeline_options;
  timeline_options.bucket_ns = page->bucket_ns;
  timeline_options.reorder_rows = options.reorder_rows;
  timeline_options.max_rows = 8 * (kMaxBuckets + 2) * devices;
  auto add_bucket = [page](const TimelineBucket& b) {
    Busy& busy = page->busy[b.device];
    busy.buckets.push_back(b);
    busy.busy_ns += b.busy_ns;
  };
  std::optional<TimelineBuilder> timeline;
  if (!regrid) timeline.emplace(timeline_options, add_bucket);
  MemoryUsage memory;
  std::optional<job::SpanCollector> spans;
  if (job) spans.emplace();
  PageSink sink([&](const TimelineActivity& a) { regrid ? regrid->Add(a) : timeline->Add(a); },
                &memory, spans ? &*spans : nullptr);
  TraceBuilder builder(options.read.filter, &sink, options.read.horizon, ReorderOptions{});
  if (finder) builder.AddConsumer(&finder->consumer());
  ReadRecording(rank.recording, builder, &page->integrity,
                [&](uint64_t done, uint64_t) { progress(done); });
  builder.Finish();
  if (finder) {
    page->steps = finder->Finish();
    SetSpan(options, page);
  }
  if (spans) {
    job::AddRank(rank, paths, page->steps, &spans->input);
    page->job_table = job::BuildRankTable(spans->input);
    spans.reset();  // the activity is dropped here, on the reading thread
  }
  if (regrid) {
    regrid->Finish();
    std::optional<TimelineRegrid::Result> chart =
        regrid->Take(page->bucket_ns, timeline_options.max_rows);
    if (!chart) return false;
    for (auto& [device, buckets] : chart->buckets) {
      Busy& busy = page->busy[device];
      for (const TimelineBucket& b : buckets) busy.busy_ns += b.busy_ns;
      busy.buckets = std::move(buckets);
    }
    page->timeline = chart->counts;
  } else {
    timeline->Finish();
    page->timeline = timeline->counts();
  }
  // Memory on the wall clock of the calibration the pass ended with; the chart's x range grows
  // to hold it (allocations usually come before the first kernel).
  memory.Finish();
  for (const auto& [device, stats] : memory.devices())
    if (stats.allocations) {
      MemoryCurve& m = page->memory[device];
      m.stats = stats;
      m.peak_wall = builder.clock().ToWall(stats.peak_ts);
    }
  bool have_range = page->steps.activities != 0;
  for (const MemoryStep& st : memory.steps()) {
    const int64_t t = builder.clock().ToWall(st.ts);
    page->memory[st.device].steps.emplace_back(t, st.in_use);
    if (!have_range) page->t0 = t, page->t1 = t + 1, have_range = true;
    page->t0 = std::min(page->t0, t);
    page->t1 = std::max(page->t1, t + 1);
  }
  page->gpu = sink.Named(builder);
  for (const auto& [name, s] : page->gpu) {
    page->gpu_time += s.total;
    if (s.type == RowType::kKernel) page->kernels += s.calls;
  }
  page->counts = builder.counts();
  page->calibrated = builder.clock().calibrated();
  page->samples = builder.clock().samples();
  for (const auto& [id, w] : builder.windows()) {
    WindowRow row;
    row.id = id;
    if (w.begin) row.begin_wall = builder.clock().ToWall(w.begin);
    if (w.begin && w.end >= w.begin && w.end) row.duration = w.end - w.begin;
    row.source = w.source;
    row.note = w.note;
    row.launched_before = w.launched_before;
    row.why = AutoTriggerText(w);
    page->windows.push_back(std::move(row));
  }
  return true;
}

}  // namespace

// The busy chart's bucket sizes a read tries before the steps say which one it needs, over fine
// buckets of the largest power of ten that divides them all. The records' span is guessed without
// reading them: the footers' chunk index gives the indexed files' (the records of every timed raw
// buffer, on the footers' calibration); a file without an index (cut by a crash, still being
// written, or older than the index) gives its calibration samples' times (WalkCalibration): its
// records follow its first sample, and end at most the longest time between two of its samples
// after its last one (the monitor writes one every stats period). The sizes are those of spans
// from half the shortest guess to twice the longest. None when a file without an index has fewer
// than two samples, when the fine buckets over twice the longest guess would be more than
// kMaxFineBuckets, or when CUPMON_READ_ALL=1 is set: the steps are then found in a read of their
// own, before the rows.
constexpr uint64_t kMaxFineBuckets = 2'000'000;

BucketPlan PlanBuckets(const Recording& recording) {
  if (ReadAllForced()) return {};
  const QuickRecording quick = ReadQuick(recording);
  // [first, last]: the records' wall-clock span as the indexes say, and up to last_max as the
  // samples of files without an index allow.
  int64_t first = quick.first_wall_ns, last = quick.last_wall_ns, last_max = last;
  bool whole_guess = true;  // every file's records are placed by its index
  for (const QuickFile& f : quick.files) {
    if (f.footer && f.indexed) continue;
    whole_guess = false;
    auto mapped = MappedFile::Open(f.path);
    if (!mapped) return {};
    const CalibrationTimes t = WalkCalibration(mapped->bytes());
    if (t.samples < 2) return {};
    first = first ? std::min(first, t.first_ns) : t.first_ns;
    last = std::max(last, t.last_ns);
    last_max = std::max(last_max, t.last_ns + t.longest_gap_ns);
  }
  if (last <= first) return {};
  const auto span = static_cast<uint64_t>(last - first);
  // Without an index the records may begin well after the first sample: down to half the span.
  const uint64_t shortest = whole_guess ? span : span / 2;
  const auto longest = static_cast<uint64_t>(last_max - first);
  BucketPlan plan;
  const uint64_t smallest = BucketFor(shortest / 2);
  const uint64_t largest = BucketFor(longest > UINT64_MAX / 2 ? UINT64_MAX : 2 * longest);
  plan.fine = 1;
  while (plan.fine <= smallest / 10) plan.fine *= 10;
  if (longest / plan.fine > kMaxFineBuckets / 2) return {};
  for (uint64_t size = smallest; size <= largest; size = BucketFor(size * kMaxBuckets)) {
    plan.sizes.push_back(size);
    if (size > UINT64_MAX / kMaxBuckets / 10) break;
  }
  return plan;
}

// One read finds the steps and takes the rows, with the busy chart in every bucket size the steps
// may ask for (PlanBuckets); a second read takes the rows again only when that chart could not be
// exact (TimelineRegrid) or no span could be guessed (PlanBuckets), and then the steps are found
// first, in a read of their own.
void ReadRank(const Rank& rank, const HtmlReportOptions& options, RankPage* page,
              const std::function<void(int pass, uint64_t done)>& progress,
              const std::vector<std::string>& paths, bool job) {
  page->rank = &rank;
  int pass = 0;
  const BucketPlan plan = PlanBuckets(rank.recording);
  if (!plan.sizes.empty()) {
    TimelineOptions fine;
    fine.bucket_ns = plan.fine;
    fine.reorder_rows = options.reorder_rows;
    // The fine builder stops where the largest candidate's would, or sooner (rows only).
    const uint64_t devices = std::max(16, rank.recording.header.devices_size());
    fine.max_rows = 8 * (kMaxBuckets + 2) * devices * (plan.sizes.back() / plan.fine);
    TimelineRegrid regrid(fine, plan.sizes);
    StepFinder finder(options.steps);
    if (ReadRows(
            rank, options, page, &finder, &regrid, [&](uint64_t done) { progress(pass, done); },
            paths, job))
      return;
    ++pass;
    RankPage again;
    again.rank = &rank;
    again.steps = std::move(page->steps);
    SetSpan(options, &again);
    *page = std::move(again);
  } else {
    page->steps = FindSteps(rank.recording, options.steps,
                            [&](uint64_t done, uint64_t) { progress(pass, done); });
    SetSpan(options, page);
    ++pass;
  }
  ReadRows(
      rank, options, page, nullptr, nullptr, [&](uint64_t done) { progress(pass, done); }, paths,
      job);
}

}  // namespace cupmon::decoder::html

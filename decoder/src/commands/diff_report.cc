// `cupmon-decode diff A B`: one TraceBuilder pass per recording of each side, which also finds its
// steps where the side takes them all (else a FindSteps pass first); per-name statistics in
// bounded memory (DurationHistogram), step times side by side, the verdict and the --fail-above
// gate.
#include "cupmon/decoder/commands.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "cupmon/decoder/diff.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/reports.h"
#include "cupmon/decoder/steps.h"
#include "cupmon/decoder/trace_builder.h"
#include "commands/rank_pass.h"
#include "commands/step_gpu_time.h"
#include "memory_room.h"
#include "ranged_read.h"
#include "report_text.h"
#include "text/csv.h"
#include "text/json.h"

namespace cupmon::decoder {

// ---- DurationHistogram ----------------------------------------------------------------------

namespace {
constexpr uint32_t kExactBelow = 128;  // 2^kMantissaBits
constexpr uint32_t kMantissaBits = 7;
}  // namespace

uint32_t DurationHistogram::BucketOf(uint64_t ns) {
  if (ns < kExactBelow) return static_cast<uint32_t>(ns);
  const uint32_t e = 63 - static_cast<uint32_t>(std::countl_zero(ns));  // >= kMantissaBits
  const uint32_t mantissa = static_cast<uint32_t>(ns >> (e - kMantissaBits)) & (kExactBelow - 1);
  return (e - kMantissaBits + 1) * kExactBelow + mantissa;
}

uint64_t DurationHistogram::BucketFloor(uint32_t b) {
  if (b < kExactBelow) return b;
  const uint32_t e = b / kExactBelow + kMantissaBits - 1;
  const uint64_t mantissa = b % kExactBelow;
  return (uint64_t{1} << e) | (mantissa << (e - kMantissaBits));
}

void DurationHistogram::Grow(uint32_t b) {
  if (counts_.empty()) {
    lo_ = b;
    counts_.assign(1, 0);
    return;
  }
  const uint32_t hi = lo_ + static_cast<uint32_t>(counts_.size());
  if (b >= hi) {
    counts_.resize(b - lo_ + 1, 0);
  } else if (b < lo_) {
    counts_.insert(counts_.begin(), lo_ - b, 0);
    lo_ = b;
  }
}

void DurationHistogram::Add(uint64_t ns) {
  const uint32_t b = BucketOf(ns);
  if (counts_.empty() || b < lo_ || b >= lo_ + counts_.size()) Grow(b);
  ++counts_[b - lo_];
  ++count_;
  min_ = std::min(min_, ns);
  max_ = std::max(max_, ns);
}

void DurationHistogram::Merge(const DurationHistogram& other) {
  if (!other.count_) return;
  Grow(other.lo_);
  Grow(other.lo_ + static_cast<uint32_t>(other.counts_.size()) - 1);
  for (size_t i = 0; i < other.counts_.size(); ++i)
    counts_[other.lo_ - lo_ + i] += other.counts_[i];
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

uint64_t DurationHistogram::Quantile(double q) const {
  if (!count_) return 0;
  const auto rank = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen < rank) continue;
    const auto b = static_cast<uint32_t>(lo_ + i);
    if (b < kExactBelow) return b;
    // The midpoint of [floor, next floor): within half a bucket, 2^-8 of the floor.
    const uint64_t floor = BucketFloor(b), width = BucketFloor(b + 1) - floor;
    return std::clamp(floor + width / 2, min_, max_);
  }
  return max_;
}

// ---- the report -------------------------------------------------------------------------------

namespace {

constexpr size_t kTypes = StepGpuTime::kTypes;
const char* const kTypeNames[kTypes] = {"kernel", "memcpy", "memset"};

struct NameStats {
  RowType type = RowType::kKernel;
  uint64_t calls = 0, total = 0, bytes = 0;
  DurationHistogram durations;
  void Merge(const NameStats& o) {
    type = o.type;
    calls += o.calls;
    total += o.total;
    bytes += o.bytes;
    durations.Merge(o.durations);
  }
  double mean() const {
    return calls ? static_cast<double>(total) / static_cast<double>(calls) : 0;
  }
};

// Collects one recording's GPU rows by name id, and their time in its steps (StepGpuTime).
class DiffSink : public RowSink {
 public:
  explicit DiffSink(StepGpuTime steps) : steps_(std::move(steps)) {}

  void OnRow(const Row& row) override {
    if (row.type != RowType::kKernel && row.type != RowType::kMemcpy &&
        row.type != RowType::kMemset)
      return;
    if (!row.valid_time) {
      return;  // no duration to count (the builder counts and warns about these)
    }
    if (row.name_id >= stats_.size()) stats_.resize(row.name_id + 1);
    NameStats& s = stats_[row.name_id];
    s.type = row.type;
    ++s.calls;
    s.total += row.duration;
    if (row.type == RowType::kMemcpy) s.bytes += row.bytes;
    s.durations.Add(row.duration);
    ++rows_;
    steps_.Add(row.start, row.duration, static_cast<size_t>(row.type));
  }
  bool NeedsWallTimes() const override { return false; }

  const std::vector<NameStats>& stats() const { return stats_; }
  StepGpuTime& steps() { return steps_; }
  const StepGpuTime& steps() const { return steps_; }
  uint64_t rows() const { return rows_; }

 private:
  StepGpuTime steps_;
  std::vector<NameStats> stats_;
  uint64_t rows_ = 0;
};

std::string Pad(const std::string& text, size_t width, bool left = false) {
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return left ? text + fill : fill + text;
}

std::string Duration(double ns) { return FormatDuration(ns); }
std::string Signed(double ns) {
  if (ns == 0) return "0ns";
  return (ns < 0 ? "-" : "+") + FormatDuration(std::fabs(ns));
}
std::string Percent(double pct) {
  if (std::isinf(pct)) return pct > 0 ? "+inf%" : "-inf%";
  return (pct >= 0 ? "+" : "") + Fixed(pct, 1) + "%";
}

// Nearest rank, as DurationHistogram::Quantile, over exact values.
uint64_t NearestRank(const std::vector<uint64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank =
      std::max<size_t>(1, static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size()))));
  return sorted[std::min(rank, sorted.size()) - 1];
}

// (b - a) / a in percent; +inf when only b is non-zero.
double Change(double a, double b) {
  if (a == 0) return b == 0 ? 0 : INFINITY;
  return (b - a) / a * 100;
}

struct Side {
  const char* name = "A";  // "A" or "B"
  std::string path;
  TraceFilter filter;
  std::optional<uint32_t> rank;
  std::string range;  // "window 2", "from 1.0000s to 2.0000s", "" for the whole recording
  std::vector<const Rank*> chosen;
  std::optional<RankListing> listing;
  // Results.
  std::map<std::string, NameStats> names;
  std::array<uint64_t, kTypes> total{};
  uint64_t rows = 0;
  uint64_t steps_found = 0;                 // in the whole recordings
  std::vector<uint64_t> step_durations;     // of the steps in the range, every rank's pooled
  std::array<uint64_t, kTypes> step_gpu{};  // GPU time of the rows in those steps
  bool warnings = false;
  std::string Label() const {
    return std::string(name) + ": " + path + (rank ? " rank " + std::to_string(*rank) : "") +
           (range.empty() ? "" : " (" + range + ")");
  }
};

std::string DescribeRange(const TraceFilter& f) {
  std::string out;
  if (f.window) out = "window " + std::to_string(*f.window);
  const auto point = [](const std::optional<int64_t>& rel, const std::optional<int64_t>& wall) {
    return rel ? "+" + FormatDuration(static_cast<double>(*rel)) : UtcTime(*wall);
  };
  if (f.from_rel || f.from_wall)
    out += (out.empty() ? "" : ", ") + std::string("from ") + point(f.from_rel, f.from_wall);
  if (f.to_rel || f.to_wall)
    out += (out.empty() ? "" : ", ") + std::string("to ") + point(f.to_rel, f.to_wall);
  return out;
}

// The common filter with one side's own selection over it.
TraceFilter SideFilter(const TraceFilter& common, const DiffSideRange& r) {
  TraceFilter f = common;
  if (r.window) f.window = r.window;
  if (r.from_rel || r.from_wall) f.from_rel = r.from_rel, f.from_wall = r.from_wall;
  if (r.to_rel || r.to_wall) f.to_rel = r.to_rel, f.to_wall = r.to_wall;
  return f;
}

// Lists one side's recordings and picks its ranks; false (after a message) when none is usable.
// The listing's messages lead with the side ("A: warning: ..."), its ranks' with the severity
// ("warning: A: ..."), as they always have: both are status lines of their own text here.
bool ListSide(Side& side, const DiffReportOptions& options, Diagnostics& diagnostics) {
  const std::string who = std::string(side.name) + ": ";
  auto listing = ListRanks({side.path}, RankListingOptions{options.read.recursive});
  if (!listing) {
    diagnostics.Error(who + listing.error().message);
    return false;
  }
  for (const auto& f : listing->ignored) diagnostics.Status(who + "ignored (not *.cupmon): " + f);
  for (const auto& f : listing->refused) diagnostics.Status(who + "refused: " + f);
  for (const auto& w : listing->warnings) diagnostics.Status(who + "warning: " + w);
  for (const auto& l : listing->left_out) diagnostics.Status(who + "left out: " + l);
  side.warnings = !listing->refused.empty() || !listing->warnings.empty();
  side.listing = std::move(*listing);
  for (const Rank& r : side.listing->ranks)
    if ((!options.read.pid || r.recording.header.pid() == *options.read.pid) &&
        (!side.rank || r.rank == *side.rank))
      side.chosen.push_back(&r);
  if (side.chosen.empty()) {
    diagnostics.Error(who + "no usable recording in " + side.path +
                      (options.read.pid ? " with pid " + std::to_string(*options.read.pid) : "") +
                      (side.rank ? " with rank " + std::to_string(*side.rank) : ""));
    return false;
  }
  return true;
}

// Whether step `s` lies wholly inside the side's range, as `builder` maps it.
bool StepInRange(const Step& s, const TraceFilter& f, const TraceBuilder& builder) {
  if (f.window) {
    auto w = builder.windows().find(*f.window);
    if (w == builder.windows().end() || s.start < w->second.begin) return false;
    if (w->second.end && s.end > w->second.end) return false;
  }
  if (f.from_wall && s.wall_start < *f.from_wall) return false;
  if (f.to_wall && s.wall_end > *f.to_wall) return false;
  const int64_t origin = builder.origin_wall();
  if (f.from_rel && s.wall_start - origin < *f.from_rel) return false;
  if (f.to_rel && s.wall_end - origin > *f.to_rel) return false;
  return true;
}

// Steps depend on the recording only, not on a side's filters: two parts of one recording share
// one FindSteps pass. Keyed by recording id and file paths (a directory may hold only some files).
using StepCache = std::map<std::string, StepList>;

std::string StepKey(const Recording& rec) {
  std::string key = std::to_string(rec.id);
  for (const auto& f : rec.files) key += "\n" + f.path;
  return key;
}

// One rank of one side, read: its steps (its own list, found in the same work, or one a cache
// holds), which of them the side's range keeps, and the pass over its rows with them.
struct SideRankRead {
  std::unique_ptr<StepList> own_steps;
  const StepList* steps = nullptr;
  std::vector<bool> in_range;          // one flag per step: StepInRange
  std::unique_ptr<StepFinder> finder;  // fed by `builder` (OneRead): it outlives the builder
  std::unique_ptr<DiffSink> sink;
  std::unique_ptr<TraceBuilder> builder;
  ReadIntegrity integrity;
};

// Whether a recording's rows and steps come from one read when its steps are not cached, unless
// CUPMON_READ_ALL=1 asks for the reads that find the steps first. The finder takes every record
// of the read (RecordConsumer), the side's time filters only its rows.
bool OneRead() { return !ReadAllForced(); }

std::vector<bool> StepsInRange(const StepList& steps, const TraceFilter& filter,
                               const TraceBuilder& builder) {
  std::vector<bool> in_range(steps.steps.size());
  for (size_t i = 0; i < steps.steps.size(); ++i)
    in_range[i] = StepInRange(steps.steps[i], filter, builder);
  return in_range;
}

// Reads `rank` for `side`: its rows, with its steps found in the same read (OneRead) or before
// it, unless `cached` holds them; a second read of the rows when the one read could not tell their
// time in the steps (StepGpuTime::Settle). progress(pass, done): the reads in turn.
std::unique_ptr<SideRankRead> ReadSideRank(const Side& side, const Rank& rank,
                                           const DiffReportOptions& options, const StepList* cached,
                                           const std::function<void(int, uint64_t)>& progress) {
  auto r = std::make_unique<SideRankRead>();
  int pass = 0;
  const auto read_rows = [&](StepGpuTime steps, StepFinder* finder) {
    r->integrity = ReadIntegrity{};
    r->sink = std::make_unique<DiffSink>(std::move(steps));
    r->builder = std::make_unique<TraceBuilder>(side.filter, r->sink.get(), options.read.horizon);
    if (finder) r->builder->AddConsumer(&finder->consumer());
    ReadRecording(rank.recording, *r->builder, &r->integrity,
                  [&](uint64_t done, uint64_t) { progress(pass, done); });
    r->builder->Finish();
    ++pass;
  };
  r->steps = cached;
  if (!cached && OneRead()) {
    r->finder = std::make_unique<StepFinder>(options.steps);
    read_rows(StepGpuTime::Deferred(), r->finder.get());
    r->own_steps = std::make_unique<StepList>(r->finder->Finish());
    r->steps = r->own_steps.get();
    r->in_range = StepsInRange(*r->steps, side.filter, *r->builder);
    if (r->sink->steps().Settle(r->steps->steps, r->in_range)) return r;
  } else if (!cached) {
    r->own_steps = std::make_unique<StepList>(FindSteps(
        rank.recording, options.steps, [&](uint64_t done, uint64_t) { progress(pass, done); }));
    r->steps = r->own_steps.get();
    ++pass;
  }
  read_rows(StepGpuTime::Placed(r->steps->steps), nullptr);
  r->in_range = StepsInRange(*r->steps, side.filter, *r->builder);
  return r;
}

// What a side's ranks leave for its final checks (FinishSide).
struct SideSeen {
  bool window_seen = false;
  std::set<uint32_t> windows;
};

// Adds one read rank to its side: its warnings, names, totals and steps.
void AddSideRank(Side& side, const Rank& rank, const SideRankRead& r, SideSeen& seen,
                 Diagnostics& diagnostics) {
  const bool merged = side.chosen.size() > 1;
  const std::string who = std::string(side.name) + ": " + (merged ? rank.label + ": " : "");
  const TraceBuilder& builder = *r.builder;
  const DiffSink& sink = *r.sink;
  const StepList& steps = *r.steps;
  const TraceCounts& c = builder.counts();
  RankMessageLog log(diagnostics, who);
  log.ReadProblems(r.integrity, &c);
  if (c.unknown_timestamps)
    log.Warning(std::to_string(c.unknown_timestamps) +
                " record(s) with zero or reversed timestamps are not counted");
  if (c.unresolved_names)
    log.Warning(std::to_string(c.unresolved_names) +
                " kernel record(s) whose name pointer has no string entry");
  if (c.stats.dropped_records())
    log.Warning("CUPTI dropped " + std::to_string(c.stats.dropped_records()) + " record(s)");
  side.warnings |= r.integrity.HasWarnings() || c.HasWarnings();
  for (const auto& [id, w] : builder.windows()) seen.windows.insert(id);
  if (side.filter.window && builder.windows().count(*side.filter.window)) seen.window_seen = true;

  for (size_t id = 0; id < sink.stats().size(); ++id) {
    const NameStats& s = sink.stats()[id];
    if (!s.calls) continue;
    side.names[std::string(builder.NameOf(static_cast<uint32_t>(id)))].Merge(s);
    side.total[static_cast<size_t>(s.type)] += s.total;
  }
  side.rows += sink.rows();
  side.steps_found += steps.steps.size();
  for (size_t i = 0; i < steps.steps.size(); ++i)
    if (r.in_range[i]) side.step_durations.push_back(steps.steps[i].duration());
  const StepGpuTime::Times gpu = sink.steps().In(r.in_range);
  for (size_t t = 0; t < kTypes; ++t) side.step_gpu[t] += gpu[t];
}

// A side's checks once all its ranks are added; false (after a message) when it is unusable.
bool FinishSide(Side& side, const SideSeen& seen, Diagnostics& diagnostics) {
  const std::string who = side.Label() + ": ";
  if (side.filter.window && !seen.window_seen) {
    std::string list;
    for (uint32_t id : seen.windows) list += (list.empty() ? "" : ", ") + std::to_string(id);
    diagnostics.Error(who + "there is no window " + std::to_string(*side.filter.window) +
                      " (windows: " + (list.empty() ? "none" : list) + ")");
    return false;
  }
  if (!side.rows) {
    const bool filtered = !DescribeRange(side.filter).empty() || side.filter.kernel ||
                          side.filter.device || side.filter.stream;
    diagnostics.Error(who + "no kernel, memcpy or memset in it" +
                      (filtered ? " (after the filters)" : ""));
    return false;
  }
  std::sort(side.step_durations.begin(), side.step_durations.end());
  return true;
}

struct NameRow {
  const std::string* name;
  const NameStats* a;  // nullptr: only in B
  const NameStats* b;  // nullptr: only in A
  int64_t delta;       // total B - total A
  RowType type() const { return a ? a->type : b->type; }
  const char* status() const { return !a ? "new" : !b ? "gone" : "both"; }
};

std::vector<NameRow> NameRows(const Side& a, const Side& b) {
  std::vector<NameRow> rows;
  for (const auto& [name, s] : a.names) {
    auto it = b.names.find(name);
    const NameStats* bs = it == b.names.end() ? nullptr : &it->second;
    rows.push_back(
        {&name, &s, bs, static_cast<int64_t>(bs ? bs->total : 0) - static_cast<int64_t>(s.total)});
  }
  for (const auto& [name, s] : b.names)
    if (!a.names.count(name)) rows.push_back({&name, nullptr, &s, static_cast<int64_t>(s.total)});
  std::stable_sort(rows.begin(), rows.end(), [](const NameRow& x, const NameRow& y) {
    const uint64_t dx =
        x.delta < 0 ? -static_cast<uint64_t>(x.delta) : static_cast<uint64_t>(x.delta);
    const uint64_t dy =
        y.delta < 0 ? -static_cast<uint64_t>(y.delta) : static_cast<uint64_t>(y.delta);
    if (dx != dy) return dx > dy;
    return *x.name < *y.name;
  });
  return rows;
}

// What --fail-above compares (docs/DECODER.md, "diff").
struct Verdict {
  bool per_step = false;   // GPU time per step; else GPU time per call at A's mix
  bool comparable = true;  // false: no step on both sides and no name in common
  double a = 0, b = 0;     // the compared quantities (ns)
  double change = 0;       // percent, B against A
  size_t common_names = 0;
  std::array<double, kTypes> by_type{};  // B - A by type: per step, or in total
  std::string text;
};

Verdict Judge(const Side& a, const Side& b) {
  Verdict v;
  const size_t sa = a.step_durations.size(), sb = b.step_durations.size();
  if (sa && sb) {
    v.per_step = true;
    for (size_t t = 0; t < kTypes; ++t) {
      const double pa = static_cast<double>(a.step_gpu[t]) / static_cast<double>(sa);
      const double pb = static_cast<double>(b.step_gpu[t]) / static_cast<double>(sb);
      v.a += pa, v.b += pb, v.by_type[t] = pb - pa;
    }
  } else {
    // A's calls at B's mean durations against A's own: a per-call speed that does not depend on
    // how much each side ran (two windows of different lengths compare).
    for (const auto& [name, s] : a.names) {
      auto it = b.names.find(name);
      if (it == b.names.end()) continue;
      ++v.common_names;
      v.a += static_cast<double>(s.total);
      v.b += static_cast<double>(s.calls) * it->second.mean();
    }
    for (size_t t = 0; t < kTypes; ++t)
      v.by_type[t] = static_cast<double>(b.total[t]) - static_cast<double>(a.total[t]);
    v.comparable = v.common_names > 0;
  }
  v.change = Change(v.a, v.b);
  if (!v.comparable) {
    v.text =
        "A and B have no kernel, memcpy or memset name in common and no steps on both sides: "
        "nothing to compare";
    return v;
  }
  const double rounded = std::round(v.change * 10) / 10;
  std::string head = rounded == 0   ? "B is as fast as A (" + Percent(v.change) + ")"
                     : v.change > 0 ? "B is " + Fixed(v.change, 1) + "% slower than A"
                                    : "B is " + Fixed(-v.change, 1) + "% faster than A";
  if (std::isinf(v.change)) head = "B has GPU time where A has none";
  const std::string by_type = "kernels " + Signed(v.by_type[0]) + ", memcpy " +
                              Signed(v.by_type[1]) + ", memset " + Signed(v.by_type[2]);
  const std::string what =
      v.per_step ? " in GPU time per step: " + Duration(v.a) + " -> " + Duration(v.b) + " (" +
                       by_type + " per step)"
                 : " in GPU time per call (A's calls of the " + std::to_string(v.common_names) +
                       " names on both sides at B's mean durations); in total " + by_type;
  std::string steps = "; steps: ";
  if (sa && sb)
    steps += "median " + Percent(Change(static_cast<double>(NearestRank(a.step_durations, 0.5)),
                                        static_cast<double>(NearestRank(b.step_durations, 0.5))));
  else if (!sa && !sb)
    steps += "none found";
  else
    steps += std::string("only on ") + (sa ? "A" : "B");
  v.text = head + what + steps;
  return v;
}

void PrintSides(std::ostream& out, const Side& a, const Side& b) {
  for (const Side* s : {&a, &b}) {
    uint64_t gpu = 0;
    for (uint64_t t : s->total) gpu += t;
    out << s->Label() << ": " << s->chosen.size() << " recording(s), " << s->rows
        << " GPU activities, GPU time " << Duration(static_cast<double>(gpu)) << ", "
        << s->step_durations.size() << " step(s) in range";
    if (s->steps_found != s->step_durations.size()) out << " (of " << s->steps_found << ")";
    out << "\n";
  }
}

void PrintTable(std::ostream& out, const std::vector<NameRow>& rows, uint64_t limit) {
  out << "\nGPU activities by the time B adds (+) or saves (-) against A; p50/p99 within "
      << Fixed(100 * DurationHistogram::kRelativeError, 1) << "%:\n";
  out << Pad("delta", 11) << " " << Pad("change", 8) << " " << Pad("calls A", 9) << " "
      << Pad("calls B", 9) << " " << Pad("total A", 10) << " " << Pad("total B", 10) << " "
      << Pad("mean A", 10) << " " << Pad("mean B", 10) << " " << Pad("p50 A", 10) << " "
      << Pad("p50 B", 10) << " " << Pad("p99 A", 10) << " " << Pad("p99 B", 10) << "  name\n";
  const auto cell = [](const NameStats* s, auto get) { return s ? get(*s) : std::string("-"); };
  const auto calls = [](const NameStats& s) { return std::to_string(s.calls); };
  const auto total = [](const NameStats& s) { return Duration(static_cast<double>(s.total)); };
  const auto mean = [](const NameStats& s) { return Duration(s.mean()); };
  const auto p50 = [](const NameStats& s) {
    return Duration(static_cast<double>(s.durations.Quantile(0.5)));
  };
  const auto p99 = [](const NameStats& s) {
    return Duration(static_cast<double>(s.durations.Quantile(0.99)));
  };
  size_t shown = 0;
  for (const NameRow& r : rows) {
    if (shown == limit) break;
    ++shown;
    const std::string change =
        !r.a   ? "new"
        : !r.b ? "gone"
               : Percent(Change(static_cast<double>(r.a->total), static_cast<double>(r.b->total)));
    out << Pad(Signed(static_cast<double>(r.delta)), 11) << " " << Pad(change, 8) << " "
        << Pad(cell(r.a, calls), 9) << " " << Pad(cell(r.b, calls), 9) << " "
        << Pad(cell(r.a, total), 10) << " " << Pad(cell(r.b, total), 10) << " "
        << Pad(cell(r.a, mean), 10) << " " << Pad(cell(r.b, mean), 10) << " "
        << Pad(cell(r.a, p50), 10) << " " << Pad(cell(r.b, p50), 10) << " "
        << Pad(cell(r.a, p99), 10) << " " << Pad(cell(r.b, p99), 10) << "  " << *r.name << "\n";
  }
  if (shown < rows.size())
    out << "... " << rows.size() - shown << " more name(s) (--limit N shows more)\n";
  size_t added = 0, removed = 0;
  for (const NameRow& r : rows) added += !r.a, removed += !r.b;
  out << "names: " << rows.size() - added - removed << " on both sides, " << added
      << " only in B (new), " << removed << " only in A (gone)\n";
}

void PrintSteps(std::ostream& out, const Side& a, const Side& b) {
  const auto& da = a.step_durations;
  const auto& db = b.step_durations;
  out << "\n";
  if (da.empty() && db.empty()) {
    out << "steps: none found in range on either side\n";
    return;
  }
  out << Pad("step time", 16, true) << " " << Pad("A", 12) << " " << Pad("B", 12) << " "
      << Pad("change", 9) << "\n";
  const auto line = [&](const char* what, double va, double vb, bool have_a, bool have_b,
                        bool count) {
    const auto show = [&](double v, bool have) {
      return !have   ? std::string("-")
             : count ? std::to_string(static_cast<uint64_t>(v))
                     : Duration(v);
    };
    out << Pad(what, 16, true) << " " << Pad(show(va, have_a), 12) << " "
        << Pad(show(vb, have_b), 12) << " "
        << Pad(have_a && have_b ? Percent(Change(va, vb)) : "-", 9) << "\n";
  };
  const bool ha = !da.empty(), hb = !db.empty();
  const auto q = [](const std::vector<uint64_t>& d, double p) {
    return static_cast<double>(NearestRank(d, p));
  };
  line("steps", static_cast<double>(da.size()), static_cast<double>(db.size()), true, true, true);
  line("median", q(da, 0.5), q(db, 0.5), ha, hb, false);
  line("p90", q(da, 0.9), q(db, 0.9), ha, hb, false);
  line("p99", q(da, 0.99), q(db, 0.99), ha, hb, false);
  line("max", ha ? static_cast<double>(da.back()) : 0, hb ? static_cast<double>(db.back()) : 0, ha,
       hb, false);
  const auto per_step = [](const Side& s) {
    uint64_t gpu = 0;
    for (uint64_t t : s.step_gpu) gpu += t;
    return s.step_durations.empty()
               ? 0.0
               : static_cast<double>(gpu) / static_cast<double>(s.step_durations.size());
  };
  line("GPU time/step", per_step(a), per_step(b), ha, hb, false);
}

std::string JsonStats(const NameStats* s) {
  if (!s) return "null";
  return "{\"calls\":" + std::to_string(s->calls) + ",\"total_ns\":" + std::to_string(s->total) +
         ",\"mean_ns\":" + Fixed(s->mean(), 1) +
         ",\"p50_ns\":" + std::to_string(s->durations.Quantile(0.5)) +
         ",\"p99_ns\":" + std::to_string(s->durations.Quantile(0.99)) +
         (s->type == RowType::kMemcpy ? ",\"bytes\":" + std::to_string(s->bytes) : "") + "}";
}

std::string JsonNumber(double v) { return std::isfinite(v) ? Fixed(v, 3) : "null"; }

std::string JsonSteps(const Side& s) {
  const auto& d = s.step_durations;
  if (d.empty()) return "null";
  uint64_t gpu = 0;
  for (uint64_t t : s.step_gpu) gpu += t;
  return "{\"count\":" + std::to_string(d.size()) +
         ",\"median_ns\":" + std::to_string(NearestRank(d, 0.5)) +
         ",\"p90_ns\":" + std::to_string(NearestRank(d, 0.9)) +
         ",\"p99_ns\":" + std::to_string(NearestRank(d, 0.99)) +
         ",\"max_ns\":" + std::to_string(d.back()) + ",\"gpu_ns_per_step\":" +
         Fixed(static_cast<double>(gpu) / static_cast<double>(d.size()), 1) + "}";
}

void PrintJsonl(std::ostream& out, const Side& a, const Side& b, const std::vector<NameRow>& rows,
                uint64_t limit, const Verdict& v, const DiffOptions& o, bool regression) {
  for (const Side* s : {&a, &b}) {
    uint64_t gpu = 0;
    for (uint64_t t : s->total) gpu += t;
    out << "{\"type\":\"side\",\"side\":\"" << s->name << "\",\"path\":\"" << JsonEscape(s->path)
        << "\",\"range\":\"" << JsonEscape(s->range) << "\",\"recordings\":" << s->chosen.size()
        << ",\"gpu_activities\":" << s->rows << ",\"gpu_ns\":" << gpu
        << ",\"kernel_ns\":" << s->total[0] << ",\"memcpy_ns\":" << s->total[1]
        << ",\"memset_ns\":" << s->total[2] << ",\"steps\":" << s->step_durations.size() << "}\n";
  }
  size_t shown = 0;
  for (const NameRow& r : rows) {
    if (shown++ == limit) break;
    const double change =
        r.a && r.b ? Change(static_cast<double>(r.a->total), static_cast<double>(r.b->total)) : NAN;
    out << "{\"type\":\"name\",\"kind\":\"" << kTypeNames[static_cast<size_t>(r.type())]
        << "\",\"name\":\"" << JsonEscape(*r.name) << "\",\"status\":\"" << r.status()
        << "\",\"delta_total_ns\":" << r.delta << ",\"change_pct\":" << JsonNumber(change)
        << ",\"a\":" << JsonStats(r.a) << ",\"b\":" << JsonStats(r.b) << "}\n";
  }
  out << "{\"type\":\"steps\",\"a\":" << JsonSteps(a) << ",\"b\":" << JsonSteps(b) << "}\n";
  out << "{\"type\":\"verdict\",\"metric\":\""
      << (!v.comparable ? "none"
          : v.per_step  ? "gpu_time_per_step"
                        : "gpu_time_per_call")
      << "\",\"a_ns\":" << JsonNumber(v.a) << ",\"b_ns\":" << JsonNumber(v.b)
      << ",\"change_pct\":" << (v.comparable ? JsonNumber(v.change) : "null")
      << ",\"fail_above_pct\":" << (o.fail_above ? JsonNumber(*o.fail_above) : "null")
      << ",\"regression\":" << (regression ? "true" : "false") << ",\"text\":\""
      << JsonEscape(v.text) << "\"}\n";
}

void PrintCsv(std::ostream& out, const std::vector<NameRow>& rows, uint64_t limit) {
  out << "kind,name,status,delta_total_ns,change_pct,calls_a,calls_b,total_ns_a,total_ns_b,"
         "mean_ns_a,mean_ns_b,p50_ns_a,p50_ns_b,p99_ns_a,p99_ns_b\n";
  size_t shown = 0;
  for (const NameRow& r : rows) {
    if (shown++ == limit) break;
    const auto field = [](const NameStats* s, auto get) { return s ? get(*s) : std::string(); };
    const auto calls = [](const NameStats& s) { return std::to_string(s.calls); };
    const auto total = [](const NameStats& s) { return std::to_string(s.total); };
    const auto mean = [](const NameStats& s) { return Fixed(s.mean(), 1); };
    const auto p50 = [](const NameStats& s) { return std::to_string(s.durations.Quantile(0.5)); };
    const auto p99 = [](const NameStats& s) { return std::to_string(s.durations.Quantile(0.99)); };
    const double change =
        r.a && r.b ? Change(static_cast<double>(r.a->total), static_cast<double>(r.b->total)) : NAN;
    out << kTypeNames[static_cast<size_t>(r.type())] << "," << CsvQuote(*r.name) << ","
        << r.status() << "," << r.delta << "," << (std::isfinite(change) ? Fixed(change, 3) : "")
        << "," << field(r.a, calls) << "," << field(r.b, calls) << "," << field(r.a, total) << ","
        << field(r.b, total) << "," << field(r.a, mean) << "," << field(r.b, mean) << ","
        << field(r.a, p50) << "," << field(r.b, p50) << "," << field(r.a, p99) << ","
        << field(r.b, p99) << "\n";
  }
}

bool Inverted(const TraceFilter& f) {
  return (f.from_rel && f.to_rel && *f.to_rel <= *f.from_rel) ||
         (f.from_wall && f.to_wall && *f.to_wall <= *f.from_wall);
}

}  // namespace

Outcome RunDiffCommand(const std::string& path_a, const std::string& path_b,
                       const DiffReportOptions& options, std::ostream& out,
                       Diagnostics& diagnostics) {
  const DiffOptions& o = options.diff;
  if (o.fail_above && !(*o.fail_above >= 0)) {
    diagnostics.Error("diff: --fail-above takes a percentage of 0 or more");
    return Outcome::kUsageError;
  }
  Side a, b;
  a.name = "A", b.name = "B";
  a.path = path_a, b.path = path_b;
  a.rank = o.a.rank, b.rank = o.b.rank;
  a.filter = SideFilter(options.read.filter, o.a);
  b.filter = SideFilter(options.read.filter, o.b);
  for (Side* s : {&a, &b}) {
    s->range = DescribeRange(s->filter);
    if (Inverted(s->filter)) {
      diagnostics.Error(std::string("diff: side ") + s->name + "'s range is empty (" + s->range +
                        "): its end is not after its start");
      return Outcome::kUsageError;
    }
  }
  if (!ListSide(a, options, diagnostics) || !ListSide(b, options, diagnostics))
    return Outcome::kFailed;
  // Each recording is read once, its steps found with its rows (OneRead), else twice: once for
  // its steps (once for both sides when they share it), once for its rows; the progress line
  // counts the reads a side plans. The ranks of both sides are read at once (RankJobs) unless the
  // sides share a recording, whose steps are then found once (`cache`), reading in turn. Added to
  // their sides in order either way.
  std::vector<const Rank*> reads;
  std::vector<Side*> side_of;
  std::set<std::string> keys;
  bool shared = false;
  for (Side* s : {&a, &b})
    for (const Rank* r : s->chosen) {
      reads.push_back(r);
      side_of.push_back(s);
      shared |= !keys.insert(StepKey(r->recording)).second;
    }
  RankPass pass(reads, OneRead() ? 1 : 2, diagnostics);
  const size_t jobs = shared ? 1 : RankJobs(reads.size(), options.read.jobs, DecodeThreads());
  StepCache cache;  // read on this thread only (jobs == 1)
  SideSeen seen;    // of the side being added
  bool usable = true;
  pass.Run(
      jobs,
      [&](size_t i, const PassProgress& progress) {
        const StepList* cached = nullptr;
        if (jobs == 1)
          if (auto it = cache.find(StepKey(reads[i]->recording)); it != cache.end())
            cached = &it->second;
        return ReadSideRank(*side_of[i], *reads[i], options, cached, progress);
      },
      [&](size_t i, std::unique_ptr<SideRankRead> r) {
        Side& side = *side_of[i];
        AddSideRank(side, *reads[i], *r, seen, diagnostics);
        // For the other side, when it reads this recording too.
        if (jobs == 1 && r->own_steps)
          cache.emplace(StepKey(reads[i]->recording), std::move(*r->own_steps));
        if (i + 1 < reads.size() && side_of[i + 1] == &side) return true;
        usable = FinishSide(side, seen, diagnostics);
        seen = SideSeen{};
        return usable;
      });
  if (!usable) return Outcome::kFailed;

  const std::vector<NameRow> rows = NameRows(a, b);
  const Verdict v = Judge(a, b);
  const bool regression = o.fail_above && v.comparable && v.change > *o.fail_above;
  const uint64_t all = UINT64_MAX;
  switch (o.format) {
    case DiffFormat::kTable:
      out << "==cupmon== diff (B against A)\n";
      PrintSides(out, a, b);
      PrintTable(out, rows, options.limit ? *options.limit : o.table_rows);
      PrintSteps(out, a, b);
      out << "\nverdict: " << v.text << "\n";
      if (o.fail_above && v.comparable)
        out << "gate: " << Percent(v.change) << (regression ? " > " : " <= ") << "--fail-above "
            << Fixed(*o.fail_above, 1) << "%: " << (regression ? "regression" : "pass") << "\n";
      break;
    case DiffFormat::kCsv:
      PrintCsv(out, rows, options.limit ? *options.limit : all);
      diagnostics.Status("verdict: " + v.text);
      break;
    case DiffFormat::kJsonl:
      PrintJsonl(out, a, b, rows, options.limit ? *options.limit : all, v, o, regression);
      break;
  }
  out.flush();
  if (o.fail_above && !v.comparable) {
    diagnostics.Error("diff: --fail-above cannot judge: " + v.text);
    return Outcome::kFailed;
  }
  if (regression) {
    diagnostics.Status("regression: " + v.text + "; " + Percent(v.change) +
                       " is above --fail-above " + Fixed(*o.fail_above, 1) + "%");
    return Outcome::kRegression;
  }
  return a.warnings || b.warnings ? Outcome::kWarnings : Outcome::kClean;
}

}  // namespace cupmon::decoder

// MergeJob in passes over the tables, each reading one rank at a time: the headers; the
// collective sequences (aligned to each stream's reference, the shortest duration per instance);
// the reference's rows (the job's steps); every rank's rows (placement, its medians, the job's
// step times); then the rows again a block of job steps at a time, across the ranks, for the
// verdicts and the sink.
#include "job/job_merge.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>

#include "cupmon/base/check.h"
#include "cupmon/decoder/steps.h"

namespace cupmon::decoder::job {
namespace {

constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
// A stream with fewer collectives than this on either side is matched by the wall clock alone.
constexpr int64_t kMinGapInstances = 4;

uint64_t Sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

uint64_t Median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

std::vector<uint64_t> Rolling(const std::vector<uint64_t>& values, uint32_t window) {
  std::vector<Step> steps(values.size());
  for (size_t i = 0; i < values.size(); ++i) steps[i].end = values[i];
  return RollingMedians(steps, window);
}

// The median of `sorted` without one occurrence of x (x in sorted): Median() of the others.
uint64_t MedianWithout(const std::vector<uint64_t>& sorted, uint64_t x) {
  const size_t k = (sorted.size() - 1) / 2;
  const auto a = static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), x) -
                                     sorted.begin());
  return k < a ? sorted[k] : sorted[k + 1];
}

struct Sequence {
  std::vector<uint64_t> end;
  std::vector<int64_t> wall_end;
  std::vector<uint32_t> name;  // global name ids: equal ids, equal names
};

Sequence SequenceOf(const std::vector<Instance>& seq, const std::vector<uint32_t>& gid) {
  Sequence s;
  for (const Instance& i : seq) {
    s.end.push_back(i.end);
    s.wall_end.push_back(i.wall_end);
    s.name.push_back(gid[i.name]);
  }
  return s;
}

struct Alignment {
  int64_t offset = 0;       // other's instance i is the reference's i + offset
  int64_t wall_offset = 0;  // what the wall clock alone says
  uint64_t matched = 0, mismatches = 0;
  int64_t clock_offset_ns = 0;
};

// Aligns `other` to `ref`: of the offsets the wall clocks allow (within max_error of each other),
// the one whose pairs' end-to-end gaps agree best, if they agree clearly better (kGapsDecide) than
// at the wall clock's own choice; else the wall clock's. Steps as regular as a clock, with ends
// spread across the ranks by more than the steps' jitter, make every offset's gaps agree about as
// well: there the gaps tell nothing and the wall clock decides. Pairs must have equal names.
// Offsets that overlap less than half the shorter sequence are tried only when no other is
// possible. `same_clock`: both ranks ran on one host, so their wall clocks are one clock and
// decide alone; processes time-sliced on one GPU end one instance at times that lag by the
// phase of the time slice, which can make a shifted sequence's gaps agree better than the
// true one's.
Alignment Align(const Sequence& ref, const Sequence& other, uint64_t max_error, bool same_clock) {
  Alignment a;
  const auto n = static_cast<int64_t>(ref.end.size()), m = static_cast<int64_t>(other.end.size());
  if (n == 0 || m == 0) return a;
  // The wall clock's guess: the reference instance whose end is nearest other's first end.
  {
    const int64_t w = other.wall_end[0];
    int64_t best = 0;
    for (int64_t j = 0; j < n; ++j)
      if (std::llabs(ref.wall_end[j] - w) < std::llabs(ref.wall_end[best] - w)) best = j;
    // other's first instance before the reference's first: other's instance nearest ref's first.
    if (best == 0 && w < ref.wall_end[0]) {
      int64_t k = 0;
      for (int64_t i = 0; i < m; ++i)
        if (std::llabs(other.wall_end[i] - ref.wall_end[0]) <
            std::llabs(other.wall_end[k] - ref.wall_end[0]))
          k = i;
      best = -k;
    }
    a.wall_offset = best;
  }
  const int64_t shorter = std::min(n, m);
  // The pairs of offset d: how many, how many with another name, the clocks' median offset.
  auto settle = [&](int64_t d) {
    a.offset = d;
    const int64_t lo = std::max<int64_t>(0, -d), hi = std::min(m, n - d);
    std::vector<int64_t> diffs;
    for (int64_t i = lo; i < hi; ++i) {
      ++a.matched;
      if (other.name[i] != ref.name[i + d]) ++a.mismatches;
      diffs.push_back(other.wall_end[i] - ref.wall_end[i + d]);
    }
    if (!diffs.empty()) {
      auto mid = diffs.begin() + static_cast<ptrdiff_t>(diffs.size() / 2);
      std::nth_element(diffs.begin(), mid, diffs.end());
      a.clock_offset_ns = *mid;
    }
    return a;
  };
  // One clock, or too few instances for their gaps to tell offsets apart: the wall clock decides.
  if (same_clock || shorter < kMinGapInstances) return settle(a.wall_offset);
  double best_score = std::numeric_limits<double>::infinity();
  int64_t best_d = a.wall_offset;
  bool best_full = false;
  double wall_score = std::numeric_limits<double>::infinity();
  bool wall_full = false;
  constexpr int64_t kMaxPairs = 4096;
  for (int64_t d = -(m - 1); d <= n - 1; ++d) {
    const int64_t lo = std::max<int64_t>(0, -d), hi = std::min(m, n - d);  // other's [lo, hi)
    if (hi <= lo) continue;
    if (static_cast<uint64_t>(std::llabs(other.wall_end[lo] - ref.wall_end[lo + d])) > max_error &&
        d != a.wall_offset)
      continue;
    const bool full = 2 * (hi - lo) >= shorter;
    if (best_full && !full) continue;
    double sum = 0;
    int64_t pairs = 0, mismatches = 0;
    for (int64_t i = lo; i < hi && i - lo < kMaxPairs; ++i) {
      if (other.name[i] != ref.name[i + d]) ++mismatches;
      if (i + 1 < hi) {
        const auto go = static_cast<double>(other.end[i + 1]) - static_cast<double>(other.end[i]);
        const auto gr =
            static_cast<double>(ref.end[i + d + 1]) - static_cast<double>(ref.end[i + d]);
        sum += std::fabs(go - gr);
        ++pairs;
      }
    }
    // A name that differs outweighs any gap: NCCL launches the same collectives in the same order.
    const double score = (pairs ? sum / static_cast<double>(pairs) : 0) +
                         1e15 * static_cast<double>(mismatches) / static_cast<double>(hi - lo);
    const bool better =
        (full && !best_full) || score < best_score ||
        (score == best_score && std::llabs(d - a.wall_offset) < std::llabs(best_d - a.wall_offset));
    if (d == a.wall_offset) wall_score = score, wall_full = full;
    if (better) best_score = score, best_d = d, best_full = full;
  }
  // The gaps overrule the wall clock only when they agree at most half as well there.
  constexpr double kGapsDecide = 0.5;
  if (best_d != a.wall_offset && wall_full == best_full && wall_score < 1e15 &&
      !(best_score < kGapsDecide * wall_score))
    best_d = a.wall_offset;
  return settle(best_d);
}

// The shortest duration of each instance of one stream over the ranks, by global index.
class Shortest {
 public:
  void Fold(int64_t global, uint64_t d) {
    if (v_.empty()) base_ = global;
    if (global < base_) {
      v_.insert(v_.begin(), static_cast<size_t>(base_ - global), kUnset);
      base_ = global;
    }
    const auto i = static_cast<size_t>(global - base_);
    if (i >= v_.size()) v_.resize(i + 1, kUnset);
    v_[i] = std::min(v_[i], d);
  }
  uint64_t At(int64_t global) const {
    CUPMON_CHECK(global >= base_ && static_cast<size_t>(global - base_) < v_.size());
    const uint64_t d = v_[static_cast<size_t>(global - base_)];
    CUPMON_CHECK(d != kUnset);
    return d;
  }

 private:
  static constexpr uint64_t kUnset = std::numeric_limits<uint64_t>::max();
  int64_t base_ = 0;
  std::vector<uint64_t> v_;
};

// A rank's values over the last `window` job steps, for its own rolling median (RollingMedians'
// rule: the first five steps take the median over all steps).
class OwnRolling {
 public:
  OwnRolling(uint32_t window, uint64_t global) : w_(std::max<uint32_t>(window, 1)), global_(global) {}
  void Push(uint64_t v) {
    if (ring_.size() < w_) {
      ring_.push_back(v);
    } else {
      ring_[next_] = v;
      next_ = (next_ + 1) % w_;
    }
    ++count_;
  }
  // The median for the step after the pushed ones.
  uint64_t Median() const {
    if (count_ < 5) return global_;
    return job::Median(ring_);
  }

 private:
  size_t w_;
  uint64_t global_;
  std::vector<uint64_t> ring_;
  size_t next_ = 0;
  uint64_t count_ = 0;
};

// Where each rank's rows land among the job steps: the reference's rows with a main collective
// are the job steps; another rank's row joins the job step whose first main collective is the
// last at or before its own, unless a row of the rank is there already.
class Placement {
 public:
  Placement(const std::vector<int64_t>* keys, bool reference)
      : keys_(keys), reference_(reference) {}
  static constexpr int64_t kUnplaced = -1;
  // The job step `key` goes to (kUnplaced: none); Commit() once the row is taken.
  int64_t Where(int64_t key) const {
    if (key == kNone) return kUnplaced;
    if (reference_) return static_cast<int64_t>(next_ref_);
    auto it = std::upper_bound(keys_->begin(), keys_->end(), key);
    if (it == keys_->begin()) return kUnplaced;
    const int64_t j = it - keys_->begin() - 1;
    return j == last_ ? kUnplaced : j;
  }
  void Commit(int64_t key, int64_t j) {
    if (key != kNone && reference_) ++next_ref_;
    if (j != kUnplaced) last_ = j;
  }

 private:
  const std::vector<int64_t>* keys_;
  bool reference_;
  size_t next_ref_ = 0;
  int64_t last_ = kUnplaced;
};

struct Merger {
  Merger(const TableSource& tables, const JobOptions& o) : src(tables), options(o), n(tables.size()) {}
  const TableSource& src;
  const JobOptions& options;
  size_t n = 0;
  JobAnalysis out;
  std::vector<std::vector<uint32_t>> gid;  // per rank: its name index -> global id
  std::vector<std::string> names;          // by global id
  // Per rank, per local stream: its group (index into out.streams), -1 none.
  std::vector<std::vector<int32_t>> group_of;
  std::vector<int32_t> main_local;  // per rank: its local stream of the main group, -1 none
  std::vector<Shortest> shortest;   // by group
  // The job steps: key (global index of the reference's first main collective), the reference's
  // wall start and end, its shortest collective time, whether in the range.
  std::vector<int64_t> keys;
  std::vector<int64_t> ref_wall_start, ref_wall_end;
  std::vector<uint64_t> shortest_collective;
  std::vector<int64_t> kept_pos;  // per job step: its position among the kept ones, -1: out
  std::vector<size_t> kept;       // kept job steps
  std::vector<uint64_t> step_ns;  // per kept step
  std::vector<uint64_t> own_work_global, own_gap_global;  // per rank

  int64_t KeyOf(size_t r, const TableRow& row) const {
    if (main_local[r] < 0) return kNone;
    for (const StepCollectives& c : row.streams)
      if (c.stream == static_cast<uint32_t>(main_local[r]))
        return out.streams[0].offset[r] + static_cast<int64_t>(c.first);
    return kNone;
  }

  RankStep FiguresOf(size_t r, const TableRow& row) const {
    RankStep f;
    f.present = true;
    f.number = row.number;
    f.step_ns = row.end - row.since;
    f.wall_start = row.wall_start;
    f.wall_end = row.wall_end;
    f.work_alone_ns = row.work_alone_ns;
    f.collective_alone_ns = row.collective_alone_ns;
    f.both_ns = row.both_ns;
    f.idle_ns = row.idle_ns;
    f.host_gap_ns = row.host_gap_ns;
    f.collectives = row.collectives;
    for (const StepCollectives& c : row.streams) {
      const auto g = static_cast<size_t>(group_of[r][c.stream]);
      const int64_t first = out.streams[g].offset[r] + static_cast<int64_t>(c.first);
      for (size_t i = 0; i < c.durations.size(); ++i)
        f.wait_ns += Sub(c.durations[i], shortest[g].At(first + static_cast<int64_t>(i)));
    }
    return f;
  }

  Expected<void> Headers();
  Expected<void> Streams();
  Expected<void> JobSteps();
  Expected<void> RankPass();
  Expected<void> Blocks(JobStepSink* sink);
  void Verdict(size_t k, JobStep& js, const std::vector<std::vector<NameTime>>& work,
               std::vector<OwnRolling>& own_work, std::vector<OwnRolling>& own_gap,
               const std::vector<uint64_t>& coll_medians);
  void Hang();

  std::vector<uint64_t> medians;  // rolling medians of step_ns, per kept step
  std::vector<uint64_t> coll_medians;
  std::vector<size_t> slow_kept;  // kept positions of the slow steps, largest excess first
};

Expected<void> Merger::Headers() {
  std::unordered_map<std::string_view, uint32_t> ids;
  names.reserve(64);
  gid.resize(n);
  for (size_t r = 0; r < n; ++r) {
    const RankTableHeader& h = src.header(r);
    out.who.push_back(h.who);
    for (const std::string& name : h.names) {
      auto it = ids.find(name);
      if (it == ids.end()) {
        names.push_back(name);
        it = ids.emplace(std::string_view(name), static_cast<uint32_t>(names.size() - 1)).first;
      }
      gid[r].push_back(it->second);
    }
    RankSummary& sum = out.ranks[r];
    sum.completed_collectives = h.completed_collectives;
    sum.last_kernel = h.last_kernel;
    sum.last_kernel_wall_end = h.last_kernel_wall_end;
    for (const TableUnfinished& u : h.unfinished) {
      sum.unfinished.push_back(h.names[u.name]);
      sum.unfinished_collectives += u.collective;
    }
  }
  return {};
}

Expected<void> Merger::Streams() {
  // Groups in key order, as the streams were matched before they are sorted by size.
  std::map<std::string, std::vector<int32_t>> groups;  // key -> per rank local stream, -1 none
  for (size_t r = 0; r < n; ++r) {
    const auto& streams = src.header(r).streams;
    for (size_t s = 0; s < streams.size(); ++s) {
      auto& g = groups[streams[s].key];
      g.resize(n, -1);
      g[r] = static_cast<int32_t>(s);
    }
  }
  std::vector<StreamMatch> matches;
  std::vector<std::vector<int32_t>> local;
  for (auto& [key, streams] : groups) {
    StreamMatch m;
    m.op = key;
    m.stream.resize(n);
    m.offset.assign(n, 0);
    m.instances.assign(n, 0);
    m.matched.assign(n, 0);
    m.clock_offset_ns.assign(n, 0);
    m.wall_offset.assign(n, 0);
    m.name_mismatches.assign(n, 0);
    for (size_t r = 0; r < n; ++r) {
      if (streams[r] < 0) continue;
      const TableStream& ts = src.header(r).streams[static_cast<size_t>(streams[r])];
      m.stream[r] = ts.stream;
      m.instances[r] = ts.instances;
    }
    m.reference = static_cast<uint32_t>(std::max_element(m.instances.begin(), m.instances.end()) -
                                        m.instances.begin());
    matches.push_back(std::move(m));
    local.push_back(streams);
  }
  // The main stream: the most instances at its reference (the first in key order on a tie).
  std::vector<size_t> order(matches.size());
  for (size_t g = 0; g < order.size(); ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return matches[a].instances[matches[a].reference] > matches[b].instances[matches[b].reference];
  });
  group_of.resize(n);
  for (size_t r = 0; r < n; ++r) group_of[r].assign(src.header(r).streams.size(), -1);
  for (size_t g = 0; g < order.size(); ++g) {
    out.streams.push_back(std::move(matches[order[g]]));
    for (size_t r = 0; r < n; ++r)
      if (local[order[g]][r] >= 0)
        group_of[r][static_cast<size_t>(local[order[g]][r])] = static_cast<int32_t>(g);
  }
  main_local.assign(n, -1);
  if (!out.streams.empty())
    for (size_t r = 0; r < n; ++r)
      for (size_t s = 0; s < group_of[r].size(); ++s)
        if (group_of[r][s] == 0) main_local[r] = static_cast<int32_t>(s);

  // Each group's reference sequence, then every rank aligned to it, one rank at a time.
  const size_t groups_n = out.streams.size();
  std::vector<Sequence> refs(groups_n);
  shortest.resize(groups_n);
  {
    std::map<uint32_t, std::vector<size_t>> by_ref;
    for (size_t g = 0; g < groups_n; ++g) by_ref[out.streams[g].reference].push_back(g);
    for (const auto& [r, gs] : by_ref) {
      auto seq = src.Sequences(r);
      if (!seq) return unexpected(seq.error());
      for (size_t s = 0; s < seq->size(); ++s) {
        const int32_t g = group_of[r][s];
        if (g >= 0 && out.streams[static_cast<size_t>(g)].reference == r)
          refs[static_cast<size_t>(g)] = SequenceOf((*seq)[s], gid[r]);
      }
    }
  }
  for (size_t r = 0; r < n; ++r) {
    if (group_of[r].empty()) continue;
    auto seq = src.Sequences(r);
    if (!seq) return unexpected(seq.error());
    for (size_t s = 0; s < seq->size(); ++s) {
      const auto g = static_cast<size_t>(group_of[r][s]);
      StreamMatch& m = out.streams[g];
      if (r == m.reference) {
        m.matched[r] = m.instances[r];
      } else {
        const std::string& host = out.who[r].host;
        const Alignment a = Align(refs[g], SequenceOf((*seq)[s], gid[r]),
                                  options.max_clock_error_ns,
                                  !host.empty() && host == out.who[m.reference].host);
        m.offset[r] = a.offset;
        m.wall_offset[r] = a.wall_offset;
        m.matched[r] = a.matched;
        m.name_mismatches[r] = a.mismatches;
        m.clock_offset_ns[r] = a.clock_offset_ns;
      }
      const auto& instances = (*seq)[s];
      for (size_t i = 0; i < instances.size(); ++i)
        shortest[g].Fold(m.offset[r] + static_cast<int64_t>(i),
                         instances[i].end - instances[i].start);
    }
  }
  for (const StreamMatch& m : out.streams)
    for (size_t r = 0; r < n; ++r) {
      if (!m.stream[r]) continue;
      const std::string& label = out.who[r].label;
      if (r != m.reference && m.instances[r] && m.matched[r] < m.instances[r])
        out.problems.push_back(label + ": " + std::to_string(m.instances[r] - m.matched[r]) +
                               " of " + std::to_string(m.instances[r]) + " " + m.op +
                               " instance(s) outside " + out.who[m.reference].label +
                               "'s history: not matched");
      if (m.name_mismatches[r])
        out.problems.push_back(label + ": " + std::to_string(m.name_mismatches[r]) + " matched " +
                               m.op + " instance(s) carry another name than on " +
                               out.who[m.reference].label +
                               " (records lost in the middle of a history shift the sequence)");
    }
  return {};
}

Expected<void> Merger::JobSteps() {
  const size_t ref = out.reference;
  uint64_t pos = 0;
  auto ok = src.Rows(ref, &pos, [&](const TableRow& row) {
    const int64_t key = KeyOf(ref, row);
    if (key == kNone) {
      ++out.unplaced_steps[ref];
      return true;
    }
    keys.push_back(key);
    ref_wall_start.push_back(row.wall_start);
    ref_wall_end.push_back(row.wall_end);
    uint64_t sc = 0;
    for (const StepCollectives& c : row.streams) {
      const auto g = static_cast<size_t>(group_of[ref][c.stream]);
      const int64_t first = out.streams[g].offset[ref] + static_cast<int64_t>(c.first);
      for (size_t i = 0; i < c.durations.size(); ++i)
        sc += shortest[g].At(first + static_cast<int64_t>(i));
    }
    shortest_collective.push_back(sc);
    return true;
  });
  if (!ok) return ok;
  // The range asked for, on the reference's step starts.
  kept_pos.assign(keys.size(), -1);
  for (size_t j = 0; j < keys.size(); ++j) {
    const int64_t w = ref_wall_start[j];
    if ((options.from_wall && w < *options.from_wall) || (options.to_wall && w >= *options.to_wall))
      continue;
    kept_pos[j] = static_cast<int64_t>(kept.size());
    kept.push_back(j);
  }
  step_ns.assign(kept.size(), 0);
  out.step_count = kept.size();
  if (!kept.empty()) {
    out.first_wall_start = ref_wall_start[kept.front()];
    out.last_wall_end = ref_wall_end[kept.back()];
  }
  return {};
}

Expected<void> Merger::RankPass() {
  own_work_global.resize(n);
  own_gap_global.resize(n);
  for (size_t r = 0; r < n; ++r) {
    Placement place(&keys, r == out.reference);
    std::vector<uint64_t> work(kept.size(), 0), gap(kept.size(), 0);
    std::vector<uint64_t> p_step, p_work, p_coll, p_wait, p_gap;
    uint64_t pos = 0;
    auto ok = src.Rows(r, &pos, [&](const TableRow& row) {
      const int64_t key = KeyOf(r, row);
      const int64_t j = place.Where(key);
      place.Commit(key, j);
      if (j == Placement::kUnplaced) {
        if (r != out.reference || key != kNone) ++out.unplaced_steps[r];
        return true;
      }
      const int64_t k = kept_pos[static_cast<size_t>(j)];
      if (k < 0) return true;
      const RankStep f = FiguresOf(r, row);
      const auto kk = static_cast<size_t>(k);
      step_ns[kk] = std::max(step_ns[kk], f.step_ns);
      work[kk] = f.work_ns();
      gap[kk] = f.host_gap_ns;
      p_step.push_back(f.step_ns), p_work.push_back(f.work_ns());
      p_coll.push_back(f.collective_ns()), p_wait.push_back(f.wait_ns);
      p_gap.push_back(f.host_gap_ns);
      return true;
    });
    if (!ok) return ok;
    own_work_global[r] = Median(std::move(work));
    own_gap_global[r] = Median(std::move(gap));
    RankSummary& s = out.ranks[r];
    s.steps = p_step.size();
    s.median_step_ns = Median(std::move(p_step));
    s.median_work_ns = Median(std::move(p_work));
    s.median_collective_ns = Median(std::move(p_coll));
    s.median_wait_ns = Median(std::move(p_wait));
    s.median_host_gap_ns = Median(std::move(p_gap));
  }
  for (size_t r = 0; r < n; ++r)
    if (out.unplaced_steps[r])
      out.problems.push_back(out.who[r].label + ": " + std::to_string(out.unplaced_steps[r]) +
                             " step(s) not placed in a job step (no collective of the main "
                             "stream in them, or outside " +
                             out.who[out.reference].label + "'s history)");
  // Slow steps, as `steps` finds them, on the job's step time.
  std::vector<uint64_t> coll;
  for (size_t j : kept) coll.push_back(shortest_collective[j]);
  medians = Rolling(step_ns, options.rolling);
  coll_medians = Rolling(coll, options.rolling);
  std::vector<Step> as_steps(kept.size());
  for (size_t k = 0; k < kept.size(); ++k) as_steps[k].end = step_ns[k];
  StepOptions so;
  so.slow_factor = options.slow_factor;
  so.rolling = options.rolling;
  slow_kept = SlowSteps(as_steps, medians, so);
  return {};
}

void Merger::Verdict(size_t k, JobStep& js, const std::vector<std::vector<NameTime>>& work,
                     std::vector<OwnRolling>& own_work, std::vector<OwnRolling>& own_gap,
                     const std::vector<uint64_t>& coll_med) {
  job::Verdict& v = js.verdict;
  v.excess_ns = Sub(js.step_ns, medians[k]);
  const auto need = static_cast<uint64_t>(options.culprit_share * static_cast<double>(v.excess_ns));
  std::vector<size_t> present;
  std::vector<uint64_t> works, gaps;
  for (size_t r = 0; r < n; ++r)
    if (js.ranks[r].present) {
      present.push_back(r);
      works.push_back(js.ranks[r].work_ns());
      gaps.push_back(js.ranks[r].host_gap_ns);
    }
  std::sort(works.begin(), works.end());
  std::sort(gaps.begin(), gaps.end());
  uint64_t best = 0;
  bool best_gap = false;
  size_t culprit = 0;
  for (size_t r : present) {
    const RankStep& f = js.ranks[r];
    uint64_t base_work, base_gap;
    if (present.size() > 1) {
      base_work = MedianWithout(works, f.work_ns());
      base_gap = MedianWithout(gaps, f.host_gap_ns);
    } else {
      base_work = own_work[r].Median();
      base_gap = own_gap[r].Median();
    }
    const uint64_t wx = Sub(f.work_ns(), base_work);
    const uint64_t gx = Sub(f.host_gap_ns, base_gap);
    if (std::max(wx, gx) > best) best = std::max(wx, gx), best_gap = gx >= wx, culprit = r;
  }
  v.collective_ns = Sub(js.shortest_collective_ns, coll_med[k]);
  if (best > 0 && best >= need) {
    v.what = best_gap ? VerdictClass::kHostGap : VerdictClass::kGpuWork;
    v.culprit = static_cast<uint32_t>(culprit);
    v.culprit_ns = best;
    ++out.ranks[culprit].culprit_of;
  } else if (v.collective_ns > 0 && v.collective_ns >= need) {
    v.what = VerdictClass::kCollectives;
  } else {
    v.culprit_ns = best;
  }
  if (v.what != VerdictClass::kGpuWork) return;
  // The kernel that grew: per name (in name order), the culprit's time in the step against the
  // other ranks' median.
  std::vector<std::pair<std::string_view, const NameTime*>> mine;
  for (const NameTime& t : work[culprit]) mine.emplace_back(names[t.name], &t);
  std::sort(mine.begin(), mine.end());
  for (const auto& [name, t] : mine) {
    std::vector<uint64_t> o;
    for (size_t r : present) {
      if (r == culprit) continue;
      uint64_t ns = 0;
      for (const NameTime& x : work[r])
        if (x.name == t->name) ns = x.ns;
      o.push_back(ns);
    }
    const uint64_t grew = o.empty() ? 0 : Sub(t->ns, Median(o));
    if (grew > v.kernel_ns) v.kernel_ns = grew, v.kernel = std::string(name);
  }
}

Expected<void> Merger::Blocks(JobStepSink* sink) {
  std::vector<OwnRolling> own_work, own_gap;
  for (size_t r = 0; r < n; ++r) {
    own_work.emplace_back(options.rolling, own_work_global[r]);
    own_gap.emplace_back(options.rolling, own_gap_global[r]);
  }
  std::vector<bool> slow(kept.size(), false);
  for (size_t k : slow_kept) slow[k] = true;
  std::vector<int64_t> slow_index(kept.size(), -1);  // kept position -> index in out.steps
  std::vector<Placement> place;
  for (size_t r = 0; r < n; ++r) place.emplace_back(&keys, r == out.reference);
  std::vector<uint64_t> pos(n, 0);
  const size_t block = std::max<size_t>(1, options.rows_per_block / n);
  for (size_t b0 = 0; b0 < kept.size(); b0 += block) {
    const size_t b1 = std::min(kept.size(), b0 + block);
    const auto last_j = static_cast<int64_t>(kept[b1 - 1]);
    std::vector<JobStep> steps(b1 - b0);
    // Per step of the block, per rank: its work by name (global ids), for the kernel that grew.
    std::vector<std::vector<std::vector<NameTime>>> work(b1 - b0);
    for (size_t k = b0; k < b1; ++k) {
      JobStep& js = steps[k - b0];
      js.number = kept[k] + 1;
      js.ranks.resize(n);
      js.step_ns = step_ns[k];
      js.rolling_median_ns = medians[k];
      js.shortest_collective_ns = shortest_collective[kept[k]];
      js.slow = slow[k];
      work[k - b0].resize(n);
    }
    for (size_t r = 0; r < n; ++r) {
      auto ok = src.Rows(r, &pos[r], [&](const TableRow& row) {
        const int64_t key = KeyOf(r, row);
        const int64_t j = place[r].Where(key);
        if (j > last_j) return false;  // a later block's
        place[r].Commit(key, j);
        if (j == Placement::kUnplaced) return true;
        const int64_t k = kept_pos[static_cast<size_t>(j)];
        if (k < 0 || static_cast<size_t>(k) < b0) return true;
        const auto at = static_cast<size_t>(k) - b0;
        steps[at].ranks[r] = FiguresOf(r, row);
        if (steps[at].slow) {
          auto& w = work[at][r];
          for (const NameTime& t : row.work_by_name) w.push_back({gid[r][t.name], t.ns});
        }
        return true;
      });
      if (!ok) return ok;
    }
    for (size_t k = b0; k < b1; ++k) {
      JobStep& js = steps[k - b0];
      if (js.slow) Verdict(k, js, work[k - b0], own_work, own_gap, coll_medians);
      for (size_t r = 0; r < n; ++r) {
        own_work[r].Push(js.ranks[r].work_ns());
        own_gap[r].Push(js.ranks[r].host_gap_ns);
      }
      if (sink) {
        sink->OnStep(js);
        if (!js.slow) continue;
      }
      slow_index[k] = static_cast<int64_t>(out.steps.size());
      out.steps.push_back(std::move(js));
    }
  }
  for (size_t k : slow_kept) out.slow.push_back(static_cast<size_t>(slow_index[k]));
  return {};
}

void Merger::Hang() {
  if (out.streams.empty()) return;
  const StreamMatch& m = out.streams[0];
  std::vector<int64_t> launched(n, kNone);
  for (size_t r = 0; r < n; ++r) {
    if (!m.stream[r]) continue;
    const int64_t last = m.offset[r] + static_cast<int64_t>(m.instances[r]) - 1;
    out.ranks[r].last_collective = m.instances[r] ? last : -1;
    int64_t running = 0;
    for (const TableUnfinished& u : src.header(r).unfinished)
      running += u.collective && u.stream == *m.stream[r];
    launched[r] = last + running;
  }
  for (size_t r = 0; r < n; ++r) out.hang.hung |= out.ranks[r].unfinished_collectives > 0;
  if (out.hang.hung) {
    const int64_t most = *std::max_element(launched.begin(), launched.end());
    out.hang.waiting_at = most;
    for (size_t r = 0; r < n; ++r)
      if (launched[r] != kNone && launched[r] < most)
        out.hang.behind.push_back(static_cast<uint32_t>(r));
  }
}

}  // namespace

Expected<void> MemoryTables::Rows(size_t r, uint64_t* pos,
                                  const std::function<bool(const TableRow&)>& take) const {
  const auto& rows = tables_[r].rows;
  while (*pos < rows.size() && take(rows[static_cast<size_t>(*pos)])) ++*pos;
  return {};
}

Expected<JobAnalysis> MergeJob(const TableSource& tables, const JobOptions& options,
                               JobStepSink* sink) {
  Merger m(tables, options);
  m.out.ranks.resize(m.n);
  m.out.unplaced_steps.resize(m.n);
  if (m.n == 0) return std::move(m.out);
  for (auto pass : {&Merger::Headers, &Merger::Streams})
    if (auto ok = (m.*pass)(); !ok) return unexpected(ok.error());
  m.out.reference = m.out.streams.empty() ? 0 : m.out.streams[0].reference;
  for (auto pass : {&Merger::JobSteps, &Merger::RankPass})
    if (auto ok = (m.*pass)(); !ok) return unexpected(ok.error());
  if (auto ok = m.Blocks(sink); !ok) return unexpected(ok.error());
  m.Hang();
  return std::move(m.out);
}

}  // namespace cupmon::decoder::job

// AnalyzeJob: collectives matched by the gaps between their ends, steps joined by the collectives
// they hold, each rank's step time split by a sweep over its GPU activity, and the verdicts.
#include "job/job_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

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

// One rank's activity sorted by start, with what the sweeps and the matching need.
struct RankState {
  const RankInput* in = nullptr;
  std::vector<GpuSpan> spans;     // by start
  std::vector<uint64_t> max_end;  // prefix maximum of spans[i].end
  // Collective streams: stream id -> span indices in start (= launch) order.
  std::map<uint32_t, std::vector<size_t>> collectives;
  // Per span: its stream group and global instance index (collectives only; -1 none).
  std::vector<int32_t> group_of;
  std::vector<int64_t> global_of;
  std::vector<int64_t> step_key;  // per step: global index of its first main collective
};

// The most frequent name among a stream's instances (the key its stream is matched by).
std::string OpOf(const RankState& r, const std::vector<size_t>& idx) {
  std::map<uint32_t, size_t> count;
  for (size_t i : idx) ++count[r.spans[i].name];
  uint32_t best = 0;
  size_t n = 0;
  for (const auto& [name, c] : count)
    if (c > n) best = name, n = c;
  return r.in->names[best];
}

struct Sequence {
  std::vector<uint64_t> end;
  std::vector<int64_t> wall_end;
  std::vector<std::string_view> name;
};

Sequence SequenceOf(const RankState& r, uint32_t stream) {
  Sequence s;
  for (size_t i : r.collectives.at(stream)) {
    s.end.push_back(r.spans[i].end);
    s.wall_end.push_back(r.spans[i].wall_end);
    s.name.push_back(r.in->names[r.spans[i].name]);
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
// possible.
Alignment Align(const Sequence& ref, const Sequence& other, uint64_t max_error) {
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
  // Too few instances for their gaps to tell offsets apart: the wall clock decides.
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
  if (shorter < kMinGapInstances) return settle(a.wall_offset);
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

// Splits [since, end] of one rank by what its GPU runs (RankStep's contract) and measures the idle
// time before `cutoff` (the host gap).
void Split(const RankState& r, uint64_t since, uint64_t end, uint64_t cutoff, RankStep* out) {
  struct Edge {
    uint64_t t;
    int work, coll;
  };
  std::vector<Edge> edges;
  const auto hi = static_cast<size_t>(
      std::lower_bound(r.spans.begin(), r.spans.end(), end,
                       [](const GpuSpan& s, uint64_t t) { return s.start < t; }) -
      r.spans.begin());
  for (size_t i = hi; i-- > 0 && r.max_end[i] > since;) {
    const GpuSpan& s = r.spans[i];
    const uint64_t a = std::max(s.start, since), b = std::min(s.end, end);
    if (b <= a) continue;
    edges.push_back({a, s.collective ? 0 : 1, s.collective ? 1 : 0});
    edges.push_back({b, s.collective ? 0 : -1, s.collective ? -1 : 0});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.t < y.t; });
  int work = 0, coll = 0;
  uint64_t at = since;
  auto account = [&](uint64_t to) {
    if (to <= at) return;
    const uint64_t len = to - at;
    if (work > 0 && coll > 0)
      out->both_ns += len;
    else if (work > 0)
      out->work_alone_ns += len;
    else if (coll > 0)
      out->collective_alone_ns += len;
    else {
      out->idle_ns += len;
      if (at < cutoff) out->host_gap_ns += std::min(to, cutoff) - at;
    }
    at = to;
  };
  for (const Edge& e : edges) {
    account(e.t);
    work += e.work;
    coll += e.coll;
  }
  account(end);
}

}  // namespace

bool IsCollectiveName(std::string_view name) {
  return name.starts_with("ncclDevKernel_") || name.starts_with("ncclKernel_") ||
         name.starts_with("void ncclKernel_") || name.starts_with("void ncclDevKernel_");
}

std::string_view VerdictName(VerdictClass c) {
  switch (c) {
    case VerdictClass::kGpuWork:
      return "gpu-work";
    case VerdictClass::kHostGap:
      return "host-gap";
    case VerdictClass::kCollectives:
      return "collectives";
    case VerdictClass::kUnexplained:
      break;
  }
  return "unexplained";
}

JobAnalysis AnalyzeJob(const std::vector<RankInput>& inputs, const JobOptions& options) {
  JobAnalysis out;
  const size_t n = inputs.size();
  out.ranks.resize(n);
  out.unplaced_steps.resize(n);
  if (n == 0) return out;
  std::vector<RankState> ranks(n);
  for (size_t r = 0; r < n; ++r) {
    RankState& s = ranks[r];
    s.in = &inputs[r];
    s.spans = inputs[r].spans;
    std::stable_sort(s.spans.begin(), s.spans.end(),
                     [](const GpuSpan& a, const GpuSpan& b) { return a.start < b.start; });
    s.max_end.resize(s.spans.size());
    uint64_t m = 0;
    for (size_t i = 0; i < s.spans.size(); ++i) {
      m = std::max(m, s.spans[i].end);
      s.max_end[i] = m;
      if (s.spans[i].collective) s.collectives[s.spans[i].stream].push_back(i);
    }
    s.group_of.assign(s.spans.size(), -1);
    s.global_of.assign(s.spans.size(), -1);
    RankSummary& sum = out.ranks[r];
    for (const GpuSpan& g : s.spans) {
      if (g.collective) ++sum.completed_collectives;
      if (!sum.last_kernel.empty() && g.wall_end < sum.last_kernel_wall_end) continue;
      sum.last_kernel = inputs[r].names[g.name];
      sum.last_kernel_wall_end = g.wall_end;
    }
    for (const Unfinished& u : inputs[r].unfinished) {
      sum.unfinished.push_back(inputs[r].names[u.name]);
      sum.unfinished_collectives += u.collective;
    }
  }

  // Streams are matched across ranks by their most frequent collective (a second stream of the
  // same op on one rank is its op's "#2", by first launch).
  std::map<std::string, std::vector<std::optional<uint32_t>>> groups;
  for (size_t r = 0; r < n; ++r) {
    std::vector<std::pair<uint64_t, uint32_t>> by_first;  // first start, stream
    for (const auto& [stream, idx] : ranks[r].collectives)
      by_first.emplace_back(ranks[r].spans[idx.front()].start, stream);
    std::sort(by_first.begin(), by_first.end());
    std::map<std::string, int> seen;
    for (const auto& [first, stream] : by_first) {
      std::string key = OpOf(ranks[r], ranks[r].collectives[stream]);
      if (const int k = ++seen[key]; k > 1) key += " #" + std::to_string(k);
      auto& g = groups[key];
      g.resize(n);
      g[r] = stream;
    }
  }
  for (auto& [key, streams] : groups) {
    StreamMatch m;
    m.op = key;
    m.stream = streams;
    m.offset.assign(n, 0);
    m.instances.assign(n, 0);
    m.matched.assign(n, 0);
    m.clock_offset_ns.assign(n, 0);
    m.wall_offset.assign(n, 0);
    m.name_mismatches.assign(n, 0);
    for (size_t r = 0; r < n; ++r)
      if (streams[r]) m.instances[r] = ranks[r].collectives[*streams[r]].size();
    m.reference = static_cast<uint32_t>(std::max_element(m.instances.begin(), m.instances.end()) -
                                        m.instances.begin());
    const Sequence ref = SequenceOf(ranks[m.reference], *streams[m.reference]);
    for (size_t r = 0; r < n; ++r) {
      if (!streams[r]) continue;
      if (r == m.reference) {
        m.matched[r] = m.instances[r];
        continue;
      }
      const Alignment a = Align(ref, SequenceOf(ranks[r], *streams[r]), options.max_clock_error_ns);
      m.offset[r] = a.offset;
      m.wall_offset[r] = a.wall_offset;
      m.matched[r] = a.matched;
      m.name_mismatches[r] = a.mismatches;
      m.clock_offset_ns[r] = a.clock_offset_ns;
    }
    out.streams.push_back(std::move(m));
  }
  // The main stream: the most instances at its reference (the first in key order on a tie).
  std::stable_sort(out.streams.begin(), out.streams.end(),
                   [](const StreamMatch& a, const StreamMatch& b) {
                     return a.instances[a.reference] > b.instances[b.reference];
                   });
  for (size_t g = 0; g < out.streams.size(); ++g) {
    const StreamMatch& m = out.streams[g];
    for (size_t r = 0; r < n; ++r) {
      if (!m.stream[r]) continue;
      const auto& idx = ranks[r].collectives[*m.stream[r]];
      for (size_t i = 0; i < idx.size(); ++i) {
        ranks[r].group_of[idx[i]] = static_cast<int32_t>(g);
        ranks[r].global_of[idx[i]] = m.offset[r] + static_cast<int64_t>(i);
      }
      if (r != m.reference && m.instances[r] && m.matched[r] < m.instances[r])
        out.problems.push_back(
            inputs[r].label + ": " + std::to_string(m.instances[r] - m.matched[r]) + " of " +
            std::to_string(m.instances[r]) + " " + m.op + " instance(s) outside " +
            inputs[m.reference].label + "'s history: not matched");
      if (m.name_mismatches[r])
        out.problems.push_back(inputs[r].label + ": " + std::to_string(m.name_mismatches[r]) +
                               " matched " + m.op + " instance(s) carry another name than on " +
                               inputs[m.reference].label +
                               " (records lost in the middle of a history shift the sequence)");
    }
  }
  // Shortest duration of each instance over the ranks, per stream group and global index.
  std::vector<std::map<int64_t, uint64_t>> shortest(out.streams.size());
  for (const RankState& s : ranks)
    for (size_t i = 0; i < s.spans.size(); ++i) {
      if (s.group_of[i] < 0) continue;
      const uint64_t d = s.spans[i].end - s.spans[i].start;
      auto [it, fresh] =
          shortest[static_cast<size_t>(s.group_of[i])].try_emplace(s.global_of[i], d);
      if (!fresh) it->second = std::min(it->second, d);
    }
  auto shortest_of = [&](const RankState& s, size_t i) {
    return shortest[static_cast<size_t>(s.group_of[i])].at(s.global_of[i]);
  };

  // Per rank step: its figures and its key (the global index of its first main collective).
  std::vector<std::vector<RankStep>> figures(n);
  for (size_t r = 0; r < n; ++r) {
    RankState& s = ranks[r];
    for (const StepSpan& st : inputs[r].steps) {
      RankStep f;
      f.present = true;
      f.number = st.number;
      f.step_ns = st.end > st.since ? st.end - st.since : 0;
      f.wall_start = st.wall_start;
      f.wall_end = st.wall_end;
      const auto first = static_cast<size_t>(
          std::lower_bound(s.spans.begin(), s.spans.end(), st.since,
                           [](const GpuSpan& g, uint64_t t) { return g.start < t; }) -
          s.spans.begin());
      uint64_t cutoff = st.end;
      int64_t key = kNone;
      for (size_t i = first; i < s.spans.size() && s.spans[i].start < st.end; ++i) {
        if (!s.spans[i].collective) continue;
        if (f.collectives++ == 0) cutoff = s.spans[i].start;
        f.wait_ns += Sub(s.spans[i].end - s.spans[i].start, shortest_of(s, i));
        if (key == kNone && s.group_of[i] == 0) key = s.global_of[i];
      }
      if (st.end > st.since) Split(s, st.since, st.end, cutoff, &f);
      s.step_key.push_back(key);
      figures[r].push_back(f);
    }
  }

  // Job steps: the reference rank's steps with a main collective; other ranks' steps join the one
  // whose collectives they start with.
  const uint32_t ref = out.streams.empty() ? 0 : out.streams[0].reference;
  out.reference = ref;
  std::vector<int64_t> keys;
  std::vector<size_t> ref_step;
  for (size_t k = 0; k < figures[ref].size(); ++k) {
    if (ranks[ref].step_key[k] == kNone) {
      ++out.unplaced_steps[ref];
      continue;
    }
    keys.push_back(ranks[ref].step_key[k]);
    ref_step.push_back(k);
  }
  std::vector<JobStep> steps(keys.size());
  for (size_t j = 0; j < steps.size(); ++j) {
    steps[j].number = j + 1;
    steps[j].ranks.resize(n);
  }
  for (size_t r = 0; r < n; ++r)
    for (size_t k = 0; k < figures[r].size(); ++k) {
      const int64_t key = ranks[r].step_key[k];
      if (r == ref) {
        if (key != kNone) {
          const size_t j =
              static_cast<size_t>(std::lower_bound(keys.begin(), keys.end(), key) - keys.begin());
          steps[j].ranks[r] = figures[r][k];
        }
        continue;
      }
      auto it = std::upper_bound(keys.begin(), keys.end(), key);
      if (key == kNone || it == keys.begin() ||
          steps[static_cast<size_t>(it - keys.begin() - 1)].ranks[r].present) {
        ++out.unplaced_steps[r];
        continue;
      }
      steps[static_cast<size_t>(it - keys.begin() - 1)].ranks[r] = figures[r][k];
    }
  for (size_t r = 0; r < n; ++r)
    if (out.unplaced_steps[r])
      out.problems.push_back(inputs[r].label + ": " + std::to_string(out.unplaced_steps[r]) +
                             " step(s) not placed in a job step (no collective of the main "
                             "stream in them, or outside " +
                             inputs[ref].label + "'s history)");
  // The shortest collective time of each job step, over the reference's collectives in it.
  for (size_t j = 0; j < steps.size(); ++j) {
    const StepSpan& st = inputs[ref].steps[ref_step[j]];
    const RankState& s = ranks[ref];
    for (size_t i = 0; i < s.spans.size(); ++i)
      if (s.spans[i].collective && s.spans[i].start >= st.since && s.spans[i].start < st.end)
        steps[j].shortest_collective_ns += shortest_of(s, i);
  }
  // The range asked for, on the reference's step starts.
  std::erase_if(steps, [&](const JobStep& j) {
    const int64_t w = j.ranks[ref].wall_start;
    return (options.from_wall && w < *options.from_wall) ||
           (options.to_wall && w >= *options.to_wall);
  });
  for (JobStep& j : steps)
    for (const RankStep& f : j.ranks)
      if (f.present) j.step_ns = std::max(j.step_ns, f.step_ns);

  // Slow steps, as `steps` finds them, on the job's step time.
  std::vector<uint64_t> times, coll;
  for (const JobStep& j : steps)
    times.push_back(j.step_ns), coll.push_back(j.shortest_collective_ns);
  const std::vector<uint64_t> medians = Rolling(times, options.rolling);
  const std::vector<uint64_t> coll_medians = Rolling(coll, options.rolling);
  {
    std::vector<Step> as_steps(steps.size());
    for (size_t j = 0; j < steps.size(); ++j) as_steps[j].end = times[j];
    StepOptions so;
    so.slow_factor = options.slow_factor;
    so.rolling = options.rolling;
    out.slow = SlowSteps(as_steps, medians, so);
  }
  // A rank's own rolling medians of work and host gap, the baseline when it is alone in a step.
  std::vector<std::vector<uint64_t>> own_work(n), own_gap(n);
  for (size_t r = 0; r < n; ++r) {
    std::vector<uint64_t> w, g;
    for (const JobStep& j : steps)
      w.push_back(j.ranks[r].work_ns()), g.push_back(j.ranks[r].host_gap_ns);
    own_work[r] = Rolling(w, options.rolling);
    own_gap[r] = Rolling(g, options.rolling);
  }
  for (size_t j = 0; j < steps.size(); ++j) steps[j].rolling_median_ns = medians[j];
  for (size_t j : out.slow) {
    JobStep& js = steps[j];
    js.slow = true;
    Verdict& v = js.verdict;
    v.excess_ns = Sub(js.step_ns, medians[j]);
    const auto need =
        static_cast<uint64_t>(options.culprit_share * static_cast<double>(v.excess_ns));
    std::vector<size_t> present;
    for (size_t r = 0; r < n; ++r)
      if (js.ranks[r].present) present.push_back(r);
    uint64_t best = 0;
    bool best_gap = false;
    size_t culprit = 0;
    for (size_t r : present) {
      uint64_t base_work, base_gap;
      if (present.size() > 1) {
        std::vector<uint64_t> w, g;
        for (size_t o : present)
          if (o != r) w.push_back(js.ranks[o].work_ns()), g.push_back(js.ranks[o].host_gap_ns);
        base_work = Median(w);
        base_gap = Median(g);
      } else {
        base_work = own_work[r][j];
        base_gap = own_gap[r][j];
      }
      const uint64_t wx = Sub(js.ranks[r].work_ns(), base_work);
      const uint64_t gx = Sub(js.ranks[r].host_gap_ns, base_gap);
      if (std::max(wx, gx) > best) best = std::max(wx, gx), best_gap = gx >= wx, culprit = r;
    }
    v.collective_ns = Sub(js.shortest_collective_ns, coll_medians[j]);
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
    if (v.what != VerdictClass::kGpuWork) continue;
    // The kernel that grew: per name, the culprit's time in the step against the other ranks'.
    auto by_name = [&](size_t r) {
      std::map<std::string_view, uint64_t> t;
      const RankState& s = ranks[r];
      const RankStep& f = js.ranks[r];
      const StepSpan* st = nullptr;
      for (const StepSpan& x : inputs[r].steps)
        if (x.number == f.number) st = &x;
      if (!st) return t;
      for (const GpuSpan& g : s.spans)
        if (!g.collective && g.start >= st->since && g.start < st->end)
          t[inputs[r].names[g.name]] += g.end - g.start;
      return t;
    };
    const auto mine = by_name(culprit);
    std::vector<std::map<std::string_view, uint64_t>> others;
    for (size_t o : present)
      if (o != culprit) others.push_back(by_name(o));
    for (const auto& [name, t] : mine) {
      std::vector<uint64_t> o;
      for (const auto& m : others) {
        auto it = m.find(name);
        o.push_back(it == m.end() ? 0 : it->second);
      }
      const uint64_t grew = o.empty() ? 0 : Sub(t, Median(o));
      if (grew > v.kernel_ns) v.kernel_ns = grew, v.kernel = std::string(name);
    }
  }

  // Per rank over the steps: medians and the job's end.
  for (size_t r = 0; r < n; ++r) {
    std::vector<uint64_t> step, work, colls, wait, gap;
    for (const JobStep& j : steps) {
      const RankStep& f = j.ranks[r];
      if (!f.present) continue;
      step.push_back(f.step_ns), work.push_back(f.work_ns()), colls.push_back(f.collective_ns());
      wait.push_back(f.wait_ns), gap.push_back(f.host_gap_ns);
    }
    RankSummary& s = out.ranks[r];
    s.steps = step.size();
    s.median_step_ns = Median(step);
    s.median_work_ns = Median(work);
    s.median_collective_ns = Median(colls);
    s.median_wait_ns = Median(wait);
    s.median_host_gap_ns = Median(gap);
  }
  // Hangs: a collective still running at the end on some rank. The ranks behind launched fewer
  // of the main stream's collectives than the others.
  if (!out.streams.empty()) {
    const StreamMatch& m = out.streams[0];
    std::vector<int64_t> launched(n, kNone);
    for (size_t r = 0; r < n; ++r) {
      if (!m.stream[r]) continue;
      const int64_t last = m.offset[r] + static_cast<int64_t>(m.instances[r]) - 1;
      out.ranks[r].last_collective = m.instances[r] ? last : -1;
      int64_t running = 0;
      for (const Unfinished& u : inputs[r].unfinished)
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
  out.steps = std::move(steps);
  return out;
}

}  // namespace cupmon::decoder::job

// MakeJobStream / WriteJobStream: synthetic data-parallel jobs for the job analysis tests.
#include "job_stream.h"

#include <algorithm>

#include "cupmon/base/check.h"
#include "recording_builder.h"

namespace cupmon::testing {
namespace {

enum Name : uint32_t { kGemmFwd, kRelu, kGemmDgrad, kGemmWgrad, kAdam, kAllReduce, kNameCount };
const char* const kNames[kNameCount] = {
    "_Z8gemm_fwdPKfS0_Pfi",        "_Z4reluPfi",
    "_Z10gemm_dgradPKfS0_Pf",      "_Z10gemm_wgradPKfS0_Pf",
    "_Z19adam_multi_tensor_aPPfi", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
constexpr uint64_t kNameBase = 0x7f0000300000;

uint64_t Extra(const JobStreamSpec& spec, JobInjection::Kind kind, uint32_t rank, uint32_t step) {
  uint64_t ns = 0;
  for (const JobInjection& i : spec.inject)
    if (i.kind == kind && i.step == step && (kind == JobInjection::kCollectives || i.rank == rank))
      ns += i.ns;
  return ns;
}

bool Hangs(const JobStreamSpec& spec, uint32_t rank, uint32_t step) {
  for (const JobInjection& i : spec.inject)
    if (i.kind == JobInjection::kHang && i.rank == rank && step >= i.step) return true;
  return false;
}

// Rank r's clocks: its CUPTI clock cupti_skew_ns and its wall clock wall_skew_ns ahead of rank
// r-1's (every skew_period ranks the skews start again).
void Skew(const JobStreamSpec& spec, uint32_t r, JobRankTruth* rank) {
  const uint32_t skews = spec.skew_period ? r % spec.skew_period : r;
  const uint64_t shift = skews * spec.cupti_skew_ns;
  for (JobKernel& x : rank->kernels) {
    x.start += shift;
    if (x.end) x.end += shift;
  }
  for (JobStepTruth& s : rank->steps) s.since += shift, s.end += shift;
  rank->wall_minus_cupti =
      static_cast<int64_t>(skews * spec.wall_skew_ns) - static_cast<int64_t>(shift) + 2'000;
  if (skews && (spec.wall_skew_ns || spec.cupti_skew_ns))
    rank->host = "synthetic-host-" + std::to_string(skews);
}

}  // namespace

JobStreamTruth MakeJobStream(const JobStreamSpec& spec) {
  JobStreamTruth job;
  job.names.assign(kNames, kNames + kNameCount);
  const uint32_t n = spec.ranks;
  job.ranks.resize(n);
  // Times below are in true time (rank 0's CUPTI clock); each rank's clock is added at the end.
  std::vector<uint64_t> t(n, kT0 + 10'000'000);
  uint64_t lcg = 77;
  auto next = [&lcg] {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(lcg >> 33);
  };
  std::vector<uint64_t> prev_end(n, 0);
  uint32_t hang_step = UINT32_MAX;
  for (const JobInjection& i : spec.inject)
    if (i.kind == JobInjection::kHang) hang_step = std::min(hang_step, i.step);
  for (uint32_t k = 1; k <= spec.steps && k <= hang_step; ++k) {
    const uint64_t loop = 300'000 + next() % 200'000;  // the data loader: the same on every rank
    std::vector<std::vector<JobKernel>> step(n);
    std::vector<uint64_t> arrive1(n), arrive2(n);
    for (uint32_t r = 0; r < n; ++r) {
      if (Hangs(spec, r, k)) continue;
      auto kernel = [&](uint32_t name, uint64_t dur, uint32_t stream = 7) {
        step[r].push_back({t[r], t[r] + dur, name, stream});
        t[r] += dur + 1'000;
      };
      t[r] += loop + next() % 20'000 + Extra(spec, JobInjection::kHostGap, r, k);
      for (uint32_t l = 0; l < spec.layers; ++l) {
        kernel(kGemmFwd, 100'000 + next() % 5'000);
        kernel(kRelu, 20'000);
      }
      for (uint32_t l = 0; l < spec.layers; ++l) {
        kernel(kGemmDgrad, 80'000 + next() % 5'000);
        const uint64_t extra = l + 1 == spec.layers ? Extra(spec, JobInjection::kGpuWork, r, k) : 0;
        kernel(kGemmWgrad, 80'000 + next() % 5'000 + extra);
        if (l + 1 == spec.layers / 2) arrive1[r] = t[r];  // the first bucket is ready
      }
      arrive2[r] = t[r];
    }
    if (k == hang_step) {
      // The ranks that did not hang wait in the first all-reduce for ever: it is still running
      // when their processes end (its record comes with end 0).
      for (uint32_t r = 0; r < n; ++r) {
        if (Hangs(spec, r, k)) continue;
        step[r].push_back({arrive1[r], 0, kAllReduce, 13});
        job.ranks[r].kernels.insert(job.ranks[r].kernels.end(), step[r].begin(), step[r].end());
      }
      break;
    }
    // An all-reduce ends when the last rank has joined it, after its own transfer time.
    const uint64_t slower = Extra(spec, JobInjection::kCollectives, 0, k);
    const uint64_t done1 =
        *std::max_element(arrive1.begin(), arrive1.end()) + 150'000 + next() % 10'000 + slower / 2;
    const uint64_t done2 = std::max(done1, *std::max_element(arrive2.begin(), arrive2.end())) +
                           150'000 + next() % 10'000 + (slower - slower / 2);
    for (uint32_t r = 0; r < n; ++r) {
      step[r].push_back({arrive1[r], done1, kAllReduce, 13});
      step[r].push_back({std::max(arrive2[r], done1), done2, kAllReduce, 13});
      t[r] = done2 + 2'000;
      step[r].push_back({t[r], t[r] + 50'000, kAdam, 7});
      t[r] += 51'000;
      std::sort(step[r].begin(), step[r].end(),
                [](const JobKernel& a, const JobKernel& b) { return a.start < b.start; });
      const uint64_t first = step[r].front().start;
      uint64_t last = 0;
      for (const JobKernel& x : step[r]) last = std::max(last, x.end);
      const uint32_t from = r < spec.first_step.size() ? spec.first_step[r] : 1;
      if (k >= from) {
        job.ranks[r].steps.push_back({k, prev_end[r] && k > from ? prev_end[r] : first, last});
        job.ranks[r].kernels.insert(job.ranks[r].kernels.end(), step[r].begin(), step[r].end());
      }
      prev_end[r] = last;
    }
  }
  for (uint32_t r = 0; r < n; ++r) Skew(spec, r, &job.ranks[r]);
  return job;
}

std::vector<std::string> JobStreamNames() { return {kNames, kNames + kNameCount}; }

JobRankTruth MakeJobRank(const JobStreamSpec& spec, uint32_t r, double scale) {
  JobRankTruth rank;
  auto hash = [](uint64_t a, uint64_t b, uint64_t salt) {
    uint64_t z = a * 0x9e3779b97f4a7c15ull + b * 0xbf58476d1ce4e5b9ull + salt;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  auto ns = [scale](double v) { return static_cast<uint64_t>(v * scale); };
  auto max_extra = [&](JobInjection::Kind kind, uint32_t step) {
    uint64_t m = 0;
    for (const JobInjection& i : spec.inject)
      if (i.kind == kind && i.step == step) m = std::max(m, Extra(spec, kind, i.rank, step));
    return m;
  };
  uint32_t hang_step = UINT32_MAX;
  for (const JobInjection& i : spec.inject)
    if (i.kind == JobInjection::kHang) hang_step = std::min(hang_step, i.step);
  const uint32_t from = r < spec.first_step.size() ? spec.first_step[r] : 1;
  // Each kernel's longest duration and the gap after it, so that every rank's latest possible
  // arrival is known without the others.
  const uint64_t gap = ns(1'000), fwd = ns(105'000), relu = ns(20'000), grad = ns(85'000);
  uint64_t start = kT0 + 10'000'000, prev_end = 0;
  for (uint32_t k = 1; k <= spec.steps && k <= hang_step; ++k) {
    std::vector<JobKernel> step;
    const uint64_t loader = ns(300'000) + hash(k, 0, 1) % ns(200'000);
    const uint64_t jitter = ns(20'000);
    const uint64_t host_gap = Extra(spec, JobInjection::kHostGap, r, k);
    uint64_t t = start + loader + hash(r, k, 2) % jitter + host_gap;
    auto kernel = [&](uint32_t name, uint64_t dur) {
      step.push_back({t, t + dur, name, 7});
      t += dur + gap;
    };
    uint64_t arrive1 = 0;
    for (uint32_t l = 0; l < spec.layers; ++l) {
      kernel(kGemmFwd, ns(100'000) + hash(r, k * 64 + l, 3) % ns(5'000));
      kernel(kRelu, ns(20'000));
    }
    for (uint32_t l = 0; l < spec.layers; ++l) {
      kernel(kGemmDgrad, ns(80'000) + hash(r, k * 64 + l, 4) % ns(5'000));
      const uint64_t extra = l + 1 == spec.layers ? Extra(spec, JobInjection::kGpuWork, r, k) : 0;
      kernel(kGemmWgrad, ns(80'000) + hash(r, k * 64 + l, 5) % ns(5'000) + extra);
      if (l + 1 == spec.layers / 2) arrive1 = t;
    }
    const uint64_t arrive2 = t;
    const bool hangs = Hangs(spec, r, k);
    if (k == hang_step) {
      if (!hangs) {
        step.push_back({arrive1, 0, kAllReduce, 13});
        if (k >= from) rank.kernels.insert(rank.kernels.end(), step.begin(), step.end());
      }
      break;
    }
    // The latest arrivals any rank can have: its loader and jitter at their longest, the
    // injections of this step at their largest.
    const uint64_t latest = start + loader + jitter + max_extra(JobInjection::kHostGap, k);
    const uint64_t half = spec.layers / 2;
    const uint64_t latest1 = latest + spec.layers * (fwd + relu + 2 * gap) + half * 2 * (grad + gap);
    const uint64_t latest2 = latest + spec.layers * (fwd + relu + 2 * gap + 2 * (grad + gap)) +
                             max_extra(JobInjection::kGpuWork, k);
    const uint64_t slower = Extra(spec, JobInjection::kCollectives, 0, k);
    const uint64_t done1 = latest1 + ns(150'000) + hash(k, 0, 6) % ns(10'000) + slower / 2;
    const uint64_t done2 = std::max(done1, latest2) + ns(150'000) + hash(k, 0, 7) % ns(10'000) +
                           (slower - slower / 2);
    step.push_back({arrive1, done1, kAllReduce, 13});
    step.push_back({std::max(arrive2, done1), done2, kAllReduce, 13});
    step.push_back({done2 + ns(2'000), done2 + ns(2'000) + ns(50'000), kAdam, 7});
    std::sort(step.begin(), step.end(),
              [](const JobKernel& a, const JobKernel& b) { return a.start < b.start; });
    uint64_t last = 0;
    for (const JobKernel& x : step) last = std::max(last, x.end);
    if (k >= from) {
      rank.steps.push_back({k, prev_end && k > from ? prev_end : step.front().start, last});
      rank.kernels.insert(rank.kernels.end(), step.begin(), step.end());
    }
    prev_end = last;
    start = done2 + ns(2'000) + ns(51'000);
  }
  Skew(spec, r, &rank);
  return rank;
}

void WriteJobStream(const std::string& dir, const JobStreamTruth& job) {
  const auto n = static_cast<uint32_t>(job.ranks.size());
  for (uint32_t r = 0; r < n; ++r) {
    const JobRankTruth& rank = job.ranks[r];
    pb::RecordingHeader header = SyntheticHeader(kTestRecordingId + 0x100 + r, 5000 + r);
    header.set_rank(static_cast<int32_t>(r));
    header.set_local_rank(static_cast<int32_t>(r));
    header.set_world_size(static_cast<int32_t>(n));
    header.set_job_id("synthetic-job");
    header.set_host(rank.host);
    auto opts =
        WriterOptions(dir + "/rank" + std::to_string(r), "cupmon-job-r" + std::to_string(r));
    opts.files.retention_bytes = 1ull << 40;
    RecordingWriter w(opts, header);
    CUPMON_CHECK(w.Open().has_value());
    std::vector<pb::StringEntry> strings(job.names.size());
    for (size_t i = 0; i < job.names.size(); ++i) {
      strings[i].set_id(static_cast<uint32_t>(i + 1));
      strings[i].set_pointer(kNameBase + 0x100u * i);
      strings[i].set_text(job.names[i]);
    }
    w.AddStrings(strings);
    const uint64_t first = rank.kernels.empty() ? kT0 : rank.kernels.front().start;
    pb::Calibration cal;
    auto* sample = cal.add_samples();
    sample->set_cupti_ns(first);
    sample->set_realtime_ns(static_cast<int64_t>(first) + rank.wall_minus_cupti);
    sample->set_monotonic_ns(1000);
    w.WriteCalibration(cal);
    // CUPTI records a kernel when it ends; one still running comes last, with end 0.
    std::vector<JobKernel> order = rank.kernels;
    std::stable_sort(order.begin(), order.end(), [](const JobKernel& a, const JobKernel& b) {
      const uint64_t ea = a.end ? a.end : UINT64_MAX, eb = b.end ? b.end : UINT64_MAX;
      return ea < eb;
    });
    BufferBuilder b;
    uint32_t corr = 1;
    uint64_t last = first;
    for (size_t i = 0; i < order.size(); ++i) {
      const JobKernel& x = order[i];
      b.Kernel(x.start, x.end, corr++, kNameBase + 0x100u * x.name, x.stream, r);
      last = std::max(last, x.end);
      if (b.records() == 500 || i + 1 == order.size()) {
        w.WriteRawBuffer(b.bytes(), 1, 7);
        b.Clear();
      }
    }
    w.WriteStats(static_cast<int64_t>(last));
    w.Close(static_cast<int64_t>(last));
  }
}

}  // namespace cupmon::testing

// Tests decoder/src/job/job_analysis.cc on synthetic jobs with known truth
// (tests/decoder/job_stream.h).
#include "job/job_analysis.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "job/job_test_util.h"
#include "job_stream.h"

namespace cupmon::decoder::job {
namespace {

using testing::JobInjection;
using testing::JobStreamSpec;

void ExpectSumsAddUp(const JobAnalysis& a) {
  for (const JobStep& s : a.steps)
    for (size_t r = 0; r < s.ranks.size(); ++r) {
      const RankStep& f = s.ranks[r];
      if (!f.present) continue;
      EXPECT_EQ(f.work_alone_ns + f.collective_alone_ns + f.both_ns + f.idle_ns, f.step_ns)
          << "step " << s.number << " rank " << r;
      EXPECT_LE(f.host_gap_ns, f.idle_ns);
    }
}

TEST(JobAnalysisTest, CollectiveNames) {
  EXPECT_TRUE(IsCollectiveName("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  EXPECT_TRUE(
      IsCollectiveName("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_TRUE(IsCollectiveName("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"));
  EXPECT_FALSE(IsCollectiveName("gemm_nccl_like"));
  EXPECT_FALSE(IsCollectiveName("at::native::reduce_kernel"));
}

TEST(JobAnalysisTest, CleanJobHasNoSlowStepAndItsSumsAddUp) {
  for (uint32_t ranks : {2u, 8u}) {
    JobStreamSpec spec;
    spec.ranks = ranks;
    const auto a = AnalyzeJob(InputsOf(testing::MakeJobStream(spec)));
    ASSERT_EQ(a.steps.size(), spec.steps);
    EXPECT_TRUE(a.slow.empty()) << ranks;
    EXPECT_FALSE(a.hang.hung);
    EXPECT_TRUE(a.problems.empty()) << a.problems.front();
    ExpectSumsAddUp(a);
    ASSERT_EQ(a.streams.size(), 1u);
    for (uint32_t r = 0; r < ranks; ++r) {
      EXPECT_EQ(a.streams[0].offset[r], 0) << r;
      EXPECT_EQ(a.streams[0].matched[r], 2u * spec.steps);
      // Collectives end together: the wall clocks' offset is what the spec put there.
      EXPECT_EQ(a.streams[0].clock_offset_ns[r], static_cast<int64_t>(r * spec.wall_skew_ns));
    }
    // Step 10, rank 0, as the generator built it: the loader's idle time is the host gap, the
    // first all-reduce runs beside the second half of the backward pass.
    const RankStep& f = a.steps[9].ranks[0];
    EXPECT_EQ(f.collectives, 2u);
    EXPECT_GT(f.both_ns, 0u);
    EXPECT_GE(f.host_gap_ns, 300'000u);
    EXPECT_LT(f.host_gap_ns, 500'000u + 20'000u + 20'000u);
  }
}

TEST(JobAnalysisTest, MatchesHistoriesThatStartAtDifferentSteps) {
  JobStreamSpec spec;
  spec.ranks = 3;
  spec.first_step = {1, 11, 25};  // ranks 1 and 2 lost their first steps to retention
  spec.inject = {{JobInjection::kHostGap, 2, 40, 20'000'000}};
  const auto a = AnalyzeJob(InputsOf(testing::MakeJobStream(spec)));
  ASSERT_EQ(a.streams.size(), 1u);
  EXPECT_EQ(a.streams[0].reference, 0u);
  EXPECT_EQ(a.streams[0].offset[1], 20);  // two all-reduces per step
  EXPECT_EQ(a.streams[0].offset[2], 48);
  // The wall clocks (1.7 s apart per rank, steps of ~1.5 ms) would have paired other instances.
  EXPECT_NE(a.streams[0].wall_offset[1], 20);
  EXPECT_EQ(a.steps.size(), spec.steps);
  EXPECT_FALSE(a.steps[9].ranks[1].present);
  EXPECT_TRUE(a.steps[10].ranks[1].present);
  EXPECT_EQ(a.steps[10].ranks[1].number, 1u);
  ASSERT_EQ(a.slow.size(), 1u);
  const JobStep& s = a.steps[a.slow[0]];
  EXPECT_EQ(s.number, 40u);
  EXPECT_EQ(s.verdict.what, VerdictClass::kHostGap);
  EXPECT_EQ(s.verdict.culprit, 2u);
  ExpectSumsAddUp(a);
}

struct Case {
  uint32_t ranks;
  std::vector<JobInjection> inject;
};

TEST(JobAnalysisTest, EveryVerdictNamesTheInjectedRankStepAndClass) {
  const Case cases[] = {
      {2,
       {{JobInjection::kHostGap, 1, 20, 30'000'000},
        {JobInjection::kGpuWork, 0, 45, 25'000'000},
        {JobInjection::kCollectives, 0, 65, 20'000'000}}},
      {8,
       {{JobInjection::kGpuWork, 5, 30, 20'000'000},
        {JobInjection::kHostGap, 2, 50, 40'000'000},
        {JobInjection::kCollectives, 0, 70, 15'000'000},
        {JobInjection::kHostGap, 7, 75, 5'000'000}}},
  };
  for (const Case& c : cases) {
    JobStreamSpec spec;
    spec.ranks = c.ranks;
    spec.inject = c.inject;
    const auto a = AnalyzeJob(InputsOf(testing::MakeJobStream(spec)));
    ExpectSumsAddUp(a);
    ASSERT_EQ(a.slow.size(), c.inject.size()) << c.ranks;  // nothing where nothing was injected
    for (const JobInjection& i : c.inject) {
      const auto it = std::find_if(a.slow.begin(), a.slow.end(),
                                   [&](size_t j) { return a.steps[j].number == i.step; });
      ASSERT_NE(it, a.slow.end()) << c.ranks << " ranks, step " << i.step;
      const Verdict& v = a.steps[*it].verdict;
      switch (i.kind) {
        case JobInjection::kHostGap:
          EXPECT_EQ(v.what, VerdictClass::kHostGap) << i.step;
          EXPECT_EQ(v.culprit, i.rank) << i.step;
          EXPECT_NEAR(static_cast<double>(v.culprit_ns), static_cast<double>(i.ns), 100'000.0);
          break;
        case JobInjection::kGpuWork:
          EXPECT_EQ(v.what, VerdictClass::kGpuWork) << i.step;
          EXPECT_EQ(v.culprit, i.rank) << i.step;
          EXPECT_EQ(v.kernel, "_Z10gemm_wgradPKfS0_Pf");
          EXPECT_NEAR(static_cast<double>(v.kernel_ns), static_cast<double>(i.ns), 100'000.0);
          break;
        case JobInjection::kCollectives:
          EXPECT_EQ(v.what, VerdictClass::kCollectives) << i.step;
          EXPECT_FALSE(v.culprit);
          EXPECT_NEAR(static_cast<double>(v.collective_ns), static_cast<double>(i.ns), 100'000.0);
          break;
        case JobInjection::kHang:
          break;
      }
    }
    // The culprit's own wait is the smallest: the others waited for it.
    for (size_t j : a.slow) {
      const JobStep& s = a.steps[j];
      if (!s.verdict.culprit) continue;
      for (size_t r = 0; r < s.ranks.size(); ++r)
        EXPECT_LE(s.ranks[*s.verdict.culprit].wait_ns, s.ranks[r].wait_ns);
    }
  }
}

TEST(JobAnalysisTest, ChronicStragglerIsCountedPerRank) {
  JobStreamSpec spec;
  spec.ranks = 4;
  for (uint32_t k = 10; k <= 70; k += 10)
    spec.inject.push_back({JobInjection::kGpuWork, 3, k, 10'000'000});
  const auto a = AnalyzeJob(InputsOf(testing::MakeJobStream(spec)));
  EXPECT_EQ(a.ranks[3].culprit_of, 7u);
  for (uint32_t r = 0; r < 3; ++r) EXPECT_EQ(a.ranks[r].culprit_of, 0u);
  EXPECT_EQ(a.ranks[0].steps, spec.steps);
  EXPECT_GT(a.ranks[0].median_wait_ns, 0u);
  EXPECT_GT(a.ranks[0].median_work_ns, a.ranks[0].median_wait_ns);
}

TEST(JobAnalysisTest, HangNamesTheRankBehind) {
  for (uint32_t ranks : {2u, 8u}) {
    JobStreamSpec spec;
    spec.ranks = ranks;
    spec.steps = 60;
    spec.inject = {{JobInjection::kHang, ranks - 1, 50, 0}};
    const auto a = AnalyzeJob(InputsOf(testing::MakeJobStream(spec)));
    EXPECT_TRUE(a.hang.hung);
    EXPECT_EQ(a.hang.behind, std::vector<uint32_t>{ranks - 1});
    EXPECT_EQ(a.hang.waiting_at, 2 * 49);  // the first all-reduce of step 50
    for (uint32_t r = 0; r + 1 < ranks; ++r) {
      EXPECT_EQ(a.ranks[r].unfinished_collectives, 1u);
      EXPECT_EQ(a.ranks[r].completed_collectives, 2u * 49);
      EXPECT_EQ(a.ranks[r].last_kernel, "_Z10gemm_wgradPKfS0_Pf");  // step 50's backward ran
    }
    EXPECT_EQ(a.ranks[ranks - 1].unfinished_collectives, 0u);
    EXPECT_EQ(a.ranks[ranks - 1].last_collective, 2 * 49 - 1);
    EXPECT_EQ(a.ranks[ranks - 1].last_kernel, "_Z19adam_multi_tensor_aPPfi");
    EXPECT_TRUE(a.slow.empty());
  }
}

// Steps as regular as a clock, and instance ends that spread across the ranks by more than the
// steps' own jitter (processes time-sliced on one GPU, as tools/gpu-check-job runs them): the
// gaps cannot tell offset 0 from a shift by one, so the wall clocks, here right, must decide. On
// the H100 such a job was matched one instance off, and its hang blamed the wrong rank.
TEST(JobAnalysisTest, PeriodicCollectivesWithSpreadEndsFollowTheWallClock) {
  constexpr uint32_t kRanks = 3, kSteps = 150;
  constexpr uint64_t kStep = 6'380'000, kT0 = 1'000'000'000;
  uint64_t seed = 12345;
  const auto jitter = [&](uint64_t range) {  // deterministic, in [0, range)
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (seed >> 33) % range;
  };
  std::vector<RankInput> in(kRanks);
  for (uint32_t r = 0; r < kRanks; ++r) {
    RankInput& x = in[r];
    x.label = "rank " + std::to_string(r);
    x.names = {"work", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
    const int64_t wall_minus_cupti = 1'700'000'000'000'000'000 + r * 50'000;  // same host
    for (uint32_t s = 0; s < kSteps; ++s) {
      const uint64_t since = kT0 + s * kStep + jitter(2'000);
      const uint64_t coll_end = kT0 + s * kStep + 5'000'000 + jitter(300'000);  // spread 300 us
      x.spans.push_back({since + 1'000, since + 1'000'000,
                         static_cast<int64_t>(since + 1'000'000) + wall_minus_cupti, 0, 7, false});
      x.spans.push_back({since + 1'100'000, coll_end, static_cast<int64_t>(coll_end) + wall_minus_cupti,
                         1, 9, true});
      x.steps.push_back({s + 1, since, coll_end, static_cast<int64_t>(since) + wall_minus_cupti,
                         static_cast<int64_t>(coll_end) + wall_minus_cupti});
    }
  }
  const JobAnalysis a = AnalyzeJob(in);
  ASSERT_EQ(a.streams.size(), 1u);
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_EQ(a.streams[0].offset[r], 0) << "rank " << r;
    EXPECT_EQ(a.streams[0].matched[r], kSteps) << "rank " << r;
  }
}

// As the H200 run of tools/gpu-check-job's hang case had it: steps in a cycle of three lengths,
// and ranks that see each instance end later by the phase of the time slice. Rank 1's ends lag by
// exactly what makes its gaps those of the reference shifted by one instance, so the gaps alone
// pick offset 1. Rank 1 also stops before the last collective, which ranks 0 and 2 are still
// in. On one host the wall clock is one clock: offset 0, and rank 1 is the one behind.
TEST(JobAnalysisTest, RanksOfOneHostFollowTheirSharedClockOverPhaseLaggedEnds) {
  constexpr uint32_t kRanks = 3, kSteps = 150;
  constexpr uint64_t kCycle[3] = {6'380'000, 6'380'000, 5'640'000};
  constexpr uint64_t kT0 = 1'000'000'000;
  for (const std::string other_host : {"vm", "other-host"}) {
    std::vector<RankInput> in(kRanks);
    for (uint32_t r = 0; r < kRanks; ++r) {
      RankInput& x = in[r];
      x.label = "rank " + std::to_string(r);
      x.who = {.label = x.label, .rank = r, .rank_from_header = true, .pid = 100 + r,
               .host = r == 0 ? "vm" : other_host, .job = "j", .paths = {}};
      x.names = {"work", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
      const int64_t wall_minus_cupti = 1'700'000'000'000'000'000;
      uint64_t t = kT0;
      const uint32_t steps = r == 1 ? kSteps : kSteps + 1;  // rank 1 hangs before the last
      for (uint32_t s = 0; s < steps; ++s) {
        const uint64_t since = t, work_end = since + 1'000'000;
        // Instance s ends at t + 5 ms for every rank; ranks 1 and 2 see it later by a lag that
        // follows the cycle (the lag of instance s is kCycle[s % 3] - 5.64 ms).
        const uint64_t lag = r == 0 ? 0 : kCycle[s % 3] - kCycle[2];
        const uint64_t coll_end = since + 5'000'000 + lag;
        x.spans.push_back({since + 1'000, work_end, static_cast<int64_t>(work_end) + wall_minus_cupti,
                           0, 7, false});
        if (s == kSteps) {  // ranks 0 and 2 wait in the last collective for rank 1
          x.unfinished.push_back({1, 9, true});
          break;
        }
        x.spans.push_back({since + 1'100'000, coll_end,
                           static_cast<int64_t>(coll_end) + wall_minus_cupti, 1, 9, true});
        x.steps.push_back({s + 1, since, coll_end, static_cast<int64_t>(since) + wall_minus_cupti,
                           static_cast<int64_t>(coll_end) + wall_minus_cupti});
        t += kCycle[s % 3];
      }
    }
    const JobAnalysis a = AnalyzeJob(in);
    ASSERT_EQ(a.streams.size(), 1u);
    if (other_host != "vm") {
      // Two clocks: the gaps decide, and they take the shift (what the shared clock prevents).
      EXPECT_EQ(a.streams[0].offset[1], 1);
      continue;
    }
    for (uint32_t r = 0; r < kRanks; ++r) EXPECT_EQ(a.streams[0].offset[r], 0) << "rank " << r;
    EXPECT_TRUE(a.hang.hung);
    EXPECT_EQ(a.hang.behind, std::vector<uint32_t>{1});
    EXPECT_EQ(a.hang.waiting_at, static_cast<int64_t>(kSteps));
  }
}

TEST(JobAnalysisTest, RangeKeepsTheStepsThatStartInIt) {
  JobStreamSpec spec;
  spec.ranks = 2;
  const auto inputs = InputsOf(testing::MakeJobStream(spec));
  JobOptions o;
  o.from_wall = inputs[0].steps[19].wall_start;
  o.to_wall = inputs[0].steps[30].wall_start;
  const auto a = AnalyzeJob(inputs, o);
  ASSERT_EQ(a.steps.size(), 11u);
  EXPECT_EQ(a.steps.front().number, 20u);
  EXPECT_EQ(a.steps.back().number, 30u);
}

TEST(JobAnalysisTest, RanksWithoutCollectivesStillGetFigures) {
  JobStreamSpec spec;
  spec.ranks = 1;
  spec.inject = {{JobInjection::kHostGap, 0, 30, 20'000'000}};
  auto inputs = InputsOf(testing::MakeJobStream(spec));
  const auto a = AnalyzeJob(inputs);
  ASSERT_EQ(a.slow.size(), 1u);
  EXPECT_EQ(a.steps[a.slow[0]].verdict.what, VerdictClass::kHostGap);  // against its own past
  // No NCCL at all: no job steps, and it says so.
  for (GpuSpan& s : inputs[0].spans) s.collective = false;
  const auto none = AnalyzeJob(inputs);
  EXPECT_TRUE(none.steps.empty());
  EXPECT_TRUE(none.streams.empty());
  EXPECT_EQ(none.unplaced_steps[0], spec.steps);
}

}  // namespace
}  // namespace cupmon::decoder::job

// Helpers for the job analysis tests: synthetic jobs (tests/decoder/job_stream.h) as the
// analysis' input, and a comparison of two analyses step by step.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "job/job_analysis.h"
#include "job_stream.h"

namespace cupmon::decoder::job {

inline std::vector<RankInput> InputsOf(const testing::JobStreamTruth& job) {
  std::vector<RankInput> out;
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    const auto& t = job.ranks[r];
    RankInput in;
    in.label = "rank " + std::to_string(r);
    in.who.rank = static_cast<uint32_t>(r);
    in.who.pid = 5000 + static_cast<uint32_t>(r);
    in.who.host = t.host;
    in.names = job.names;
    for (const auto& k : t.kernels) {
      const bool coll = IsCollectiveName(job.names[k.name]);
      if (!k.end) {
        in.unfinished.push_back({k.name, k.stream, coll});
        continue;
      }
      in.spans.push_back({k.start, k.end, static_cast<int64_t>(k.end) + t.wall_minus_cupti, k.name,
                          k.stream, coll});
    }
    std::reverse(in.spans.begin(), in.spans.end());  // any order will do
    for (size_t i = 0; i < t.steps.size(); ++i)
      in.steps.push_back({i + 1, t.steps[i].since, t.steps[i].end,
                          static_cast<int64_t>(t.steps[i].since) + t.wall_minus_cupti,
                          static_cast<int64_t>(t.steps[i].end) + t.wall_minus_cupti});
    out.push_back(std::move(in));
  }
  return out;
}

inline void ExpectSameStep(const JobStep& a, const JobStep& b) {
  EXPECT_EQ(a.number, b.number);
  EXPECT_EQ(a.step_ns, b.step_ns) << a.number;
  EXPECT_EQ(a.rolling_median_ns, b.rolling_median_ns) << a.number;
  EXPECT_EQ(a.shortest_collective_ns, b.shortest_collective_ns) << a.number;
  EXPECT_EQ(a.slow, b.slow) << a.number;
  EXPECT_EQ(a.verdict.what, b.verdict.what) << a.number;
  EXPECT_EQ(a.verdict.culprit, b.verdict.culprit) << a.number;
  EXPECT_EQ(a.verdict.excess_ns, b.verdict.excess_ns) << a.number;
  EXPECT_EQ(a.verdict.culprit_ns, b.verdict.culprit_ns) << a.number;
  EXPECT_EQ(a.verdict.kernel, b.verdict.kernel) << a.number;
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    const RankStep &x = a.ranks[r], &y = b.ranks[r];
    EXPECT_EQ(x.present, y.present) << a.number << " " << r;
    EXPECT_EQ(x.number, y.number);
    EXPECT_EQ(x.step_ns, y.step_ns);
    EXPECT_EQ(x.work_alone_ns, y.work_alone_ns);
    EXPECT_EQ(x.collective_alone_ns, y.collective_alone_ns);
    EXPECT_EQ(x.both_ns, y.both_ns);
    EXPECT_EQ(x.idle_ns, y.idle_ns);
    EXPECT_EQ(x.wait_ns, y.wait_ns);
    EXPECT_EQ(x.host_gap_ns, y.host_gap_ns);
    EXPECT_EQ(x.collectives, y.collectives);
    EXPECT_EQ(x.wall_start, y.wall_start);
    EXPECT_EQ(x.wall_end, y.wall_end);
  }
}

}  // namespace cupmon::decoder::job

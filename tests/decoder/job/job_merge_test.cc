// Tests decoder/src/job/job_merge.cc: tables merged from files, a block of job steps at a time,
// give what the analysis in memory gives, step for step; the sink sees every step in order.
#include "job/job_merge.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "job/job_test_util.h"
#include "job_stream.h"

namespace cupmon::decoder::job {
namespace {

namespace fs = std::filesystem;
using testing::JobInjection;

class Collect : public JobStepSink {
 public:
  void OnStep(const JobStep& s) override { steps.push_back(s); }
  std::vector<JobStep> steps;
};

TEST(JobMergeTest, FilesInSmallBlocksMergeAsInMemory) {
  const fs::path dir = fs::temp_directory_path() / ("cupmon-job-merge-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  testing::JobStreamSpec spec;
  spec.ranks = 8;
  spec.first_step = {1, 1, 1, 12, 1, 1, 40, 1};
  spec.inject = {{JobInjection::kGpuWork, 5, 30, 20'000'000},
                 {JobInjection::kHostGap, 2, 50, 40'000'000},
                 {JobInjection::kCollectives, 0, 70, 15'000'000}};
  const auto inputs = InputsOf(testing::MakeJobStream(spec));
  JobOptions o;
  o.from_wall = inputs[0].steps[4].wall_start;  // from step 5 on: the range counts too
  const JobAnalysis memory = AnalyzeJob(inputs, o);
  ASSERT_EQ(memory.slow.size(), 3u);
  std::vector<RankTableFile> files;
  for (size_t r = 0; r < inputs.size(); ++r) {
    const std::string path = (dir / ("rank" + std::to_string(r) + ".cupmon-job")).string();
    ASSERT_TRUE(WriteRankTable(path, BuildRankTable(inputs[r])).has_value());
    auto f = RankTableFile::Open(path);
    ASSERT_TRUE(f.has_value()) << f.error().message;
    files.push_back(std::move(*f));
  }
  const FileTables tables(std::move(files));
  for (size_t block : {size_t{1}, size_t{8 * 7}, size_t{65536}}) {
    o.rows_per_block = block;
    Collect sink;
    auto merged = MergeJob(tables, o, &sink);
    ASSERT_TRUE(merged.has_value()) << merged.error().message;
    ASSERT_EQ(sink.steps.size(), memory.steps.size()) << block;
    EXPECT_EQ(merged->step_count, memory.steps.size());
    for (size_t j = 0; j < sink.steps.size(); ++j) ExpectSameStep(sink.steps[j], memory.steps[j]);
    // With a sink, the analysis keeps the slow steps only, in the same order of excess.
    ASSERT_EQ(merged->slow.size(), memory.slow.size());
    for (size_t i = 0; i < merged->slow.size(); ++i)
      ExpectSameStep(merged->steps[merged->slow[i]], memory.steps[memory.slow[i]]);
    EXPECT_EQ(merged->problems, memory.problems);
    EXPECT_EQ(merged->unplaced_steps, memory.unplaced_steps);
    EXPECT_EQ(merged->first_wall_start, memory.steps.front().ranks[memory.reference].wall_start);
    EXPECT_EQ(merged->last_wall_end, memory.steps.back().ranks[memory.reference].wall_end);
    for (size_t r = 0; r < inputs.size(); ++r) {
      EXPECT_EQ(merged->ranks[r].median_wait_ns, memory.ranks[r].median_wait_ns);
      EXPECT_EQ(merged->ranks[r].median_host_gap_ns, memory.ranks[r].median_host_gap_ns);
      EXPECT_EQ(merged->ranks[r].culprit_of, memory.ranks[r].culprit_of);
      EXPECT_EQ(merged->ranks[r].steps, memory.ranks[r].steps);
    }
  }
  fs::remove_all(dir);
}

TEST(JobMergeTest, ATableDamagedAfterOpeningIsAnErrorNamingIt) {
  const fs::path dir = fs::temp_directory_path() / ("cupmon-job-merge-bad-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  testing::JobStreamSpec spec;
  spec.ranks = 2;
  const auto inputs = InputsOf(testing::MakeJobStream(spec));
  std::vector<RankTableFile> files;
  for (size_t r = 0; r < 2; ++r) {
    const std::string path = (dir / ("rank" + std::to_string(r) + ".cupmon-job")).string();
    ASSERT_TRUE(WriteRankTable(path, BuildRankTable(inputs[r])).has_value());
    files.push_back(std::move(*RankTableFile::Open(path)));
  }
  fs::remove(dir / "rank1.cupmon-job");
  auto merged = MergeJob(FileTables(std::move(files)), {});
  ASSERT_FALSE(merged.has_value());
  EXPECT_NE(merged.error().message.find("rank1.cupmon-job: cannot open"), std::string::npos)
      << merged.error().message;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cupmon::decoder::job

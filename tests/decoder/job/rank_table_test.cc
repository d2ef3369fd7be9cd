// Tests decoder/src/job/rank_table.cc: a rank's table as the analysis needs it, its file form read
// back as written, and files cut short or damaged refused with their name and what is wrong.
#include "job/rank_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "job/job_analysis.h"
#include "job/job_test_util.h"
#include "job_stream.h"

namespace cupmon::decoder::job {
namespace {

namespace fs = std::filesystem;

class RankTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cupmon-rank-table-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

RankTable TableOfRank(uint32_t rank, testing::JobStreamSpec spec = {}) {
  spec.ranks = std::max(spec.ranks, rank + 1);
  auto inputs = InputsOf(testing::MakeJobStream(spec));
  inputs[rank].who.host = "node7";
  inputs[rank].who.job = "4242";
  inputs[rank].who.paths = {"/tmp/cupmon/4242"};
  return BuildRankTable(inputs[rank]);
}

TEST_F(RankTableTest, HoldsEachStepsSplitCollectivesAndWorkByName) {
  const RankTable t = TableOfRank(1);
  ASSERT_EQ(t.rows.size(), 80u);
  ASSERT_EQ(t.header.streams.size(), 1u);
  EXPECT_EQ(t.header.streams[0].key, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_EQ(t.header.streams[0].instances, 160u);
  ASSERT_EQ(t.sequences[0].size(), 160u);
  for (size_t k = 0; k < t.rows.size(); ++k) {
    const TableRow& r = t.rows[k];
    EXPECT_EQ(r.work_alone_ns + r.collective_alone_ns + r.both_ns + r.idle_ns, r.end - r.since);
    ASSERT_EQ(r.streams.size(), 1u);
    EXPECT_EQ(r.streams[0].first, 2 * k);  // two all-reduces a step
    ASSERT_EQ(r.streams[0].durations.size(), 2u);
    EXPECT_EQ(r.streams[0].durations[0],
              t.sequences[0][2 * k].end - t.sequences[0][2 * k].start);
    EXPECT_EQ(r.collectives, 2u);
    // Forward, backward and optimizer kernels: five names.
    EXPECT_EQ(r.work_by_name.size(), 5u);
  }
  EXPECT_EQ(t.header.completed_collectives, 160u);
  EXPECT_EQ(t.header.last_kernel, "_Z19adam_multi_tensor_aPPfi");
}

TEST_F(RankTableTest, FileReadsBackAsWritten) {
  const RankTable t = TableOfRank(2);
  const std::string path = (dir_ / "rank2.cupmon-job").string();
  ASSERT_TRUE(WriteRankTable(path, t).has_value());
  auto f = RankTableFile::Open(path);
  ASSERT_TRUE(f.has_value()) << f.error().message;
  const RankTableHeader& h = f->header();
  EXPECT_EQ(h.who.label, "rank 2");
  EXPECT_EQ(h.who.host, "node7");
  EXPECT_EQ(h.who.job, "4242");
  EXPECT_EQ(h.who.paths, std::vector<std::string>{"/tmp/cupmon/4242"});
  EXPECT_EQ(h.names, t.header.names);
  EXPECT_EQ(h.rows, 80u);
  auto seq = f->Sequences();
  ASSERT_TRUE(seq.has_value()) << seq.error().message;
  ASSERT_EQ(seq->size(), 1u);
  for (size_t i = 0; i < t.sequences[0].size(); ++i) {
    EXPECT_EQ((*seq)[0][i].start, t.sequences[0][i].start);
    EXPECT_EQ((*seq)[0][i].end, t.sequences[0][i].end);
    EXPECT_EQ((*seq)[0][i].wall_end, t.sequences[0][i].wall_end);
  }
  // Rows in two reads: the first stops at row 30 and leaves it unread.
  std::vector<TableRow> rows;
  uint64_t pos = 0;
  ASSERT_TRUE(f->Rows(&pos, [&](const TableRow& r) {
                 if (r.number > 30) return false;
                 rows.push_back(r);
                 return true;
               }).has_value());
  EXPECT_EQ(rows.size(), 30u);
  ASSERT_TRUE(f->Rows(&pos, [&](const TableRow& r) {
                 rows.push_back(r);
                 return true;
               }).has_value());
  ASSERT_EQ(rows.size(), t.rows.size());
  for (size_t k = 0; k < rows.size(); ++k) {
    const TableRow &a = rows[k], &b = t.rows[k];
    EXPECT_EQ(a.number, b.number);
    EXPECT_EQ(a.since, b.since);
    EXPECT_EQ(a.end, b.end);
    EXPECT_EQ(a.wall_start, b.wall_start);
    EXPECT_EQ(a.wall_end, b.wall_end);
    EXPECT_EQ(a.work_alone_ns, b.work_alone_ns);
    EXPECT_EQ(a.both_ns, b.both_ns);
    EXPECT_EQ(a.idle_ns, b.idle_ns);
    EXPECT_EQ(a.host_gap_ns, b.host_gap_ns);
    ASSERT_EQ(a.streams.size(), b.streams.size());
    EXPECT_EQ(a.streams[0].durations, b.streams[0].durations);
    ASSERT_EQ(a.work_by_name.size(), b.work_by_name.size());
    for (size_t i = 0; i < a.work_by_name.size(); ++i)
      EXPECT_EQ(a.work_by_name[i].ns, b.work_by_name[i].ns);
  }
}

TEST_F(RankTableTest, CutDamagedAndForeignFilesAreRefused) {
  const std::string path = (dir_ / "rank0.cupmon-job").string();
  ASSERT_TRUE(WriteRankTable(path, TableOfRank(0)).has_value());
  const auto size = fs::file_size(path);
  auto bytes = [&] {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  auto write = [&](const std::string& name, const std::string& content) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << content;
    return p;
  };
  auto cut = RankTableFile::Open(write("cut.cupmon-job", bytes.substr(0, size * 2 / 3)));
  ASSERT_FALSE(cut.has_value());
  EXPECT_NE(cut.error().message.find("cut.cupmon-job: cut short"), std::string::npos)
      << cut.error().message;
  auto foreign = RankTableFile::Open(write("foreign.cupmon-job", "CUPMON\n" + bytes));
  ASSERT_FALSE(foreign.has_value());
  EXPECT_NE(foreign.error().message.find("not a cupmon job table"), std::string::npos);
  std::string newer = bytes;
  newer[7] = 9;
  auto version = RankTableFile::Open(write("newer.cupmon-job", newer));
  ASSERT_FALSE(version.has_value());
  EXPECT_NE(version.error().message.find("another version"), std::string::npos);
  // A row's length prefix damaged: the file opens (its size is right), its rows do not read.
  std::string damaged = bytes;
  const size_t last_row = damaged.size() - 60;
  for (size_t i = last_row; i < damaged.size(); ++i) damaged[i] = '\xff';
  auto f = RankTableFile::Open(write("damaged.cupmon-job", damaged));
  ASSERT_TRUE(f.has_value()) << f.error().message;
  uint64_t pos = 0;
  auto rows = f->Rows(&pos, [](const TableRow&) { return true; });
  ASSERT_FALSE(rows.has_value());
  EXPECT_NE(rows.error().message.find("damaged.cupmon-job: damaged row at byte"),
            std::string::npos)
      << rows.error().message;
}

TEST_F(RankTableTest, FindsTableFilesInDirectoriesAndOneLevelDown) {
  fs::create_directories(dir_ / "node1");
  fs::create_directories(dir_ / "node2" / "deeper");
  for (const fs::path& p : {dir_ / "node1" / "rank00000-a-1.cupmon-job",
                           dir_ / "node2" / "rank00001-b-2.cupmon-job",
                           dir_ / "node2" / "deeper" / "rank00002-c-3.cupmon-job",
                           dir_ / "node2" / "notes.txt"})
    std::ofstream(p) << "x";
  const auto found = FindTableFiles({dir_.string()});
  ASSERT_EQ(found.size(), 2u);
  EXPECT_TRUE(found[0].ends_with("node1/rank00000-a-1.cupmon-job"));
  EXPECT_TRUE(found[1].ends_with("node2/rank00001-b-2.cupmon-job"));
  EXPECT_EQ(FindTableFiles({(dir_ / "node2" / "deeper" / "rank00002-c-3.cupmon-job").string()})
                .size(),
            1u);
  EXPECT_TRUE(FindTableFiles({(dir_ / "node2" / "notes.txt").string()}).empty());
}

}  // namespace
}  // namespace cupmon::decoder::job

// OrderedParallel (decoder/src/ordered_parallel.h): results in order, the bound on work ahead,
// errors, progress, and a stop with work not taken; how many ranks the merged reports read at
// once (RankJobs, decoder/src/memory_room.h); and the merged reports that use them. Built into
// the ThreadSanitizer suite too (ctest label "threads").
#include "ordered_parallel.h"

#include <sys/resource.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cupmon/decoder/reports.h"
#include "memory_room.h"
#include "report_run.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {
// The text and exit codes cupmon-decode would show (report_run.h).
using ::cupmon::testing::ReportOptions;
using ::cupmon::testing::RunReport;
using ::cupmon::testing::kExitClean, ::cupmon::testing::kExitRegression,
    ::cupmon::testing::kExitUnusable, ::cupmon::testing::kExitWarnings;

using std::chrono::milliseconds;

struct Result {
  size_t i;
};

// Counts results alive (made by work, not yet destroyed by the taker) and the most at once.
struct Alive {
  std::atomic<int> now{0}, most{0};
  void Up() {
    const int n = ++now;
    int m = most.load();
    while (n > m && !most.compare_exchange_weak(m, n)) {
    }
  }
};

struct Counted : Result {
  Counted(size_t index, Alive* a) : Result{index}, alive(a) { alive->Up(); }
  ~Counted() { --alive->now; }
  Alive* alive;
};

const auto kNoTick = [](uint64_t) {};

TEST(OrderedParallelTest, ResultsComeInOrderWhateverOrderTheWorkEnds) {
  // Earlier pieces take longer, so later ones end first.
  OrderedParallel<Result> p(12, 4, [](size_t i, std::atomic<uint64_t>&) {
    std::this_thread::sleep_for(milliseconds(2 * (12 - i)));
    return std::make_unique<Result>(Result{i});
  });
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(p.Take(i, milliseconds(50), kNoTick)->i, i);
}

TEST(OrderedParallelTest, AtMostJobsResultsAheadOfTheOneHeld) {
  Alive alive;
  constexpr size_t kJobs = 3;
  OrderedParallel<Counted> p(20, kJobs, [&](size_t i, std::atomic<uint64_t>&) {
    return std::make_unique<Counted>(i, &alive);
  });
  for (size_t i = 0; i < 20; ++i) {
    auto r = p.Take(i, milliseconds(50), kNoTick);
    ASSERT_EQ(r->i, i);
    // The caller is slow with each result: the workers would run far ahead without the bound.
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_LE(alive.most.load(), static_cast<int>(kJobs) + 1);
  EXPECT_GE(alive.most.load(), 2);  // and they did run ahead
  EXPECT_EQ(alive.now.load(), 0);
}

TEST(OrderedParallelTest, AnErrorInOnePieceComesOutOfItsTakeAndTheOthersStillCome) {
  OrderedParallel<Result> p(4, 2, [](size_t i, std::atomic<uint64_t>&) -> std::unique_ptr<Result> {
    if (i == 1) throw std::runtime_error("rank 1 failed");
    return std::make_unique<Result>(Result{i});
  });
  EXPECT_EQ(p.Take(0, milliseconds(50), kNoTick)->i, 0u);
  try {
    p.Take(1, milliseconds(50), kNoTick);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "rank 1 failed");
  }
  EXPECT_EQ(p.Take(2, milliseconds(50), kNoTick)->i, 2u);
  EXPECT_EQ(p.Take(3, milliseconds(50), kNoTick)->i, 3u);
}

TEST(OrderedParallelTest, TheTakerSeesTheProgressOfAllPiecesWhileItWaits) {
  std::atomic<bool> release{false};
  OrderedParallel<Result> p(3, 3, [&](size_t i, std::atomic<uint64_t>& progress) {
    progress.store(100 * (i + 1));
    while (!release.load()) std::this_thread::sleep_for(milliseconds(1));
    return std::make_unique<Result>(Result{i});
  });
  std::vector<uint64_t> seen;
  auto r = p.Take(0, milliseconds(5), [&](uint64_t done) {
    seen.push_back(done);
    if (done == 600) release = true;  // all three have reported: 100 + 200 + 300
  });
  EXPECT_EQ(r->i, 0u);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), 600u);
  EXPECT_EQ(p.Progress(), 600u);
}

TEST(OrderedParallelTest, DestroyedWithWorkNotTakenItStartsNoMoreAndWaitsForTheRest) {
  std::atomic<int> started{0}, finished{0};
  {
    OrderedParallel<Result> p(50, 2, [&](size_t i, std::atomic<uint64_t>&) {
      ++started;
      std::this_thread::sleep_for(milliseconds(20));
      ++finished;
      return std::make_unique<Result>(Result{i});
    });
    EXPECT_EQ(p.Take(0, milliseconds(50), kNoTick)->i, 0u);
  }
  // Only the pieces within the bound were ever started, and every one that started finished.
  EXPECT_LE(started.load(), 3);
  EXPECT_EQ(started.load(), finished.load());
}

TEST(OrderedParallelTest, OneJobRunsThePiecesOneAfterAnother) {
  std::atomic<int> running{0}, most{0};
  OrderedParallel<Result> p(6, 1, [&](size_t i, std::atomic<uint64_t>&) {
    const int n = ++running;
    if (n > most) most = n;
    std::this_thread::sleep_for(milliseconds(2));
    --running;
    return std::make_unique<Result>(Result{i});
  });
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(p.Take(i, milliseconds(50), kNoTick)->i, i);
  EXPECT_EQ(most.load(), 1);
}

TEST(RankJobsTest, AskedJobsWinUpToTheRanksAndTheDefaultFillsTheCpus) {
  EXPECT_EQ(RankJobs(3, 5, 2), 3u);   // never more than the ranks
  EXPECT_EQ(RankJobs(10, 4, 2), 4u);  // as asked, whatever the CPUs
  EXPECT_EQ(RankJobs(1, 0, 2), 1u);
  const size_t cpus = std::max(1u, std::thread::hardware_concurrency());
  // Memory not known (0): the CPUs decide.
  EXPECT_EQ(RankJobs(100, 0, 1, 0), std::min<size_t>(cpus, kMaxRankJobs));
  EXPECT_EQ(RankJobs(100, 0, 2, 0), std::clamp<size_t>(cpus / 2, 1, kMaxRankJobs));
}

TEST(RankJobsTest, TheDefaultReadsNoMoreRanksAtOnceThanTheMemoryHolds) {
  const size_t cpus = std::max(1u, std::thread::hardware_concurrency());
  const size_t by_cpus = std::min<size_t>(cpus, kMaxRankJobs);
  EXPECT_EQ(RankJobs(100, 0, 1, 1), 1u);  // nothing left: one at a time still
  EXPECT_EQ(RankJobs(100, 0, 1, kBytesPerRankRead - 1), 1u);
  EXPECT_EQ(RankJobs(100, 0, 1, 2 * kBytesPerRankRead), std::min<size_t>(by_cpus, 2));
  EXPECT_EQ(RankJobs(100, 0, 1, uint64_t{1} << 40), by_cpus);  // a TiB: the CPUs decide
  EXPECT_EQ(RankJobs(100, 6, 1, 1), 6u);                       // asked: as asked
}

TEST(RankJobsTest, MemoryRoomReadsMeminfoAndCgroupLimits) {
  EXPECT_EQ(MeminfoAvailable("MemTotal: 8000 kB\nMemFree: 10 kB\nMemAvailable:    2048 kB\n"),
            2048u * 1024);
  EXPECT_EQ(MeminfoAvailable("MemTotal:       8000 kB\n"), 0u);
  EXPECT_EQ(MeminfoAvailable(""), 0u);
  EXPECT_EQ(CgroupRoom("max\n", "5000\n"), 0u);  // no limit
  EXPECT_EQ(CgroupRoom("1000\n", "400\n"), 600u);
  EXPECT_EQ(CgroupRoom("1000\n", "2000\n"), 1u);  // over it already: known, none left
  EXPECT_EQ(CgroupRoom("", ""), 0u);               // no such file
  EXPECT_EQ(CgroupRoom("1000\n", ""), 0u);
  EXPECT_EQ(CgroupRoom("9223372036854771712\n", "5926756352\n"), 0u);  // v1: no limit
  // This machine's: /proc/meminfo has MemAvailable on every kernel since 3.14.
  EXPECT_GT(MemoryRoom(), 0u);
}

// Writes `text` to `dir`/`name`, making `dir` first.
void WriteFileIn(const std::string& dir, const std::string& name, const std::string& text) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + name) << text;
}

TEST(RankJobsTest, TheTightestCgroupOnTheWayUpBoundsTheRoom) {
  testing::TempDir root;
  const std::string r = root.path();
  // cgroup v2: the process's cgroup has no limit, its parent leaves 700, the grandparent 900.
  WriteFileIn(r + "/job/step/task", "memory.max", "max\n");
  WriteFileIn(r + "/job/step/task", "memory.current", "5000\n");
  WriteFileIn(r + "/job/step", "memory.max", "1000\n");
  WriteFileIn(r + "/job/step", "memory.current", "300\n");
  WriteFileIn(r + "/job", "memory.max", "2000\n");
  WriteFileIn(r + "/job", "memory.current", "1100\n");
  EXPECT_EQ(CgroupsRoom("0::/job/step/task\n", r), 700u);
  // v1: the memory controller's hierarchy under root/memory, memory among other controllers;
  // the other controllers' lines are not read.
  WriteFileIn(r + "/memory/batch/42", "memory.limit_in_bytes", "4096\n");
  WriteFileIn(r + "/memory/batch/42", "memory.usage_in_bytes", "1024\n");
  WriteFileIn(r + "/memory/batch", "memory.limit_in_bytes", "9223372036854771712\n");  // none
  WriteFileIn(r + "/memory/batch", "memory.usage_in_bytes", "8192\n");
  EXPECT_EQ(CgroupsRoom("12:cpu,cpuacct:/other\n7:pids,memory:/batch/42\n", r), 3072u);
  // Both (a hybrid layout): the least of them.
  EXPECT_EQ(CgroupsRoom("7:memory:/batch/42\n0::/job/step/task\n", r), 700u);
  // Over its limit already: known, and none left.
  WriteFileIn(r + "/full", "memory.max", "100\n");
  WriteFileIn(r + "/full", "memory.current", "150\n");
  EXPECT_EQ(CgroupsRoom("0::/full\n", r), 1u);
  // Nothing known: no limit anywhere, cgroups that are not there, the root cgroup, no text.
  EXPECT_EQ(CgroupsRoom("0::/job/step/task\n", r + "/elsewhere"), 0u);
  EXPECT_EQ(CgroupsRoom("0::/\n", r), 0u);
  EXPECT_EQ(CgroupsRoom("3:cpu:/job\n", r), 0u);
  EXPECT_EQ(CgroupsRoom("", r), 0u);
}

TEST(RankJobsTest, AnAddressSpaceLimitBoundsTheRoom) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizers map terabytes of shadow memory: no address-space limit fits";
#else
  const uint64_t unlimited = MemoryRoom();  // the system's and the cgroups' room
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &before), 0);
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  const uint64_t mapped = pages * 4096;
  const uint64_t room = uint64_t{300} << 20;
  if (before.rlim_max != RLIM_INFINITY && before.rlim_max < mapped + room)
    GTEST_SKIP() << "the hard address-space limit is below what this test sets";
  rlimit limited = before;
  limited.rlim_cur = mapped + room;
  ASSERT_EQ(setrlimit(RLIMIT_AS, &limited), 0);
  const uint64_t seen = MemoryRoom();
  ASSERT_EQ(setrlimit(RLIMIT_AS, &before), 0);
  EXPECT_GT(seen, 0u);
  EXPECT_LE(seen, room);  // what is mapped by now counts against it too
  EXPECT_GE(seen, std::min(unlimited, room - (uint64_t{64} << 20)));
#endif
}

// tests/data/ddp-2rank's two ranks (a third recording, the launcher's, is left out) read at once
// print what they print read in turn (summary, info, steps, the HTML report): both ranks in
// order, the merged parts, warnings and exit code.
TEST(RankJobsTest, MergedReportsReadAtOncePrintWhatTheyPrintReadInTurn) {
  const std::string job = std::string(CUPMON_SOURCE_DIR) + "/tests/data/ddp-2rank";
  for (ReportKind kind :
       {ReportKind::kSummary, ReportKind::kInfo, ReportKind::kSteps, ReportKind::kReport}) {
    SCOPED_TRACE(static_cast<int>(kind));
    ReportOptions in_turn, at_once;
    in_turn.jobs = 1;
    at_once.jobs = 2;
    std::ostringstream out1, err1, out2, err2;
    const int rc1 = RunReport(kind, job, in_turn, out1, err1);
    const int rc2 = RunReport(kind, job, at_once, out2, err2);
    EXPECT_EQ(rc1, kExitClean) << err1.str();
    EXPECT_EQ(rc2, rc1);
    EXPECT_EQ(out2.str(), out1.str());
    EXPECT_EQ(err2.str(), err1.str());
    EXPECT_NE(out1.str().find("rank 1"), std::string::npos) << out1.str();
  }
}

// diff reads the ranks of both sides at once when they share no recording: the same table,
// warnings and exit code as read in turn; and in turn (steps found once) when they share one.
TEST(RankJobsTest, DiffReadsBothSidesAtOncePrintingWhatItPrintsReadInTurn) {
  const std::string data = std::string(CUPMON_SOURCE_DIR) + "/tests/data/";
  struct Case {
    const char* what;
    std::vector<std::string> paths;
    std::optional<uint32_t> rank_a, rank_b, window_a;
  };
  const Case cases[] = {
      {"two recordings", {data + "sample", data + "synthetic-sample"}, {}, {}, {}},
      {"two ranks of a job", {data + "ddp-2rank", data + "ddp-2rank"}, 0, 1, {}},
      {"a side without its window", {data + "sample", data + "synthetic-sample"}, {}, {}, 99},
      {"one recording twice (shared steps)", {data + "sample", data + "sample"}, {}, {}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ReportOptions in_turn, at_once;
    for (ReportOptions* o : {&in_turn, &at_once}) {
      o->diff.a.rank = c.rank_a;
      o->diff.b.rank = c.rank_b;
      o->diff.a.window = c.window_a;
    }
    in_turn.jobs = 1;
    at_once.jobs = 2;
    std::ostringstream out1, err1, out2, err2;
    const int rc1 = RunReport(ReportKind::kDiff, c.paths, in_turn, out1, err1);
    const int rc2 = RunReport(ReportKind::kDiff, c.paths, at_once, out2, err2);
    EXPECT_EQ(rc2, rc1);
    EXPECT_EQ(out2.str(), out1.str());
    EXPECT_EQ(err2.str(), err1.str());
    if (c.window_a) {
      EXPECT_EQ(rc1, kExitUnusable);
      EXPECT_NE(err1.str().find("there is no window 99"), std::string::npos) << err1.str();
    } else {
      EXPECT_NE(out1.str().find("==cupmon== diff (B against A)"), std::string::npos)
          << err1.str();
    }
  }
}

}  // namespace
}  // namespace cupmon::decoder

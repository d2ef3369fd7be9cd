// Multi-rank merge: ListRanks (directories, per-rank subdirectories, rank numbering, jobs) and the
// merged reports (summary per rank and in total, one chrome-json timeline on a wall-clock axis,
// info's window spread), with synthetic ranks whose CUPTI clocks are deliberately offset.
#include "cupmon/decoder/rank_listing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "cupmon/decoder/reports.h"
#include "report_run.h"
#include "json_parser.h"
#include "recording_builder.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {
// The text and exit codes cupmon-decode would show (report_run.h).
using ::cupmon::testing::ReportOptions;
using ::cupmon::testing::RunReport;
using ::cupmon::testing::kExitClean, ::cupmon::testing::kExitRegression,
    ::cupmon::testing::kExitUnusable, ::cupmon::testing::kExitWarnings;

namespace fs = std::filesystem;
using testing::BufferBuilder;
using testing::Json;
using testing::JsonParser;
using testing::kT0;

constexpr uint64_t kGemm = 0x7f0000002000;
constexpr int64_t kSecond = 1'000'000'000;

// One synthetic rank (TEST DOUBLE data). Its CUPTI clock reads wall clock minus `clock_offset`,
// and its calibration samples say so; every event is placed at a wall-clock time, so ranks with
// different offsets describe the same instants with different CUPTI timestamps.
struct RankSpec {
  uint32_t pid = 1000;
  std::optional<int32_t> rank;
  std::string job = "job-42";
  int64_t clock_offset = 0;
  uint32_t kernels = 1;  // gemm kernels, 10 us each, each launched by cudaLaunchKernel
  bool window = true;
  int64_t window_delay = 0;  // wall-clock ns added to the window's begin
  std::string command = "train.py";
};

// Wall-clock instants shared by every rank.
constexpr int64_t kWindowWall = static_cast<int64_t>(kT0) + 1'000;
constexpr int64_t kFirstKernelWall = static_cast<int64_t>(kT0) + 100'000;

void WriteRank(const std::string& dir, const RankSpec& spec) {
  fs::create_directories(dir);
  pb::RecordingHeader h = testing::SyntheticHeader(0xabc000 + spec.pid, spec.pid);
  h.set_command_line(1, spec.command);
  if (spec.rank) h.set_rank(*spec.rank);
  h.set_world_size(3);
  if (!spec.job.empty()) h.set_job_id(spec.job);
  RecordingWriter w(testing::WriterOptions(dir, "cupmon-" + std::to_string(spec.pid)), h);
  ASSERT_TRUE(w.Open().has_value());
  auto cupti = [&](int64_t wall) { return static_cast<uint64_t>(wall - spec.clock_offset); };

  std::vector<pb::StringEntry> strings(1);
  strings[0].set_id(1), strings[0].set_pointer(kGemm), strings[0].set_text("_Z4gemmv");
  w.AddStrings(strings);
  pb::Calibration cal;
  for (int64_t at : {static_cast<int64_t>(kT0), static_cast<int64_t>(kT0) + 50'000'000}) {
    auto* s = cal.add_samples();
    s->set_cupti_ns(cupti(at));
    s->set_realtime_ns(at);
    s->set_monotonic_ns(at - static_cast<int64_t>(kT0) + 1000);
  }
  w.WriteCalibration(cal);
  pb::WindowMarker begin;
  begin.set_window_id(1);
  begin.set_edge(pb::WindowMarker::BEGIN);
  begin.set_source(pb::TRIGGER_SOCKET);
  begin.set_cupti_ns(cupti(kWindowWall + spec.window_delay));
  begin.set_requested_ms(20);
  if (spec.window) w.WriteWindowMarker(begin);

  BufferBuilder api, gpu;
  for (uint32_t k = 0; k < spec.kernels; ++k) {
    const int64_t at = kFirstKernelWall + k * 20'000;
    api.Runtime(cupti(at - 5'000), cupti(at - 1'000), k + 1, 211);  // cudaLaunchKernel
    gpu.Kernel(cupti(at), cupti(at + 10'000), k + 1, kGemm);
  }
  w.WriteRawBuffer(gpu.bytes(), 1, 7);
  w.WriteRawBuffer(api.bytes(), 0, 0);
  pb::WindowMarker end = begin;
  end.set_edge(pb::WindowMarker::END);
  end.set_cupti_ns(cupti(kWindowWall + spec.window_delay + 20'000'000));
  if (spec.window) w.WriteWindowMarker(end);
  w.WriteStats(static_cast<int64_t>(kT0) + 30'000'000);
  w.Close(static_cast<int64_t>(kT0) + 30'000'000);
}

// Three ranks of one job in job/rank0..2 with CUPTI clocks 0, +5 s and -3.5 s off wall clock.
std::vector<RankSpec> ThreeRanks() {
  std::vector<RankSpec> specs(3);
  const int64_t offsets[] = {0, 5 * kSecond, -3 * kSecond - kSecond / 2 + 123};
  for (uint32_t i = 0; i < 3; ++i) {
    specs[i].pid = 1000 + i;
    specs[i].rank = static_cast<int32_t>(i);
    specs[i].clock_offset = offsets[i];
    specs[i].kernels = i + 1;
  }
  return specs;
}

struct Result {
  int rc = -1;
  std::string out, err;
};

Result Decode(ReportKind kind, const std::vector<std::string>& paths, ReportOptions opt = {}) {
  std::ostringstream out, err;
  Result r;
  r.rc = RunReport(kind, paths, opt, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// The text between the line containing `from` and the next line containing `to` (or the end).
std::string Section(const std::string& text, const std::string& from, const std::string& to) {
  const size_t a = text.find(from);
  if (a == std::string::npos) return {};
  const size_t b = to.empty() ? std::string::npos : text.find(to, a + from.size());
  return text.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

// "Time" and "Calls" of the table row naming `name` in `section`.
std::pair<std::string, uint64_t> TableRow(const std::string& section, const std::string& name) {
  std::istringstream lines(section);
  std::string line;
  static const std::regex row(R"(([0-9.]+)%\s+(\S+)\s+([0-9]+)\s)");
  while (std::getline(lines, line)) {
    if (line.size() < name.size() ||
        line.compare(line.size() - name.size(), name.size(), name) != 0)
      continue;
    std::smatch m;
    if (std::regex_search(line, m, row)) return {m[2], std::stoull(m[3])};
  }
  return {"", 0};
}

class MergeReportTest : public ::testing::Test {
 protected:
  std::vector<std::string> WriteAll(const std::vector<RankSpec>& specs) {
    std::vector<std::string> dirs;
    for (size_t i = 0; i < specs.size(); ++i) {
      dirs.push_back(job() + "/rank" + std::to_string(i));
      WriteRank(dirs.back(), specs[i]);
    }
    return dirs;
  }
  std::string job() const { return tmp_.path() + "/job"; }
  testing::TempDir tmp_;
};

TEST_F(MergeReportTest, SummaryPerRankAndTotalHasExactCounts) {
  const auto dirs = WriteAll(ThreeRanks());
  const Result r = Decode(ReportKind::kSummary, dirs);
  ASSERT_EQ(r.rc, kExitClean) << r.err << r.out;
  for (uint32_t i = 0; i < 3; ++i) {
    const std::string label =
        "rank " + std::to_string(i) + " (synthetic-host:" + std::to_string(1000 + i) + ")";
    const std::string section =
        Section(r.out, "==cupmon== " + label + ": Recording",
                i < 2 ? "==cupmon== rank " + std::to_string(i + 1) : "==cupmon== Merged");
    ASSERT_FALSE(section.empty()) << label << "\n" << r.out;
    const auto gemm = TableRow(section, "  gemm");  // "gemm()", by its short name
    EXPECT_EQ(gemm.second, i + 1) << section;
    EXPECT_EQ(gemm.first, std::to_string(10 * (i + 1)) + ".000us") << section;
    EXPECT_EQ(TableRow(section, "cudaLaunchKernel").second, i + 1) << section;
  }
  const std::string total = Section(r.out, "==cupmon== Total profiling result (3 ranks)", "");
  ASSERT_FALSE(total.empty()) << r.out;
  EXPECT_EQ(TableRow(total, "  gemm"), std::make_pair(std::string("60.000us"), uint64_t{6}))
      << total;
  EXPECT_EQ(TableRow(total, "cudaLaunchKernel"),
            std::make_pair(std::string("24.000us"), uint64_t{6}));
  EXPECT_NE(r.out.find("==cupmon== Merged: 3 ranks, job job-42"), std::string::npos) << r.out;
}

TEST_F(MergeReportTest, ChromeTimelineAlignsOffsetClocksWithinOneMicrosecond) {
  const auto specs = ThreeRanks();
  WriteAll(specs);
  ReportOptions opt;
  opt.format = ExportFormat::kChromeJson;
  const Result r = Decode(ReportKind::kExport, {job()}, opt);  // rank0..2 found one level down
  ASSERT_EQ(r.rc, kExitClean) << r.err;
  Json root;
  ASSERT_TRUE(JsonParser(r.out).Parse(&root));
  std::map<uint32_t, std::string> process_names;
  std::map<uint32_t, double> window_ts, first_kernel_ts;
  std::map<uint32_t, int> kernels, api_calls;
  for (const Json& e : root.fields["traceEvents"].items) {
    const auto& f = e.fields;
    const uint32_t pid = static_cast<uint32_t>(f.at("pid").number);
    const std::string& ph = f.at("ph").text;
    const std::string& name = f.at("name").text;
    if (ph == "M" && name == "process_name")
      process_names[pid] = f.at("args").fields.at("name").text;
    if (ph != "X") continue;
    const double ts = f.at("ts").number;
    if (name == "window 1") window_ts[pid] = ts;
    if (f.at("cat").text == "kernel") {
      ++kernels[pid];
      if (!first_kernel_ts.count(pid) || ts < first_kernel_ts[pid]) first_kernel_ts[pid] = ts;
    }
    if (f.at("cat").text == "cuda_runtime") ++api_calls[pid];
  }
  // One process per rank under its own pid, named "rank N (host:pid)".
  for (uint32_t i = 0; i < 3; ++i) {
    const uint32_t pid = 1000 + i;
    EXPECT_EQ(process_names[pid].rfind(
                  "rank " + std::to_string(i) + " (synthetic-host:" + std::to_string(pid) + ")", 0),
              0u)
        << process_names[pid];
    EXPECT_EQ(api_calls[pid], static_cast<int>(i + 1));
    ASSERT_TRUE(window_ts.count(pid)) << "no window slice for pid " << pid;
  }
  ASSERT_EQ(first_kernel_ts.size(), 3u);  // one GPU process per rank
  // The same wall-clock instants line up although the CUPTI clocks are seconds apart.
  for (uint32_t i = 1; i < 3; ++i)
    EXPECT_NEAR(window_ts[1000 + i], window_ts[1000], 1.0) << "rank " << i;
  double lo = 1e300, hi = -1e300;
  for (const auto& [pid, ts] : first_kernel_ts) lo = std::min(lo, ts), hi = std::max(hi, ts);
  EXPECT_LT(hi - lo, 1.0);
  // ... at the right place: the axis starts at the earliest process start (kT0 - 1 s).
  EXPECT_NEAR(window_ts[1000],
              static_cast<double>(kWindowWall - (static_cast<int64_t>(kT0) - kSecond)) / 1e3, 1.0);
  std::map<int, int> kernel_counts;
  for (const auto& [pid, n] : kernels) ++kernel_counts[n];
  EXPECT_EQ(kernel_counts, (std::map<int, int>{{1, 1}, {2, 1}, {3, 1}}));
}

TEST_F(MergeReportTest, TracesAndExportsLabelEachRank) {
  const auto dirs = WriteAll(ThreeRanks());
  ReportOptions opt;
  opt.format = ExportFormat::kJsonl;
  const Result jsonl = Decode(ReportKind::kExport, dirs, opt);
  ASSERT_EQ(jsonl.rc, kExitClean) << jsonl.err;
  std::map<int, int> rows_by_rank;
  std::istringstream lines(jsonl.out);
  std::string line;
  while (std::getline(lines, line)) {
    Json v;
    ASSERT_TRUE(JsonParser(line).Parse(&v)) << line;
    ++rows_by_rank[static_cast<int>(v.fields.at("rank").number)];
  }
  EXPECT_EQ(rows_by_rank, (std::map<int, int>{{0, 2}, {1, 4}, {2, 6}}));
  opt.format = ExportFormat::kCsv;
  const Result csv = Decode(ReportKind::kExport, dirs, opt);
  EXPECT_NE(csv.out.find("annotation,launched_before_window,short_name,rank\n"), std::string::npos)
      << csv.out;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 1 + 12);
  const Result trace = Decode(ReportKind::kGpuTrace, dirs);
  for (uint32_t i = 0; i < 3; ++i)
    EXPECT_NE(trace.out.find("==cupmon== rank " + std::to_string(i) +
                             " (synthetic-host:" + std::to_string(1000 + i) + "): Recording"),
              std::string::npos)
        << trace.out;
}

TEST_F(MergeReportTest, InfoShowsWindowBeginsAndTheirSpread) {
  auto specs = ThreeRanks();
  specs[2].window_delay = 300'000;  // rank 2 opened its window 300 us late
  WriteAll(specs);
  const Result r = Decode(ReportKind::kInfo, {job()});
  ASSERT_EQ(r.rc, kExitClean) << r.err;
  EXPECT_NE(r.out.find("Ranks: 3, job job-42"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 1 (synthetic-host:1001): recording 0xabc3e9"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("rank 0 (synthetic-host:1000)  2026-01-01T00:00:00.000001000Z  20.000ms"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("rank 1 (synthetic-host:1001)  2026-01-01T00:00:00.000001000Z  20.000ms"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("rank 2 (synthetic-host:1002)  2026-01-01T00:00:00.000301000Z"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("spread of begins: 300.00us"), std::string::npos) << r.out;
}

TEST_F(MergeReportTest, RankWithoutWindowIsReported) {
  auto specs = ThreeRanks();
  specs[2].window = false;
  const auto dirs = WriteAll(specs);
  const Result r = Decode(ReportKind::kSummary, dirs);
  EXPECT_EQ(r.rc, kExitWarnings);
  EXPECT_NE(
      r.err.find("rank 2 (synthetic-host:1002) has no trace window that other ranks have (#1)"),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("Total profiling result (3 ranks)"), std::string::npos);
  const Result info = Decode(ReportKind::kInfo, dirs);
  EXPECT_NE(info.out.find("(no such window)"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("spread of begins: 0ns (missing on 1 rank(s))"), std::string::npos)
      << info.out;
}

TEST_F(MergeReportTest, DamagedRankIsReportedAndTheRestMerged) {
  const auto dirs = WriteAll(ThreeRanks());
  // Rank 1: overwrite bytes in the middle of its file (past the preamble). Rank 2: an empty file.
  const std::string bad = testing::CupmonFiles(dirs[1]).at(0);
  std::vector<uint8_t> bytes = testing::ReadAll(bad);
  ASSERT_GT(bytes.size(), 500u);
  for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 64; ++i) bytes[i] ^= 0xA5;
  testing::WriteAll(bad, bytes);
  const std::string empty = testing::CupmonFiles(dirs[2]).at(0);
  testing::WriteAll(empty, {});
  const Result r = Decode(ReportKind::kSummary, dirs);
  EXPECT_EQ(r.rc, kExitWarnings) << r.err;
  EXPECT_NE(r.err.find("rank 1 (synthetic-host:1001): " + bad), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 1 (synthetic-host:1001) is damaged"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("refused: " + empty + ": empty file"), std::string::npos) << r.err;
  // Ranks 0 and 1 are still merged; rank 0's rows are all there.
  EXPECT_NE(r.out.find("Total profiling result (2 ranks)"), std::string::npos) << r.out;
  const std::string rank0 =
      Section(r.out, "==cupmon== rank 0 (synthetic-host:1000): Recording", "==cupmon== rank 1");
  EXPECT_EQ(TableRow(rank0, "  gemm").second, 1u) << r.out;
}

TEST_F(MergeReportTest, UnrelatedJobsAreReportedAndStillMerged) {
  auto specs = ThreeRanks();
  specs[2].job = "job-7";
  specs[2].rank = 0;
  const auto dirs = WriteAll(specs);
  const Result r = Decode(ReportKind::kSummary, dirs);
  EXPECT_EQ(r.rc, kExitWarnings);
  EXPECT_NE(r.err.find("recordings of 2 different jobs are mixed together"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rank 0 (synthetic-host:1002) job job-7, recording 0xabc3ea in " + dirs[2]),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rank 1 (synthetic-host:1001) job job-42, recording 0xabc3e9"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("Total profiling result (3 ranks)"), std::string::npos);
  EXPECT_EQ(TableRow(Section(r.out, "Total profiling result", ""), "  gemm").second, 6u);

  // Without job ids, different command lines mean different jobs.
  testing::TempDir other;
  std::vector<RankSpec> plain(2);
  plain[0].job = plain[1].job = "";
  plain[1].pid = 1001;
  plain[1].command = "serve.py";
  WriteRank(other.path() + "/a", plain[0]);
  WriteRank(other.path() + "/b", plain[1]);
  const Result p = Decode(ReportKind::kInfo, {other.path()});
  EXPECT_EQ(p.rc, kExitWarnings);
  EXPECT_NE(
      p.err.find("\n    synthetic-host:1001 (no job id: python serve.py), recording 0xabc3e9"),
      std::string::npos)
      << p.err;
  // Each such process is a job of its own: none is called "rank 0".
  EXPECT_NE(p.err.find("\n    synthetic-host:1000 (no job id: "), std::string::npos) << p.err;
  EXPECT_EQ(p.err.find("rank 0"), std::string::npos) << p.err;
  EXPECT_EQ(p.out.find("rank 0"), std::string::npos) << p.out;
}

TEST_F(MergeReportTest, LauncherWithoutRankOrActivityIsLeftOutWithANote) {
  // torchrun initialises CUDA to count devices, so injection gives it a recording with no rank,
  // no job id and no activity (seen on the 2-GPU machine).
  auto specs = ThreeRanks();
  RankSpec launcher;
  launcher.pid = 999;
  launcher.rank.reset();
  launcher.job = "";
  launcher.kernels = 0;
  launcher.window = false;
  launcher.command = "torchrun --nproc_per_node 3 train.py";
  specs.push_back(launcher);
  const auto dirs = WriteAll(specs);
  const Result r = Decode(ReportKind::kSummary, dirs);
  EXPECT_EQ(r.rc, kExitClean) << r.err;
  EXPECT_NE(r.err.find("left out: synthetic-host:999 (python torchrun --nproc_per_node 3 train.py), "
                       "recording 0xabc3e7 in " + dirs[3] + ": no rank and no activity records"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("different jobs"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("Total profiling result (3 ranks)"), std::string::npos) << r.out;

  // A recording with a rank is kept even when it holds nothing: a silent rank is a finding.
  testing::TempDir other;
  auto kept = ThreeRanks();
  kept[2].kernels = 0;
  kept[2].window = false;
  for (size_t i = 0; i < kept.size(); ++i) WriteRank(other.path() + "/rank" + std::to_string(i), kept[i]);
  const Result k = Decode(ReportKind::kSummary, {other.path()});
  EXPECT_EQ(k.err.find("left out"), std::string::npos) << k.err;
  EXPECT_NE(k.out.find("Total profiling result (3 ranks)"), std::string::npos) << k.out;

  // A launcher-like recording that did GPU work is a process of its own and stays.
  testing::TempDir busy;
  auto with_busy = ThreeRanks();
  launcher.kernels = 2;
  with_busy.push_back(launcher);
  for (size_t i = 0; i < with_busy.size(); ++i)
    WriteRank(busy.path() + "/p" + std::to_string(i), with_busy[i]);
  const Result b = Decode(ReportKind::kSummary, {busy.path()});
  EXPECT_EQ(b.err.find("left out"), std::string::npos) << b.err;
  EXPECT_NE(b.out.find("Total profiling result (4 ranks)"), std::string::npos) << b.out;
}

TEST(ReportNotesTest, ClockDomainChangeIsANoteNotAWarning) {
  // torch.profiler's timestamp callback switches CUPTI's clock for the rest of the process (seen
  // on the H200); each domain is mapped with its own samples, so it is said once, exit code 0.
  testing::TempDir tmp;
  RecordingWriter w(testing::WriterOptions(tmp.path()), testing::SyntheticHeader(0xd0d0, 77));
  ASSERT_TRUE(w.Open().has_value());
  pb::Calibration cal;
  auto add = [&](uint64_t cupti, int64_t wall) {
    auto* s = cal.add_samples();
    s->set_cupti_ns(cupti);
    s->set_realtime_ns(wall);
  };
  const int64_t t0 = static_cast<int64_t>(kT0);
  add(kT0 + 3'000, t0);
  add(kT0 + 60 * kSecond + 3'000, t0 + 60 * kSecond);
  add(240 * kSecond + 100 * kSecond, t0 + 100 * kSecond);  // a monotonic-like domain
  add(240 * kSecond + 160 * kSecond, t0 + 160 * kSecond);
  w.WriteCalibration(cal);
  w.WriteStats(t0 + 170 * kSecond);
  w.Close(t0 + 170 * kSecond);
  const Result r = Decode(ReportKind::kInfo, {tmp.path()});
  EXPECT_EQ(r.rc, kExitClean) << r.err;
  EXPECT_NE(r.err.find("cupmon-decode: note: calibration: CUPTI's clock changed domain 1 time(s)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
}

// Real GPU bytes (tests/data/ddp-2rank/README.md): two torchrun ranks over NCCL on a 2x H200
// machine, both injected by one cupmon-run, one window opened on each for the same instant, plus
// torchrun's own empty recording.
TEST(RealTwoRankTest, MergesTheRanksLeavesTheLauncherOutAndShowsTheWindowSpread) {
  const std::string dir = std::string(CUPMON_SOURCE_DIR) + "/tests/data/ddp-2rank";
  const Result info = Decode(ReportKind::kInfo, {dir});
  EXPECT_EQ(info.rc, kExitClean) << info.err;
  EXPECT_NE(info.err.find("left out: vm:1532 ("), std::string::npos) << info.err;
  EXPECT_NE(info.out.find("Ranks: 2, job f2c22ece-effc-4568-9ebc-df0adb79b60a"), std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("rank 0 (vm:1611): recording 0x1dfa1596ccf02461, 1 file(s), 310731 records, "
                          "1 window(s), rank from the launcher, world size 2, local rank 0"),
            std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("rank 1 (vm:1612): recording 0x92f43a4d7a367698, 1 file(s), 311175 records, "
                          "1 window(s), rank from the launcher, world size 2, local rank 1"),
            std::string::npos)
      << info.out;
  // Each rank's CUPTI times through its own calibration: the windows opened 20 us apart.
  EXPECT_NE(info.out.find("    spread of begins: 20.148us\n"), std::string::npos) << info.out;

  const Result sum = Decode(ReportKind::kSummary, {dir});
  EXPECT_EQ(sum.rc, kExitClean) << sum.err;
  const std::string total = Section(sum.out, "Total profiling result (2 ranks)", "");
  ASSERT_FALSE(total.empty()) << sum.out;
  // By their short names ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)").
  EXPECT_EQ(TableRow(total, "  ncclDevKernel_AllReduce_Sum_f32_RING_LL").second, 6082u);
  EXPECT_EQ(TableRow(total, "  ncclDevKernel_Broadcast_RING_LL").second, 8u);
  EXPECT_EQ(TableRow(total, "[CUDA memcpy DtoD]").second, 73012u);
}

TEST(RankListingTest, NumbersRanksFromHeaderElseByHostAndPid) {
  testing::TempDir tmp;
  // Header ranks run against pid order: the header wins.
  RankSpec a, b;
  a.pid = 2000, a.rank = 1;
  b.pid = 2001, b.rank = 0;
  WriteRank(tmp.path() + "/x", a);
  WriteRank(tmp.path() + "/x", b);  // two processes in one directory
  auto listing = ListRanks({tmp.path() + "/x"});
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->ranks.size(), 2u);
  EXPECT_EQ(listing->ranks[0].recording.header.pid(), 2001u);
  EXPECT_EQ(listing->ranks[0].label, "rank 0 (synthetic-host:2001)");
  EXPECT_TRUE(listing->ranks[0].rank_from_header);
  EXPECT_TRUE(listing->warnings.empty());

  // No header ranks: (host, pid) order.
  testing::TempDir tmp2;
  for (uint32_t pid : {3002u, 3000u, 3001u}) {
    RankSpec s;
    s.pid = pid;
    WriteRank(tmp2.path() + "/r" + std::to_string(pid), s);
  }
  listing = ListRanks({tmp2.path()});
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->ranks.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(listing->ranks[i].rank, i);
    EXPECT_EQ(listing->ranks[i].recording.header.pid(), 3000 + i);
    EXPECT_FALSE(listing->ranks[i].rank_from_header);
  }

  // Repeated header ranks: warned, numbered by (host, pid).
  testing::TempDir tmp3;
  RankSpec c, d;
  c.pid = 4001, c.rank = 0;
  d.pid = 4000, d.rank = 0;
  WriteRank(tmp3.path(), c);
  WriteRank(tmp3.path(), d);
  listing = ListRanks({tmp3.path()});
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->ranks.size(), 2u);
  EXPECT_EQ(listing->ranks[0].recording.header.pid(), 4000u);
  ASSERT_EQ(listing->warnings.size(), 1u);
  EXPECT_NE(listing->warnings[0].find("rank numbers repeat in job job-42"), std::string::npos);
}

TEST(RankListingTest, SearchesSubdirectoriesOneLevelOrRecursively) {
  testing::TempDir tmp;
  RankSpec a, b;
  a.pid = 10, a.rank = 0;
  b.pid = 11, b.rank = 1;
  WriteRank(tmp.path() + "/node0/rank0", a);
  WriteRank(tmp.path() + "/node1/rank1", b);
  auto shallow = ListRanks({tmp.path()});
  ASSERT_TRUE(shallow.has_value());
  EXPECT_TRUE(shallow->ranks.empty());
  auto deep = ListRanks({tmp.path()}, RankListingOptions{.recursive = true});
  ASSERT_TRUE(deep.has_value());
  EXPECT_EQ(deep->ranks.size(), 2u);
  auto listed = ListRanks({tmp.path() + "/node0", tmp.path() + "/node1"});
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ(listed->ranks.size(), 2u);

  // A path given twice is read once; a missing path next to a usable one is a warning.
  auto twice =
      ListRanks({tmp.path() + "/node0", tmp.path() + "/node0/rank0", tmp.path() + "/nope"});
  ASSERT_TRUE(twice.has_value());
  ASSERT_EQ(twice->ranks.size(), 1u);
  EXPECT_EQ(twice->ranks[0].recording.files.size(), 1u);
  ASSERT_EQ(twice->warnings.size(), 1u);
  EXPECT_NE(twice->warnings[0].find("nope: no such file or directory"), std::string::npos);
  EXPECT_FALSE(ListRanks({tmp.path() + "/nope"}).has_value());
}

TEST(RankListingTest, OneRecordingGivesTheSingleRecordingReport) {
  testing::TempDir tmp;
  testing::WriteSampleRecording(tmp.path() + "/rank0");
  ReportOptions opt;
  std::ostringstream single, merged, err;
  ASSERT_EQ(RunReport(ReportKind::kSummary, tmp.path() + "/rank0", opt, single, err), kExitClean);
  ASSERT_EQ(
      RunReport(ReportKind::kSummary, std::vector<std::string>{tmp.path(), tmp.path() + "/rank0"},
                opt, merged, err),
      kExitClean)
      << err.str();
  EXPECT_EQ(merged.str(), single.str());
  EXPECT_EQ(single.str().find("rank "), std::string::npos);
}

}  // namespace
}  // namespace cupmon::decoder

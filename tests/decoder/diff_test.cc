// `cupmon-decode diff` (decoder/src/commands/diff_report.cc) and DurationHistogram: synthetic training loops
// (test double) with one kernel made slower, the real two-rank recording, windows, time ranges and
// the arguments it refuses.
#include "cupmon/decoder/diff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/reports.h"
#include "report_run.h"
#include "cupmon/decoder/trace_builder.h"
#include "json_parser.h"
#include "step_stream.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {
// The text and exit codes cupmon-decode would show (report_run.h).
using ::cupmon::testing::ReportOptions;
using ::cupmon::testing::RunReport;
using ::cupmon::testing::kExitClean, ::cupmon::testing::kExitRegression,
    ::cupmon::testing::kExitUnusable, ::cupmon::testing::kExitWarnings;

using testing::Json;

TEST(DurationHistogramTest, ExactBelow128AndWithinTheStatedBoundAbove) {
  DurationHistogram h, left, right;
  std::vector<uint64_t> all;
  uint64_t lcg = 99;
  for (int i = 0; i < 20000; ++i) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    // Log-uniform over 1 ns .. ~1 s, so every range of buckets is exercised.
    const auto v =
        static_cast<uint64_t>(std::exp2(static_cast<double>(lcg >> 34) / (1u << 30) * 30));
    all.push_back(v);
    h.Add(v);
    (i % 2 ? left : right).Add(v);
  }
  std::sort(all.begin(), all.end());
  left.Merge(right);
  EXPECT_EQ(h.count(), all.size());
  EXPECT_EQ(h.min(), all.front());
  EXPECT_EQ(h.max(), all.back());
  for (double q : {0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    const size_t rank =
        std::max<size_t>(1, static_cast<size_t>(std::ceil(q * static_cast<double>(all.size()))));
    const uint64_t exact = all[rank - 1];
    const uint64_t got = h.Quantile(q);
    if (exact < 128) {
      EXPECT_EQ(got, exact) << "q " << q;
    }
    EXPECT_LE(std::fabs(static_cast<double>(got) - static_cast<double>(exact)),
              DurationHistogram::kRelativeError * static_cast<double>(exact))
        << "q " << q << " exact " << exact << " got " << got;
    EXPECT_EQ(left.Quantile(q), got) << "merged halves differ at q " << q;
  }
  for (uint64_t v : {0ull, 127ull, 128ull, 255ull, 256ull, 1000ull, 123456789ull, 1ull << 61}) {
    const uint32_t b = DurationHistogram::BucketOf(v);
    EXPECT_LE(DurationHistogram::BucketFloor(b), v);
    EXPECT_GT(DurationHistogram::BucketFloor(b + 1), v);
  }
}

// One line of jsonl output per object.
std::vector<Json> Lines(const std::string& text) {
  std::vector<Json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    Json j;
    EXPECT_TRUE(testing::JsonParser(line).Parse(&j)) << line;
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<Json> OfType(const std::vector<Json>& lines, const std::string& type) {
  std::vector<Json> out;
  for (const Json& j : lines)
    if (j.fields.at("type").text == type) out.push_back(j);
  return out;
}

class DiffTest : public ::testing::Test {
 protected:
  std::string Run(const std::vector<std::string>& paths, ReportOptions o, int* rc) {
    std::ostringstream out, err;
    *rc = RunReport(ReportKind::kDiff, paths, o, out, err);
    err_ = err.str();
    return out.str();
  }
  static ReportOptions Jsonl() {
    ReportOptions o;
    o.diff.format = DiffFormat::kJsonl;
    return o;
  }
  testing::TempDir a_, b_;
  std::string err_;
};

TEST_F(DiffTest, RecordingAgainstItselfHasNoChangeAndPassesTheGate) {
  testing::StepStreamSpec spec;
  spec.steps = 40;
  testing::WriteStepRecording(a_.path(), spec);
  ReportOptions o = Jsonl();
  o.diff.fail_above = 0.1;
  int rc = -1;
  const std::string jsonl = Run({a_.path(), a_.path()}, o, &rc);
  EXPECT_EQ(rc, kExitClean) << err_;
  EXPECT_NE(jsonl.find("\"fail_above_pct\":0.100,\"regression\":false"), std::string::npos);
  const auto lines = Lines(jsonl);
  const auto names = OfType(lines, "name");
  ASSERT_GE(names.size(), 10u);
  for (const Json& n : names) {
    EXPECT_EQ(n.fields.at("status").text, "both");
    EXPECT_EQ(n.fields.at("delta_total_ns").number, 0) << n.fields.at("name").text;
    EXPECT_EQ(n.fields.at("a").fields.at("p99_ns").number,
              n.fields.at("b").fields.at("p99_ns").number);
  }
  const Json v = OfType(lines, "verdict").at(0);
  EXPECT_EQ(v.fields.at("metric").text, "gpu_time_per_step");
  EXPECT_EQ(v.fields.at("change_pct").number, 0);
  EXPECT_EQ(v.fields.at("text").text.rfind("B is as fast as A (+0.0%)", 0), 0u)
      << v.fields.at("text").text;

  o.diff.format = DiffFormat::kTable;
  const std::string table = Run({a_.path(), a_.path()}, o, &rc);
  EXPECT_EQ(rc, kExitClean);
  EXPECT_NE(table.find("gate: +0.0% <= --fail-above 0.1%: pass"), std::string::npos) << table;
  EXPECT_NE(table.find("steps: median +0.0%"), std::string::npos) << table;
}

TEST_F(DiffTest, KernelTwiceAsSlowComesFirstWithItsExactDeltaAndFailsTheGate) {
  testing::StepStreamSpec spec;
  spec.steps = 60;
  testing::WriteStepRecording(a_.path(), spec);
  spec.wgrad_factor = 2;
  testing::WriteStepRecording(b_.path(), spec);
  // Every gemm_wgrad lasts `dur` in A (12 us in warm-up steps, 6 us after), one per layer and step.
  const uint64_t expected =
      uint64_t{spec.layers} * (spec.warmup * 12'000 + (spec.steps - spec.warmup) * 6'000);
  ReportOptions o = Jsonl();
  o.diff.fail_above = 5;
  int rc = -1;
  const std::string jsonl = Run({a_.path(), b_.path()}, o, &rc);
  EXPECT_EQ(rc, kExitRegression) << err_;
  EXPECT_NE(jsonl.find("\"fail_above_pct\":5.000,\"regression\":true"), std::string::npos);
  const auto lines = Lines(jsonl);
  EXPECT_NE(err_.find("regression: B is"), std::string::npos) << err_;
  const auto names = OfType(lines, "name");
  ASSERT_GE(names.size(), 2u);
  const Json& first = names[0];
  EXPECT_EQ(first.fields.at("name").text, "gemm_wgrad(float const*, float const*, float*)");
  EXPECT_EQ(first.fields.at("kind").text, "kernel");
  EXPECT_EQ(first.fields.at("delta_total_ns").number, static_cast<double>(expected));
  EXPECT_NEAR(first.fields.at("change_pct").number, 100.0, 1e-9);
  const Json& fa = first.fields.at("a");
  const Json& fb = first.fields.at("b");
  EXPECT_EQ(fa.fields.at("calls").number, spec.layers * spec.steps);
  EXPECT_EQ(fb.fields.at("calls").number, fa.fields.at("calls").number);
  EXPECT_EQ(fa.fields.at("total_ns").number, static_cast<double>(expected));
  EXPECT_EQ(fa.fields.at("p50_ns").number, 6'000);  // exact: 6000 is a bucket floor's midpoint
  EXPECT_NEAR(fb.fields.at("p50_ns").number, 12'000, 12'000 * DurationHistogram::kRelativeError);
  for (size_t i = 1; i < names.size(); ++i)
    EXPECT_EQ(names[i].fields.at("delta_total_ns").number, 0) << names[i].fields.at("name").text;
  // The gate compares GPU time per step: the whole delta spread over the 60 steps of each side.
  const Json v = OfType(lines, "verdict").at(0);
  EXPECT_EQ(v.fields.at("metric").text, "gpu_time_per_step");
  EXPECT_NEAR(v.fields.at("b_ns").number - v.fields.at("a_ns").number,
              static_cast<double>(expected) / spec.steps, 0.01);
  EXPECT_GT(v.fields.at("change_pct").number, 5);
  const auto steps = OfType(lines, "steps").at(0);
  EXPECT_EQ(steps.fields.at("a").fields.at("count").number, spec.steps);
  EXPECT_EQ(steps.fields.at("b").fields.at("count").number, spec.steps);

  // --kernel applies to both sides: only gemm_wgrad's time per step is compared, doubled.
  ReportOptions only = Jsonl();
  only.filter.kernel.emplace("gemm_wgrad");
  const auto filtered = Lines(Run({a_.path(), b_.path()}, only, &rc));
  EXPECT_EQ(rc, kExitClean) << err_;
  EXPECT_EQ(OfType(filtered, "name").size(), 1u);
  const Json fv = OfType(filtered, "verdict").at(0);
  EXPECT_NEAR(fv.fields.at("a_ns").number, static_cast<double>(expected) / spec.steps, 0.01);
  EXPECT_NEAR(fv.fields.at("change_pct").number, 100.0, 1e-6);

  // The table names it first too, and the other way round B saves the same time.
  o.diff.format = DiffFormat::kTable;
  std::string table = Run({a_.path(), b_.path()}, o, &rc);
  EXPECT_EQ(rc, kExitRegression);
  const size_t header = table.find("  name\n");
  ASSERT_NE(header, std::string::npos) << table;
  const std::string row = table.substr(header + 7, table.find('\n', header + 7) - header - 7);
  EXPECT_NE(row.find("+3.0240ms"), std::string::npos) << row;
  EXPECT_NE(row.find("+100.0%"), std::string::npos) << row;
  EXPECT_NE(row.find("gemm_wgrad"), std::string::npos) << row;
  EXPECT_NE(table.find("slower than A in GPU time per step"), std::string::npos) << table;
  EXPECT_NE(table.find(": regression"), std::string::npos) << table;
  table = Run({b_.path(), a_.path()}, o, &rc);
  EXPECT_EQ(rc, kExitClean) << err_;
  EXPECT_NE(table.find("-3.0240ms"), std::string::npos) << table;
  EXPECT_NE(table.find("faster than A"), std::string::npos) << table;
  EXPECT_NE(table.find(": pass"), std::string::npos) << table;
}

TEST_F(DiffTest, CsvHasOneRowPerNameAndTheVerdictOnStderr) {
  testing::StepStreamSpec spec;
  spec.steps = 30;
  testing::WriteStepRecording(a_.path(), spec);
  spec.wgrad_factor = 3;
  testing::WriteStepRecording(b_.path(), spec);
  ReportOptions o;
  o.diff.format = DiffFormat::kCsv;
  int rc = -1;
  const std::string csv = Run({a_.path(), b_.path()}, o, &rc);
  EXPECT_EQ(rc, kExitClean) << err_;  // no --fail-above: no gate
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("kind,name,status,delta_total_ns,change_pct,calls_a,calls_b", 0), 0u);
  std::getline(in, line);
  EXPECT_EQ(line.rfind("kernel,\"gemm_wgrad(float const*, float const*, float*)\",both,", 0), 0u)
      << line;
  EXPECT_NE(line.find(",200.000,"), std::string::npos) << line;
  EXPECT_NE(err_.find("cupmon-decode: verdict: B is"), std::string::npos) << err_;
}

TEST_F(DiffTest, AddedAndRemovedNamesAreListedAsNewAndGone) {
  testing::StepStreamSpec spec;
  spec.steps = 30;
  spec.noise = false;
  testing::WriteStepRecording(a_.path(), spec);
  spec.noise = true;  // adds index_select and prefetch_copy kernels
  testing::WriteStepRecording(b_.path(), spec);
  int rc = -1;
  const auto names = OfType(Lines(Run({a_.path(), b_.path()}, Jsonl(), &rc)), "name");
  EXPECT_EQ(rc, kExitClean) << err_;
  std::map<std::string, std::string> status;
  for (const Json& n : names) status[n.fields.at("name").text] = n.fields.at("status").text;
  EXPECT_EQ(status["index_select(float const*, int const*, float*)"], "new");
  EXPECT_EQ(status["prefetch_copy(float*, float const*, int)"], "new");
  const auto back = OfType(Lines(Run({b_.path(), a_.path()}, Jsonl(), &rc)), "name");
  size_t gone = 0;
  for (const Json& n : back) {
    if (n.fields.at("status").text != "gone") continue;
    ++gone;
    EXPECT_EQ(n.fields.at("b").type, Json::kNull);
    EXPECT_LT(n.fields.at("delta_total_ns").number, 0);
  }
  EXPECT_EQ(gone, 2u);
}

// Rows an independent TraceBuilder pass counts with the same filter.
uint64_t GpuRows(const std::string& dir, const TraceFilter& f, std::optional<uint32_t> rank = {}) {
  struct Count : RowSink {
    uint64_t n = 0;
    void OnRow(const Row& r) override { n += r.type != RowType::kApi && r.valid_time; }
  };
  auto listing = ListRanks({dir});
  EXPECT_TRUE(listing.has_value());
  uint64_t n = 0;
  for (const Rank& r : listing->ranks) {
    if (rank && r.rank != *rank) continue;
    Count c;
    TraceBuilder b(f, &c);
    ReadIntegrity integrity;
    ReadRecording(r.recording, b, &integrity);
    b.Finish();
    n += c.n;
  }
  return n;
}

const std::string kDdp = std::string(CUPMON_SOURCE_DIR) + "/tests/data/ddp-2rank";
const std::string kSample = std::string(CUPMON_SOURCE_DIR) + "/tests/data/sample";

TEST_F(DiffTest, TwoRanksOfTheRealDdpRecording) {
  ReportOptions o = Jsonl();
  o.diff.a.rank = 0;
  o.diff.b.rank = 1;
  int rc = -1;
  const auto lines = Lines(Run({kDdp, kDdp}, o, &rc));
  EXPECT_EQ(rc, kExitClean) << err_;
  const auto sides = OfType(lines, "side");
  ASSERT_EQ(sides.size(), 2u);
  EXPECT_EQ(sides[0].fields.at("recordings").number, 1);
  EXPECT_EQ(sides[0].fields.at("gpu_activities").number, GpuRows(kDdp, {}, 0));
  EXPECT_EQ(sides[1].fields.at("gpu_activities").number, GpuRows(kDdp, {}, 1));
  bool nccl = false;
  for (const Json& n : OfType(lines, "name")) {
    if (n.fields.at("name").text.rfind("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0) != 0) continue;
    nccl = true;
    EXPECT_EQ(n.fields.at("a").fields.at("calls").number, 3041);  // tests/data/ddp-2rank/README.md
    EXPECT_EQ(n.fields.at("b").fields.at("calls").number, 3041);
  }
  EXPECT_TRUE(nccl);
  const auto steps = OfType(lines, "steps").at(0);
  EXPECT_EQ(steps.fields.at("a").fields.at("count").number, 1520);  // RealStepsTest
  EXPECT_EQ(steps.fields.at("b").fields.at("count").number, 1520);
}

TEST_F(DiffTest, AWholeRankAgainstItsOwnWindowComparesPerStep) {
  // Rank 0 of ddp-2rank, whole (A) against its 1 s window 1 (B).
  ReportOptions o = Jsonl();
  o.diff.a.rank = 0;
  o.diff.b.rank = 0;
  o.diff.b.window = 1;
  int rc = -1;
  const auto lines = Lines(Run({kDdp, kDdp}, o, &rc));
  EXPECT_EQ(rc, kExitClean) << err_;
  const auto sides = OfType(lines, "side");
  TraceFilter in_window;
  in_window.window = 1;
  const uint64_t window_rows = GpuRows(kDdp, in_window, 0);
  EXPECT_GT(window_rows, 0u);
  EXPECT_LT(window_rows, GpuRows(kDdp, {}, 0));
  EXPECT_EQ(sides.at(1).fields.at("gpu_activities").number, window_rows);
  EXPECT_EQ(sides.at(1).fields.at("range").text, "window 1");
  EXPECT_EQ(sides.at(0).fields.at("range").text, "");
  // Steps wholly inside the 1 s window only.
  const auto steps = OfType(lines, "steps").at(0);
  EXPECT_GT(steps.fields.at("b").fields.at("count").number, 0);
  EXPECT_LT(steps.fields.at("b").fields.at("count").number, 1520);
  // Different amounts of work in A and B: the per-step comparison still holds.
  EXPECT_EQ(OfType(lines, "verdict").at(0).fields.at("metric").text, "gpu_time_per_step");
}

TEST_F(DiffTest, TwoWindowsOfTheRealSampleMatchTheirOwnRowsAndTheGolden) {
  ReportOptions o = Jsonl();
  o.diff.a.window = 1;
  o.diff.b.window = 2;
  int rc = -1;
  const auto lines = Lines(Run({kSample, kSample}, o, &rc));
  EXPECT_EQ(rc, kExitClean) << err_;
  const auto sides = OfType(lines, "side");
  for (uint32_t w : {1u, 2u}) {
    TraceFilter f;
    f.window = w;
    EXPECT_EQ(sides.at(w - 1).fields.at("gpu_activities").number, GpuRows(kSample, f));
  }
  // Every name's calls in each window, as a summary of that window alone counts them.
  for (const Json& n : OfType(lines, "name")) {
    EXPECT_EQ(n.fields.at("status").text, "both") << n.fields.at("name").text;
    EXPECT_GT(n.fields.at("a").fields.at("calls").number, 0);
  }

  // The table, byte for byte (tests/data/golden/real-sample.diff-windows.txt; set
  // CUPMON_UPDATE_GOLDEN=1 to rewrite it), with the checkout's path made relative.
  o.diff.format = DiffFormat::kTable;
  std::string got = Run({kSample, kSample}, o, &rc);
  const std::string root = std::string(CUPMON_SOURCE_DIR) + "/";
  for (size_t at; (at = got.find(root)) != std::string::npos;) got.erase(at, root.size());
  const std::string path =
      std::string(CUPMON_SOURCE_DIR) + "/tests/data/golden/real-sample.diff-windows.txt";
  if (std::getenv("CUPMON_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::trunc) << got;
    return;
  }
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << "missing golden file " << path;
  std::stringstream want;
  want << f.rdbuf();
  EXPECT_EQ(got, want.str()) << "output differs from " << path;
}

TEST_F(DiffTest, TwoTimeRangesOfOneRecording) {
  testing::StepStreamSpec spec;
  spec.steps = 100;
  spec.noise = false;
  testing::WriteStepRecording(a_.path(), spec);
  ReportOptions o = Jsonl();
  o.diff.a.from_rel = 0;
  o.diff.a.to_rel = 70'000'000;
  o.diff.b.from_rel = 70'000'000;
  o.diff.b.to_rel = 90'000'000;
  int rc = -1;
  const auto lines = Lines(Run({a_.path(), a_.path()}, o, &rc));
  EXPECT_EQ(rc, kExitClean) << err_;
  const auto sides = OfType(lines, "side");
  TraceFilter fa, fb;
  fa.from_rel = 0, fa.to_rel = 70'000'000;
  fb.from_rel = 70'000'000, fb.to_rel = 90'000'000;
  EXPECT_EQ(sides.at(0).fields.at("gpu_activities").number, GpuRows(a_.path(), fa));
  EXPECT_EQ(sides.at(1).fields.at("gpu_activities").number, GpuRows(a_.path(), fb));
  EXPECT_EQ(sides.at(0).fields.at("range").text, "from +0ns, to +70.000ms");
  const auto steps = OfType(lines, "steps").at(0);
  const double na = steps.fields.at("a").fields.at("count").number;
  const double nb = steps.fields.at("b").fields.at("count").number;
  EXPECT_GT(na, 0);
  EXPECT_GT(nb, 0);
  EXPECT_LT(na + nb, spec.steps);  // ranges end at 90 ms, in the loop's middle
}

TEST_F(DiffTest, WithoutStepsTheGateComparesGpuTimePerCallAtAsMix) {
  // Three steps: too few repetitions for the kernel pattern, so no steps on either side.
  testing::StepStreamSpec spec;
  spec.steps = 3;
  testing::WriteStepRecording(a_.path(), spec);
  spec.wgrad_factor = 2;
  testing::WriteStepRecording(b_.path(), spec);
  struct Total : RowSink {
    double ns = 0;
    void OnRow(const Row& r) override {
      if (r.type != RowType::kApi && r.valid_time) ns += static_cast<double>(r.duration);
    }
  };
  auto listing = ListRanks({a_.path()});
  ASSERT_TRUE(listing.has_value());
  Total total;
  TraceBuilder builder(TraceFilter{}, &total);
  ReadIntegrity integrity;
  ReadRecording(listing->ranks.at(0).recording, builder, &integrity);
  builder.Finish();
  // Same names and calls on both sides; only gemm_wgrad's mean doubles (12 us in warm-up steps).
  const double wgrad = static_cast<double>(spec.layers * spec.steps * 12'000);
  ReportOptions o = Jsonl();
  o.diff.fail_above = 5;
  int rc = -1;
  const auto lines = Lines(Run({a_.path(), b_.path()}, o, &rc));
  const Json v = OfType(lines, "verdict").at(0);
  EXPECT_EQ(v.fields.at("metric").text, "gpu_time_per_call");
  EXPECT_EQ(OfType(lines, "steps").at(0).fields.at("a").type, Json::kNull);
  EXPECT_NEAR(v.fields.at("a_ns").number, total.ns, 0.01);
  EXPECT_NEAR(v.fields.at("b_ns").number, total.ns + wgrad, 0.01);
  EXPECT_NEAR(v.fields.at("change_pct").number, 100 * wgrad / total.ns, 1e-3);
  EXPECT_EQ(rc, 100 * wgrad / total.ns > 5 ? kExitRegression : kExitClean) << err_;
  EXPECT_NE(v.fields.at("text").text.find("steps: none found"), std::string::npos);
}

TEST_F(DiffTest, DamagedSideIsComparedWithAWarningAndTheGateStillDecides) {
  testing::StepStreamSpec spec;
  spec.steps = 60;
  testing::WriteStepRecording(a_.path(), spec);
  spec.wgrad_factor = 2;
  testing::WriteStepRecording(b_.path(), spec);
  const auto files = testing::CupmonFiles(b_.path());
  ASSERT_EQ(files.size(), 1u);
  auto bytes = testing::ReadAll(files[0]);
  bytes.resize(bytes.size() * 2 / 3);  // a crash mid-write: the last chunks are gone
  testing::WriteAll(files[0], bytes);
  int rc = -1;
  Run({a_.path(), b_.path()}, Jsonl(), &rc);
  EXPECT_EQ(rc, kExitWarnings) << err_;
  EXPECT_NE(err_.find("cupmon-decode: warning: B: "), std::string::npos) << err_;
  ReportOptions o = Jsonl();
  o.diff.fail_above = 5;
  Run({a_.path(), b_.path()}, o, &rc);
  EXPECT_EQ(rc, kExitRegression) << err_;  // 3 over 1: the regression is what CI must see
}

TEST_F(DiffTest, RefusesWhatItCannotCompare) {
  testing::StepStreamSpec spec;
  spec.steps = 20;
  testing::WriteStepRecording(a_.path(), spec);
  int rc = -1;
  ReportOptions o;
  Run({a_.path()}, o, &rc);
  EXPECT_EQ(rc, kExitUnusable);
  EXPECT_NE(err_.find("diff compares two recordings: cupmon-decode diff A B (got 1 path(s))"),
            std::string::npos)
      << err_;

  Run({a_.path(), a_.path() + "/missing"}, o, &rc);
  EXPECT_EQ(rc, kExitUnusable);
  EXPECT_NE(err_.find("cupmon-decode: B: "), std::string::npos) << err_;
  EXPECT_NE(err_.find("/missing"), std::string::npos) << err_;

  Run({a_.path(), b_.path()}, o, &rc);  // an empty directory
  EXPECT_EQ(rc, kExitUnusable);
  EXPECT_NE(err_.find("cupmon-decode: B: "), std::string::npos) << err_;

  ReportOptions w;
  w.diff.b.window = 9;
  Run({a_.path(), a_.path()}, w, &rc);
  EXPECT_EQ(rc, kExitUnusable);
  EXPECT_NE(err_.find("(window 9): there is no window 9 (windows: none)"), std::string::npos)
      << err_;

  ReportOptions inverted;
  inverted.diff.b.from_rel = 50'000'000;
  inverted.diff.b.to_rel = 10'000'000;
  Run({a_.path(), a_.path()}, inverted, &rc);
  EXPECT_EQ(rc, kExitUnusable);
  EXPECT_NE(err_.find("side B's range is empty (from +50.000ms, to +10.000ms)"), std::string::npos)
      << err_;

  ReportOptions beyond;
  beyond.diff.a.from_rel = 3'600'000'000'000;
  Run({a_.path(), a_.path()}, beyond, &rc);
  EXPECT_EQ(rc, kExitUnusable);
  EXPECT_NE(err_.find("no kernel, memcpy or memset in it (after the filters)"), std::string::npos)
      << err_;

  ReportOptions rank;
  rank.diff.a.rank = 5;
  Run({a_.path(), a_.path()}, rank, &rc);
  EXPECT_EQ(rc, kExitUnusable);
  EXPECT_NE(err_.find("A: no usable recording in " + a_.path() + " with rank 5"), std::string::npos)
      << err_;

  ReportOptions negative;
  negative.diff.fail_above = -1;
  Run({a_.path(), a_.path()}, negative, &rc);
  EXPECT_EQ(rc, kExitUnusable);
  EXPECT_NE(err_.find("--fail-above takes a percentage of 0 or more"), std::string::npos) << err_;
}

}  // namespace
}  // namespace cupmon::decoder

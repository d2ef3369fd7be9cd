// Golden tests: the synthetic sample recording decodes to the checked-in outputs in
// tests/data/golden/ (set CUPMON_UPDATE_GOLDEN=1 to rewrite them), and the chrome-json export
// parses as JSON with the fields the Trace Event Format requires.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <variant>

#include "cupmon/decoder/kernel_names.h"
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

using testing::Json;
using testing::JsonParser;

class GoldenTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::WriteSampleRecording(dir_.path()); }
  std::string Run(ReportKind kind, ExportFormat format = ExportFormat::kChromeJson, int* rc = nullptr) {
    ReportOptions opt;
    opt.format = format;
    std::ostringstream out, err;
    const int r = RunReport(kind, dir_.path(), opt, out, err);
    if (rc) *rc = r;
    EXPECT_EQ(r, kExitClean) << err.str();
    return out.str();
  }
  void Compare(const std::string& name, const std::string& got) {
    const std::string path = std::string(CUPMON_SOURCE_DIR) + "/tests/data/golden/" + name;
    if (std::getenv("CUPMON_UPDATE_GOLDEN")) {
      std::ofstream(path, std::ios::trunc) << got;
      return;
    }
    std::ifstream f(path);
    ASSERT_TRUE(f.good()) << "missing golden file " << path << " (run with CUPMON_UPDATE_GOLDEN=1)";
    std::stringstream want;
    want << f.rdbuf();
    EXPECT_EQ(got, want.str()) << "output differs from " << path;
  }
  testing::TempDir dir_;
};

TEST_F(GoldenTest, Summary) { Compare("summary.txt", Run(ReportKind::kSummary)); }
TEST_F(GoldenTest, GpuTrace) { Compare("gpu-trace.txt", Run(ReportKind::kGpuTrace)); }
TEST_F(GoldenTest, ApiTrace) { Compare("api-trace.txt", Run(ReportKind::kApiTrace)); }
TEST_F(GoldenTest, KernExec) { Compare("kern-exec.txt", Run(ReportKind::kKernExec)); }
TEST_F(GoldenTest, ExportCsv) { Compare("export.csv", Run(ReportKind::kExport, ExportFormat::kCsv)); }
TEST_F(GoldenTest, ExportJsonl) {
  const std::string out = Run(ReportKind::kExport, ExportFormat::kJsonl);
  Compare("export.jsonl", out);
  std::istringstream lines(out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    Json v;
    ASSERT_TRUE(JsonParser(line).Parse(&v)) << line;
    EXPECT_EQ(v.type, Json::kObject);
    ++n;
  }
  EXPECT_EQ(n, 9 + 8);  // 9 GPU activities, 8 API calls
}

// Exports carry the short name beside the full one, the demangled name's also under --mangled;
// only kernels have one.
TEST_F(GoldenTest, ExportsCarryTheShortNameOfKernels) {
  ReportOptions opt;
  opt.format = ExportFormat::kJsonl;
  opt.filter.mangled = true;
  std::ostringstream out, err;
  ASSERT_EQ(RunReport(ReportKind::kExport, dir_.path(), opt, out, err), kExitClean) << err.str();
  const std::string jsonl = out.str();
  EXPECT_NE(
      jsonl.find("\"name\":\"_Z10gemm_tiledILi16EEvPKfS1_Pfi\",\"short_name\":\"gemm_tiled\""),
      std::string::npos)
      << jsonl;
  EXPECT_NE(jsonl.find("\"name\":\"_ZN5flash14softmax_kernelIfEEvPT_i\",\"short_name\":"
                       "\"flash::softmax_kernel\""),
            std::string::npos);
  std::istringstream lines(jsonl);
  int kernels = 0, short_names = 0;
  for (std::string line; std::getline(lines, line);) {
    kernels += line.find("\"type\":\"kernel\"") != std::string::npos;
    short_names += line.find("\"short_name\":") != std::string::npos;
  }
  EXPECT_EQ(kernels, 6);
  EXPECT_EQ(short_names, kernels);
}

TEST_F(GoldenTest, ChromeJsonIsValidTraceEventFormat) {
  const std::string out = Run(ReportKind::kExport, ExportFormat::kChromeJson);
  Compare("export.chrome.json", out);
  Json root;
  ASSERT_TRUE(JsonParser(out).Parse(&root));
  ASSERT_EQ(root.type, Json::kObject);
  const Json& events = root.fields["traceEvents"];
  ASSERT_EQ(events.type, Json::kArray);
  std::map<std::string, int> phases;
  for (const Json& e : events.items) {
    ASSERT_EQ(e.type, Json::kObject);
    for (const char* key : {"ph", "ts", "pid", "tid", "name"})
      ASSERT_TRUE(e.fields.count(key)) << "event without " << key;
    EXPECT_EQ(e.fields.at("ts").type, Json::kNumber);
    EXPECT_EQ(e.fields.at("pid").type, Json::kNumber);
    const std::string ph = e.fields.at("ph").text;
    ++phases[ph];
    if (ph == "X") {
      ASSERT_TRUE(e.fields.count("dur"));
      EXPECT_GE(e.fields.at("dur").number, 0);
    }
    if (ph == "s" || ph == "f") {
      EXPECT_TRUE(e.fields.count("id"));
    }
  }
  // 9 GPU + 8 API slices + 1 window + 1 annotation; one flow pair per GPU activity.
  EXPECT_EQ(phases["X"], 19);
  EXPECT_EQ(phases["s"], 9);
  EXPECT_EQ(phases["f"], 9);
  EXPECT_GT(phases["M"], 0);
}

TEST_F(GoldenTest, FiltersSelectRows) {
  ReportOptions opt;
  opt.format = ExportFormat::kJsonl;
  opt.filter.kernel = std::regex("gemm");
  std::ostringstream out, err;
  EXPECT_EQ(RunReport(ReportKind::kGpuTrace, dir_.path(), opt, out, err), kExitClean);
  const std::string text = out.str();
  size_t n = 0;
  for (size_t p = text.find("gemm_tiled"); p != std::string::npos; p = text.find("gemm_tiled", p + 1)) ++n;
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(text.find("vecAdd"), std::string::npos);

  ReportOptions lim;
  lim.limit = 2;
  lim.format = ExportFormat::kCsv;
  std::ostringstream csv;
  RunReport(ReportKind::kExport, dir_.path(), lim, csv, err);
  const std::string csv_text = csv.str();
  EXPECT_EQ(std::count(csv_text.begin(), csv_text.end(), '\n'), 3);  // header + 2

  ReportOptions range;
  ASSERT_TRUE(ParseTimeArg("100us", &range.filter.from_rel, &range.filter.from_wall));
  ASSERT_TRUE(ParseTimeArg("250us", &range.filter.to_rel, &range.filter.to_wall));
  std::ostringstream trace;
  RunReport(ReportKind::kGpuTrace, dir_.path(), range, trace, err);
  // Origin is the first record in stream order (the HtoD memcpy at +20us): the memset and the
  // three graph kernels start 100..250us after it.
  const std::string trace_text = trace.str();
  EXPECT_EQ(std::count(trace_text.begin(), trace_text.end(), '\n'), 2 + 4) << trace_text;

  ReportOptions mangled;
  mangled.filter.mangled = true;
  std::ostringstream raw;
  RunReport(ReportKind::kGpuTrace, dir_.path(), mangled, raw, err);
  EXPECT_NE(raw.str().find("_Z6vecAddPKfS0_Pfi"), std::string::npos);
}

TEST(FormatTest, DurationsScaleLikeNvprof) {
  EXPECT_EQ(FormatDuration(960), "960ns");
  EXPECT_EQ(FormatDuration(15840), "15.840us");
  EXPECT_EQ(FormatDuration(1009000), "1.0090ms");
  EXPECT_EQ(FormatDuration(176420000), "176.42ms");
  EXPECT_EQ(FormatDuration(2.5e9), "2.5000s");
  std::optional<int64_t> rel, wall;
  EXPECT_TRUE(ParseTimeArg("2026-01-01T00:00:01.5Z", &rel, &wall));
  EXPECT_EQ(*wall, 1767225601500000000);
  EXPECT_FALSE(ParseTimeArg("5 parsecs", &rel, &wall));
}


// The bundled real recording (tests/data/sample): train_mlp.py on an H200 under cupmon-run, with one
// window opened by SIGUSR2 and one by cupmonctl (tools/gpu-window-check made it). Real CUPTI bytes,
// two rolled files; its summary is checked in, and its facts are asserted one by one.
class RealSampleTest : public ::testing::Test {
 protected:
  static std::string Dir() { return std::string(CUPMON_SOURCE_DIR) + "/tests/data/sample"; }
  static std::string Run(ReportKind kind, const ReportOptions& opt = {}) {
    std::ostringstream out, err;
    EXPECT_EQ(RunReport(kind, Dir(), opt, out, err), kExitClean) << err.str();
    return out.str();
  }
};

TEST_F(RealSampleTest, SummaryMatchesGolden) {
  const std::string got = Run(ReportKind::kSummary);
  const std::string path = std::string(CUPMON_SOURCE_DIR) + "/tests/data/golden/real-sample.summary.txt";
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

// --full-names gives the summary as it was before kernel names were shortened.
TEST_F(RealSampleTest, SummaryWithFullNamesMatchesGolden) {
  ReportOptions opt;
  opt.full_names = true;
  const std::string got = Run(ReportKind::kSummary, opt);
  const std::string path =
      std::string(CUPMON_SOURCE_DIR) + "/tests/data/golden/real-sample.summary.full-names.txt";
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

// The GPU rows of a summary: (calls, name), in table order.
std::vector<std::pair<std::string, std::string>> GpuRows(const std::string& summary) {
  std::vector<std::pair<std::string, std::string>> rows;
  std::istringstream in(summary);
  bool gpu = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find("GPU activities:") != std::string::npos) gpu = true;
    if (line.find("API calls:") != std::string::npos) break;
    if (!gpu) continue;
    // "  Time(%)  Time  Calls  Avg  Min  Max  Name": the name is what follows the 7th field.
    std::istringstream fields(line.substr(line.find('%') - 6));
    std::string f[6];
    for (auto& x : f) fields >> x;
    std::string name;
    std::getline(fields >> std::ws, name);
    rows.emplace_back(f[2], name);
  }
  return rows;
}

TEST_F(RealSampleTest, ShortNamesStandForTheFullOnesAndStayApart) {
  ReportOptions full;
  full.full_names = true;
  const auto short_rows = GpuRows(Run(ReportKind::kSummary));
  const auto full_rows = GpuRows(Run(ReportKind::kSummary, full));
  ASSERT_EQ(short_rows.size(), 21u);  // 20 kernels and the HtoD memcpy
  ASSERT_EQ(short_rows.size(), full_rows.size());
  std::map<std::string, int> seen;
  for (size_t i = 0; i < short_rows.size(); ++i) {
    EXPECT_EQ(short_rows[i].first, full_rows[i].first) << "calls of row " << i;
    const std::string base = ShortKernelName(full_rows[i].second);
    const std::string& shown = short_rows[i].second;
    // The short name, numbered when other rows share it.
    ASSERT_EQ(shown.compare(0, base.size(), base), 0) << shown << " / " << full_rows[i].second;
    seen[base]++;
    if (shown.size() > base.size()) {
      EXPECT_EQ(shown.substr(base.size()), " [" + std::to_string(seen[base]) + "]");
    }
    // The longest is cuBLAS's 121-character C name (sm80_xmma_gemm_...), which has no shorter
    // form; the C++ names were up to 5,050 characters.
    EXPECT_LE(shown.size(), 121u) << shown;
  }
  // Seven multi_tensor_apply_kernel instantiations, numbered in table order; the kernels whose
  // short names are their own carry no number.
  EXPECT_EQ(seen["at::native::(anonymous namespace)::multi_tensor_apply_kernel"], 7);
  for (const auto& [shown, calls] : std::vector<std::pair<std::string, std::string>>{
           {"at::native::(anonymous namespace)::multi_tensor_apply_kernel [7]", "820"},
           {"at::native::elementwise_kernel", "820"},
           {"[CUDA memcpy HtoD]", "48"},
           {"cutlass::Kernel2 [2]", "18860"}}) {
    EXPECT_NE(std::find(short_rows.begin(), short_rows.end(), std::make_pair(calls, shown)),
              short_rows.end())
        << shown;
  }
  const std::string text = Run(ReportKind::kSummary);
  EXPECT_NE(text.find("==cupmon== Kernel names are short; [n] numbers kernels that share one. "
                      "Whole: --full-names, raw: --mangled\n"),
            std::string::npos);
  // Raw names are never cut, and get no note.
  ReportOptions mangled;
  mangled.filter.mangled = true;
  const std::string raw = Run(ReportKind::kSummary, mangled);
  EXPECT_EQ(raw.find("Kernel names are short"), std::string::npos);
  EXPECT_EQ(raw.find(" [1]"), std::string::npos);
  EXPECT_NE(raw.find("_ZN7cutlass7Kernel2I"), std::string::npos);
}

// --kernel searches the full demangled name, so template arguments still select, while the
// trace shows the short name.
TEST_F(RealSampleTest, KernelFilterMatchesTheFullNameWhileTracesShowTheShortOne) {
  ReportOptions opt;
  opt.filter.kernel = std::regex("reduce_kernel<512, 1,");
  const std::string trace = Run(ReportKind::kGpuTrace, opt);
  std::istringstream in(trace);
  int rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("CorrId") != std::string::npos || line.rfind("==cupmon==", 0) == 0) continue;
    ++rows;
    const std::string tail = "  at::native::reduce_kernel";
    EXPECT_TRUE(line.size() > tail.size() &&
                line.compare(line.size() - tail.size(), tail.size(), tail) == 0)
        << line;
  }
  EXPECT_EQ(rows, 820);  // the summary's calls of that kernel
  opt.full_names = true;
  EXPECT_NE(Run(ReportKind::kGpuTrace, opt).find("void at::native::reduce_kernel<512, 1, "),
            std::string::npos);
}

TEST_F(RealSampleTest, IsARealCleanRecordingWithTwoWindows) {
  const std::string info = Run(ReportKind::kInfo);
  EXPECT_EQ(info.find("SYNTHETIC"), std::string::npos);
  EXPECT_NE(info.find("files: 2"), std::string::npos) << info;
  EXPECT_NE(info.find("#1 source TRIGGER_SIGNAL"), std::string::npos) << info;
  EXPECT_NE(info.find("#2 source TRIGGER_SOCKET"), std::string::npos) << info;
  EXPECT_NE(info.find("records by kind: 1=48 4=66462 5=60375 10=166558 17=13 38=294"),
            std::string::npos) << info;
  EXPECT_NE(info.find("0 damaged ranges"), std::string::npos) << info;
  EXPECT_NE(info.find(" 0 dropped records"), std::string::npos) << info;
  EXPECT_NE(info.find("0 unresolved names"), std::string::npos) << info;
  EXPECT_NE(info.find("0 duplicate API correlation ids"), std::string::npos) << info;
  // Recorded before calibration samples took the narrowest of several brackets: the first sample
  // is 356 us off, the later two within a microsecond of the clock's true -0.5 us.
  EXPECT_NE(info.find("calibration: realtime - CUPTI offset -356238 to -459 ns over the samples "
                      "(first -356238 ns)"),
            std::string::npos) << info;
}

TEST_F(RealSampleTest, EveryKernelInsideAWindowHasItsLaunch) {
  // Rows of window 2: kernels that start 50 ms after the window's first API call were launched
  // inside it, so each must be joined to its launch record (the GPU check's rule, here offline).
  ReportOptions opt;
  opt.format = ExportFormat::kJsonl;
  opt.filter.window = 2;
  std::istringstream lines(Run(ReportKind::kExport, opt));
  std::string line;
  int64_t first_api = 0;
  std::vector<Json> kernels;
  while (std::getline(lines, line)) {
    Json v;
    ASSERT_TRUE(JsonParser(line).Parse(&v)) << line;
    const std::string type = v.fields["type"].text;
    const auto start = static_cast<int64_t>(v.fields["start_ns"].number);  // ~256 ns precision
    if (type == "api" && (first_api == 0 || start < first_api)) first_api = start;
    if (type == "kernel") kernels.push_back(v);
  }
  ASSERT_GT(first_api, 0);
  size_t checked = 0;
  for (auto& k : kernels) {
    if (static_cast<int64_t>(k.fields["start_ns"].number) < first_api + 50'000'000) continue;
    ++checked;
    EXPECT_TRUE(k.fields.count("api")) << "kernel without launch record";
  }
  EXPECT_GT(checked, 20000u);
}

}  // namespace
}  // namespace cupmon::decoder

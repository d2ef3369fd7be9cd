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

#include "cupmon/decoder/reports.h"
#include "json_parser.h"
#include "recording_builder.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {

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
  opt.filter.kernel.emplace("gemm");
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

}  // namespace
}  // namespace cupmon::decoder

// Real CUPTI 13.0 buffers from an H200 (tests/data/h200-cupti13-*.raw.zst, see
// ../shared/data/README.md), wrapped into a recording with the CUPTI 13 size table and decoded:
// the per-kind counts must equal the ones measured when the buffers were dumped. Kernel name
// pointers come from the dumping process and have no string entry: they must be reported as
// unresolved names, never crash.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "cupmon/decoder/reports.h"
#include "report_run.h"
#include "cupmon/decoder/trace_builder.h"
#include "real_cupti_bytes.h"
#include "recording_builder.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {
// The text and exit codes cupmon-decode would show (report_run.h).
using ::cupmon::testing::ReportOptions;
using ::cupmon::testing::RunReport;
using ::cupmon::testing::kExitClean, ::cupmon::testing::kExitRegression,
    ::cupmon::testing::kExitUnusable, ::cupmon::testing::kExitWarnings;

using testing::Unzstd;

struct Decoded {
  TraceCounts counts;
  uint64_t gpu_rows = 0, api_rows = 0;
  size_t files = 0;
};

class CountingSink : public RowSink {
 public:
  void OnRow(const Row& r) override {
    (r.type == RowType::kApi ? api : gpu)++;
    if (r.type == RowType::kKernel && r.name.find("<unresolved kernel name 0x") != 0) ++resolved;
  }
  uint64_t gpu = 0, api = 0, resolved = 0;
};

// Splits the concatenated dump at record boundaries into ~1 MiB raw buffers, writes them as a
// recording (not synthetic: real bytes) and decodes it.
Decoded WrapAndDecode(const std::string& raw_path, const std::string& dir) {
  const std::vector<uint8_t> raw = Unzstd(raw_path);
  EXPECT_FALSE(raw.empty()) << raw_path;
  pb::RecordingHeader h = testing::SyntheticHeader();
  h.set_synthetic(false);
  h.set_host("h200 (CUPTI 13.0 buffers from tests/data)");
  RecordingWriter w(testing::WriterOptions(dir, "cupmon-h200"), h);
  EXPECT_TRUE(w.Open().has_value());
  const auto buffers = testing::SplitAtRecords(raw);
  EXPECT_FALSE(buffers.empty()) << "the 13.0 size table walks the whole dump";
  for (const auto buffer : buffers) w.WriteRawBuffer(buffer, 1, 7);
  w.Close(0);

  Decoded d;
  auto listing = ListRecordings(dir);
  EXPECT_TRUE(listing.has_value());
  if (!listing || listing->recordings.size() != 1) {
    ADD_FAILURE() << "expected one recording";
    return d;
  }
  CountingSink sink;
  TraceBuilder b(TraceFilter{}, &sink, 1 << 16, ReorderOptions{1 << 16, 0});
  ReadIntegrity integrity;
  ReadRecording(listing->recordings[0], b, &integrity);
  b.Finish();
  EXPECT_FALSE(integrity.HasWarnings());
  d.counts = b.counts();
  d.gpu_rows = sink.gpu;
  d.api_rows = sink.api;
  EXPECT_EQ(sink.resolved, 0u) << "pointer names from another process cannot resolve";
  d.files = listing->recordings[0].files.size();
  return d;
}

TEST(RealCuptiTest, AlwaysOnDumpCountsMatchTheReadme) {
  testing::TempDir dir;
  const Decoded d = WrapAndDecode(
      std::string(CUPMON_SOURCE_DIR) + "/tests/data/h200-cupti13-alwayson.raw.zst", dir.path());
  const std::map<uint32_t, uint64_t> want = {{10, 60000}, {1, 600}, {2, 600}};
  EXPECT_EQ(d.counts.records_by_kind, want);
  EXPECT_EQ(d.counts.records, 61200u);
  EXPECT_EQ(d.gpu_rows, 61200u);  // one row per GPU activity
  EXPECT_EQ(d.counts.unresolved_names, 60000u);
  EXPECT_EQ(d.counts.buffers_stopped, 0u);
  EXPECT_EQ(d.counts.records_not_decoded, 0u);
  EXPECT_EQ(d.counts.unknown_timestamps, 0u);
}

TEST(RealCuptiTest, WindowDumpCountsMatchTheReadme) {
  testing::TempDir dir;
  const Decoded d = WrapAndDecode(
      std::string(CUPMON_SOURCE_DIR) + "/tests/data/h200-cupti13-window.raw.zst", dir.path());
  const std::map<uint32_t, uint64_t> want = {{10, 16000}, {5, 16403}, {4, 16120}, {1, 160},
                                             {2, 160},    {38, 81},    {17, 12}};
  EXPECT_EQ(d.counts.records_by_kind, want);
  EXPECT_EQ(d.gpu_rows, 16000u + 160u + 160u);
  EXPECT_EQ(d.api_rows, 16403u + 16120u);
  EXPECT_EQ(d.counts.overhead_records, 12u);
  EXPECT_EQ(d.counts.unresolved_names, 16000u);
  EXPECT_EQ(d.counts.buffers_stopped, 0u);
  // Real launches: every kernel, memcpy and memset joins its runtime/driver call.
  EXPECT_EQ(d.counts.gpu_without_api, 0u);
  EXPECT_EQ(d.counts.duplicate_api_correlation, 0u);
}

TEST(RealCuptiTest, SummaryOfRealBytesReportsUnresolvedNamesAsWarnings) {
  testing::TempDir dir;
  WrapAndDecode(std::string(CUPMON_SOURCE_DIR) + "/tests/data/h200-cupti13-window.raw.zst",
                dir.path());
  std::ostringstream out, err;
  EXPECT_EQ(RunReport(ReportKind::kSummary, dir.path(), ReportOptions{}, out, err), kExitWarnings);
  EXPECT_NE(out.str().find("<unresolved kernel name 0x"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("cudaLaunchKernel"), std::string::npos) << out.str();
  EXPECT_NE(err.str().find("16000 kernel record(s) whose name pointer has no string entry"),
            std::string::npos) << err.str();
}

}  // namespace
}  // namespace cupmon::decoder

// PyTorch CUPTI monitor dumps (torch.profiler._cupti_monitor): the real CUPTI 13.0 buffers of
// tests/data/h200-cupti13-*.raw.zst are written once as a dump (cupti_monitor_meta.bin +
// cupti_monitor_raw_buffers.bin, the layout of PyTorch's _cupti_monitor.py) and once as a cupmon
// recording, and every command must give the same rows and counts for both. Then the dump is
// damaged the ways a crash or a bad disk damages it.
#include "cupmon/decoder/torch_monitor_dump.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "cupmon/decoder/rank_listing.h"
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

namespace fs = std::filesystem;
using testing::TempDir;

constexpr int64_t kSessionStart = 1795938001000000000;  // near the buffers' own timestamps
constexpr uint64_t kTickBase = 1700000000000000000ull;  // approximate-clock samples (identity map)

struct DumpSpec {
  uint32_t cupti_version = 130001;
  // The approximate clock as c10 reads it on x86-64: TSC ticks, here 2 per ns, so the records'
  // times are ticks and the chunk headers' (ticks, unix ns) pairs map them.
  bool ticks = false;
  uint64_t first_start = 0;  // with `ticks`: the tick that maps to kSessionStart
};

std::string MetaJson(uint32_t cupti_version) {
  // The keys and shape _write_meta_file writes (json.dumps, sorted keys, no spaces).
  return "{\"activities\":[10,1,2],\"buffer_size\":4194304,\"cuda_version\":\"13.0\","
         "\"cupti_version\":" + std::to_string(cupti_version) +
         ",\"flush_period_ns\":1000000000,\"hes_enabled\":false,"
         "\"libcupti_path\":\"\\/usr\\/local\\/cuda\\/lib64\\/libcupti.so.13\",\"meta_version\":2,"
         "\"raw_buffer_dump\":true,\"session_start_approx_ns\":1699999999900000000,"
         "\"session_start_calibrated_unix_ns\":1699999999900000000,\"session_start_unix_ns\":" +
         std::to_string(kSessionStart) + ",\"timestamp_mode\":\"approximate_clock\"}";
}

// Chunk `i`'s calibration pair: identity (the buffers' times are CLOCK_REALTIME ns already), or
// 2 ticks per ns from `first_start`.
std::pair<uint64_t, uint64_t> Pair(const DumpSpec& spec, size_t i) {
  if (!spec.ticks) {
    const uint64_t t = kTickBase + i * 100'000'000ull;
    return {t, t};
  }
  return {spec.first_start + i * 200'000'000ull,
          static_cast<uint64_t>(kSessionStart) + i * 100'000'000ull};
}

std::vector<uint8_t> DumpBytes(const std::vector<std::span<const uint8_t>>& buffers,
                               const DumpSpec& spec, uint32_t first_index = 0) {
  std::vector<uint8_t> raw;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto [approx, unix_ns] = Pair(spec, i + 1);
    AppendTorchChunk(TorchDumpChunk{static_cast<uint32_t>(first_index + i), 7, 0x5555deadbeefull,
                                    approx, unix_ns, buffers[i]},
                     &raw);
  }
  return raw;
}

void WriteDump(const std::string& dir, const std::vector<std::span<const uint8_t>>& buffers,
               const DumpSpec& spec = {}) {
  std::string json = MetaJson(spec.cupti_version);
  if (spec.ticks) {
    const auto [approx, unix_ns] = Pair(spec, 0);
    const std::string from = "1699999999900000000,\"session_start_calibrated_unix_ns\":1699999999900000000";
    json.replace(json.find(from), from.size(),
                 std::to_string(approx) + ",\"session_start_calibrated_unix_ns\":" +
                     std::to_string(unix_ns));
  }
  testing::WriteAll(dir + "/" + kTorchMetaFileName, EncodeTorchMeta(json));
  testing::WriteAll(dir + "/" + kTorchRawFileName, DumpBytes(buffers, spec));
}

// The same buffers as a cupmon recording whose header matches what a dump can say (no host, pid
// or devices), so the reports' rows can be compared byte for byte.
void WriteCupmon(const std::string& dir, const std::vector<std::span<const uint8_t>>& buffers) {
  pb::RecordingHeader h = testing::SyntheticHeader(testing::kTestRecordingId, 0);
  h.set_synthetic(false);
  h.clear_devices();
  h.clear_host();
  h.clear_command_line();
  h.set_process_start_unix_ns(kSessionStart);
  RecordingWriter w(testing::WriterOptions(dir, "cupmon-h200"), h);
  ASSERT_TRUE(w.Open().has_value());
  for (const auto b : buffers) w.WriteRawBuffer(b, 1, 7);
  w.Close(0);
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string ReplaceAll(const std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  out.reserve(s.size());
  size_t done = 0;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, done)) {
    out.append(s, done, at - done).append(to);
    done = at + from.size();
  }
  return out.append(s, done);
}

struct Output {
  int rc = 0;
  std::string out, err;
};

Output Report(ReportKind kind, const std::string& dir, ReportOptions opt = {}) {
  std::ostringstream out, err;
  Output o;
  o.rc = RunReport(kind, dir, opt, out, err);
  o.out = out.str();
  o.err = err.str();
  return o;
}

uint64_t DumpId(const std::string& dir) {
  auto listing = ListRecordings(dir);
  EXPECT_TRUE(listing.has_value());
  return listing && !listing->recordings.empty() ? listing->recordings[0].id : 0;
}

// Lines from the first one starting with `from` (all when empty), without "==cupmon==" lines.
std::string Rows(const std::string& text, const std::string& from = {}) {
  std::istringstream in(text);
  std::string line, out;
  bool on = from.empty();
  while (std::getline(in, line)) {
    if (!on && line.starts_with(from)) on = true;
    if (on && !line.starts_with("==cupmon==")) out += line + "\n";
  }
  return out;
}

std::string LineStarting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(prefix)) return line;
  return "(no line starting with '" + prefix + "')";
}

// Both forms of one real buffer file.
class TorchDumpTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    raw_ = testing::Unzstd(testing::RealCuptiPath(GetParam()));
    ASSERT_FALSE(raw_.empty());
    buffers_ = testing::SplitAtRecords(raw_);
    ASSERT_GT(buffers_.size(), 3u);
    WriteDump(dump_.path(), buffers_);
    WriteCupmon(cupmon_.path(), buffers_);
    dump_id_ = DumpId(dump_.path());
  }
  // Output with each recording's id replaced by the same placeholder.
  std::string Same(const std::string& text) const {
    return ReplaceAll(ReplaceAll(text, Hex(dump_id_), "<id>"), Hex(testing::kTestRecordingId),
                      "<id>");
  }

  std::vector<uint8_t> raw_;
  std::vector<std::span<const uint8_t>> buffers_;
  TempDir dump_, cupmon_;
  uint64_t dump_id_ = 0;
};

TEST_P(TorchDumpTest, TracesGiveTheRowsOfCupmonsOwnPath) {
  for (ReportKind kind : {ReportKind::kGpuTrace, ReportKind::kApiTrace, ReportKind::kKernExec}) {
    const Output d = Report(kind, dump_.path()), c = Report(kind, cupmon_.path());
    EXPECT_EQ(d.rc, c.rc) << d.err;
    EXPECT_EQ(d.rc, kExitWarnings) << "kernel names are pointers: unresolved, a warning";
    if (kind != ReportKind::kApiTrace) {
      EXPECT_GT(Rows(d.out).size(), 100000u);
    }
    EXPECT_EQ(Rows(d.out), Rows(c.out)) << "report kind " << static_cast<int>(kind);
  }
}

TEST_P(TorchDumpTest, ExportsGiveTheRowsOfCupmonsOwnPath) {
  for (ExportFormat f : {ExportFormat::kCsv, ExportFormat::kJsonl, ExportFormat::kChromeJson,
                         ExportFormat::kPerfetto}) {
    ReportOptions opt;
    opt.format = f;
    const Output d = Report(ReportKind::kExport, dump_.path(), opt);
    const Output c = Report(ReportKind::kExport, cupmon_.path(), opt);
    EXPECT_EQ(d.rc, c.rc) << d.err;
    EXPECT_GT(d.out.size(), 100000u);
    EXPECT_TRUE(Same(d.out) == Same(c.out)) << "export format " << static_cast<int>(f);
  }
}

TEST_P(TorchDumpTest, SummaryAndInfoCountWhatCupmonsOwnPathCounts) {
  const Output d = Report(ReportKind::kSummary, dump_.path());
  const Output c = Report(ReportKind::kSummary, cupmon_.path());
  EXPECT_EQ(d.rc, c.rc);
  EXPECT_EQ(Rows(d.out, "            Type"), Rows(c.out, "            Type"));
  EXPECT_EQ(LineStarting(d.out, "==cupmon== Drops:"), LineStarting(c.out, "==cupmon== Drops:"));
  EXPECT_NE(d.out.find("==cupmon== Source: PyTorch CUPTI monitor dump"), std::string::npos) << d.out;
  EXPECT_NE(d.err.find(" kernel record(s) whose name pointer has no string entry"),
            std::string::npos) << d.err;

  const Output di = Report(ReportKind::kInfo, dump_.path()), ci = Report(ReportKind::kInfo, cupmon_.path());
  EXPECT_EQ(di.rc, ci.rc);
  EXPECT_EQ(LineStarting(di.out, "  records by kind:"), LineStarting(ci.out, "  records by kind:"));
  const std::string dd = LineStarting(di.out, "  decoding:"), cd = LineStarting(ci.out, "  decoding:");
  EXPECT_EQ(dd.substr(0, dd.find("without API record")), cd.substr(0, cd.find("without API record")));
  EXPECT_NE(di.out.find("raw buffers: " + std::to_string(buffers_.size())), std::string::npos)
      << di.out;
  EXPECT_NE(di.out.find("CUPTI API 130001"), std::string::npos) << di.out;
  EXPECT_NE(di.out.find("integrity: 0 damaged ranges"), std::string::npos) << di.out;
}

INSTANTIATE_TEST_SUITE_P(RealCupti13, TorchDumpTest,
                         ::testing::Values("h200-cupti13-alwayson.raw.zst",
                                           "h200-cupti13-window.raw.zst"));

// The rows of one recording, through the TraceBuilder.
struct CollectedRow {
  RowType type;
  uint64_t start, end, duration;
  int64_t wall_start;
  uint32_t correlation, stream;
  std::string name;
};
class Collector : public RowSink {
 public:
  void OnRow(const Row& r) override {
    rows.push_back({r.type, r.start, r.end, r.duration, r.wall_start, r.correlation, r.stream,
                    std::string(r.name)});
  }
  std::vector<CollectedRow> rows;
};

struct Decoded {
  std::vector<CollectedRow> rows;
  TraceCounts counts;
  ReadIntegrity integrity;
};

Decoded Decode(const std::string& dir) {
  Decoded d;
  auto listing = ListRecordings(dir);
  EXPECT_TRUE(listing.has_value());
  if (!listing || listing->recordings.size() != 1) {
    ADD_FAILURE() << "expected one recording in " << dir;
    return d;
  }
  Collector sink;
  TraceBuilder b(TraceFilter{}, &sink, 1 << 16, ReorderOptions{});
  ReadRecording(listing->recordings[0], b, &d.integrity);
  b.Finish();
  d.rows = std::move(sink.rows);
  d.counts = b.counts();
  return d;
}

uint64_t RecordsIn(std::span<const uint8_t> buffer) {
  return WalkRecords(buffer, RecordSizeTable::Cupti13(), [](uint32_t, auto) {}).records;
}

class TorchDumpDamageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    raw_ = testing::Unzstd(testing::RealCuptiPath("h200-cupti13-alwayson.raw.zst"));
    buffers_ = testing::SplitAtRecords(raw_);
    ASSERT_GT(buffers_.size(), 5u);
    WriteDump(dir_.path(), buffers_);
    for (const auto b : buffers_) total_ += RecordsIn(b);
    bytes_ = testing::ReadAll(RawPath());
  }
  std::string RawPath() const { return dir_.path() + "/" + kTorchRawFileName; }
  std::string MetaPath() const { return dir_.path() + "/" + kTorchMetaFileName; }
  // Offset of chunk `i` in the raw file.
  size_t ChunkOffset(size_t i) const {
    size_t off = 0;
    for (size_t k = 0; k < i; ++k) off += kTorchChunkHeaderSize + buffers_[k].size();
    return off;
  }
  void Rewrite() { testing::WriteAll(RawPath(), bytes_); }

  std::vector<uint8_t> raw_, bytes_;
  std::vector<std::span<const uint8_t>> buffers_;
  uint64_t total_ = 0;
  TempDir dir_;
};

TEST_F(TorchDumpDamageTest, AnIntactDumpDecodesEveryRecord) {
  const Decoded d = Decode(dir_.path());
  EXPECT_EQ(d.counts.records, total_);
  EXPECT_EQ(d.counts.records, 61200u);
  EXPECT_EQ(d.counts.unresolved_names, 60000u) << "names are pointers in such dumps";
  EXPECT_FALSE(d.integrity.HasWarnings());
  EXPECT_EQ(d.integrity.chunks, buffers_.size());
  EXPECT_EQ(d.counts.calibration.samples, buffers_.size() + 1) << "the meta's and each chunk's";
}

TEST_F(TorchDumpDamageTest, ATruncatedTailLosesOnlyTheLastChunk) {
  bytes_.resize(ChunkOffset(buffers_.size() - 1) + kTorchChunkHeaderSize + 1000);
  Rewrite();
  const Decoded d = Decode(dir_.path());
  EXPECT_EQ(d.counts.records, total_ - RecordsIn(buffers_.back()));
  EXPECT_EQ(d.integrity.damaged_ranges, 1u);
  EXPECT_TRUE(d.integrity.HasWarnings());
  ASSERT_FALSE(d.integrity.messages.empty());
  EXPECT_NE(d.integrity.messages[0].find("truncated tail"), std::string::npos)
      << d.integrity.messages[0];
  // A header cut short as well.
  bytes_.resize(ChunkOffset(buffers_.size() - 1) + 20);
  Rewrite();
  EXPECT_EQ(Decode(dir_.path()).counts.records, total_ - RecordsIn(buffers_.back()));
}

TEST_F(TorchDumpDamageTest, ABadMagicLosesOnlyThatChunk) {
  const size_t k = 2;
  bytes_[ChunkOffset(k) + 3] ^= 0x20;
  Rewrite();
  const Decoded d = Decode(dir_.path());
  EXPECT_EQ(d.counts.records, total_ - RecordsIn(buffers_[k]));
  EXPECT_EQ(d.integrity.damaged_ranges, 1u);
  EXPECT_EQ(d.integrity.damaged_bytes, kTorchChunkHeaderSize + buffers_[k].size());
  EXPECT_EQ(d.integrity.missing_chunks, 1u) << "its index never shows up";
  EXPECT_TRUE(d.integrity.HasWarnings());
  std::string all;
  for (const auto& m : d.integrity.messages) all += m + "\n";
  EXPECT_NE(all.find("at offset " + std::to_string(ChunkOffset(k)) + ": no CUPMRBUF chunk magic"),
            std::string::npos) << all;
}

TEST_F(TorchDumpDamageTest, ALengthPastTheNextChunkLosesOnlyThatChunk) {
  const size_t k = 1;
  PutLe32(bytes_.data() + ChunkOffset(k) + 20, 0x7fffffffu);  // valid size
  Rewrite();
  const Decoded d = Decode(dir_.path());
  EXPECT_EQ(d.counts.records, total_ - RecordsIn(buffers_[k]));
  EXPECT_EQ(d.integrity.damaged_ranges, 1u);
  ASSERT_FALSE(d.integrity.messages.empty());
  EXPECT_NE(d.integrity.messages[0].find("runs into the next chunk"), std::string::npos)
      << d.integrity.messages[0];
  // The last chunk's length past the end of the file: a truncated tail.
  PutLe32(bytes_.data() + ChunkOffset(k) + 20, static_cast<uint32_t>(buffers_[k].size()));
  PutLe32(bytes_.data() + ChunkOffset(buffers_.size() - 1) + 20, 0x7fffffffu);
  Rewrite();
  const Decoded t = Decode(dir_.path());
  EXPECT_EQ(t.counts.records, total_ - RecordsIn(buffers_.back()));
  ASSERT_FALSE(t.integrity.messages.empty());
  EXPECT_NE(t.integrity.messages[0].find("cut short at the end of the file"), std::string::npos)
      << t.integrity.messages[0];
}

TEST_F(TorchDumpDamageTest, ADamagedNextHeaderCostsTheNextChunkNotThisOne) {
  // Chunk 3's version field: chunk 2 ends where it should, chunk 3 is skipped.
  PutLe32(bytes_.data() + ChunkOffset(3) + 8, 9);
  Rewrite();
  const Decoded d = Decode(dir_.path());
  EXPECT_EQ(d.counts.records, total_ - RecordsIn(buffers_[3]));
  ASSERT_FALSE(d.integrity.messages.empty());
  EXPECT_NE(d.integrity.messages[0].find("chunk version 9 (cupmon-decode reads version 2)"),
            std::string::npos) << d.integrity.messages[0];
}

TEST_F(TorchDumpDamageTest, ReportsExitWithWarningsAndNameTheDamage) {
  bytes_[ChunkOffset(2)] = 'X';
  Rewrite();
  for (ReportKind kind : {ReportKind::kSummary, ReportKind::kGpuTrace, ReportKind::kKernExec,
                          ReportKind::kExport, ReportKind::kInfo}) {
    const Output o = Report(kind, dir_.path());
    EXPECT_EQ(o.rc, kExitWarnings);
    EXPECT_NE(o.err.find("cupmon-decode: warning: " + RawPath() + " at offset " +
                         std::to_string(ChunkOffset(2)) + ": no CUPMRBUF chunk magic"),
              std::string::npos) << o.err;
  }
}

TEST_F(TorchDumpDamageTest, ADamagedMetaFileRefusesTheDumpWithTheReason) {
  const auto meta = testing::ReadAll(MetaPath());
  const std::pair<std::vector<uint8_t>, std::string> cases[] = {
      {{meta.begin(), meta.begin() + 10}, "shorter than the 16-byte CUPMMETA header"},
      {EncodeTorchMeta(MetaJson(130001), 3), "metadata version 3; cupmon-decode reads version 2"},
      {{meta.begin(), meta.end() - 5}, "runs past the end of the file"},
      {EncodeTorchMeta("{\"cupti_version\":130001,"), "metadata JSON does not parse"},
      {EncodeTorchMeta("{\"cuda_version\":\"13.0\"}"), "names no cupti_version"},
  };
  for (const auto& [bytes, why] : cases) {
    testing::WriteAll(MetaPath(), bytes);
    const Output o = Report(ReportKind::kSummary, dir_.path());
    EXPECT_EQ(o.rc, kExitUnusable) << why;
    EXPECT_NE(o.err.find("cupmon-decode: refused: " + MetaPath() + ": "), std::string::npos) << o.err;
    EXPECT_NE(o.err.find(why), std::string::npos) << o.err;
  }
  auto bad_magic = meta;
  bad_magic[0] = 'X';
  testing::WriteAll(MetaPath(), bad_magic);
  EXPECT_NE(Report(ReportKind::kInfo, dir_.path()).err.find("no CUPMMETA magic"), std::string::npos);
}

TEST_F(TorchDumpDamageTest, AMissingFileIsNamed) {
  fs::remove(MetaPath());
  Output o = Report(ReportKind::kSummary, dir_.path());
  EXPECT_EQ(o.rc, kExitUnusable);
  EXPECT_NE(o.err.find("no cupti_monitor_meta.bin next to it"), std::string::npos) << o.err;

  WriteDump(dir_.path(), buffers_);
  fs::remove(RawPath());
  o = Report(ReportKind::kInfo, dir_.path());
  EXPECT_EQ(o.rc, kExitWarnings);
  EXPECT_NE(o.err.find("no cupti_monitor_raw_buffers.bin"), std::string::npos) << o.err;
  EXPECT_NE(o.out.find("records: 0"), std::string::npos) << o.out;
}

TEST_F(TorchDumpDamageTest, AnotherCuptiVersionStopsEveryBufferWithTheReason) {
  DumpSpec spec;
  spec.cupti_version = 130100;
  WriteDump(dir_.path(), buffers_, spec);
  const Decoded d = Decode(dir_.path());
  EXPECT_EQ(d.counts.records, 0u) << "no layout is trusted outside 13.0.x";
  EXPECT_EQ(d.counts.buffers_stopped, buffers_.size());
  ASSERT_FALSE(d.counts.messages.empty());
  EXPECT_NE(d.counts.messages[0].find("no field layout for activity kind 10 at CUPTI API version "
                                      "130100"),
            std::string::npos) << d.counts.messages[0];
  EXPECT_EQ(Report(ReportKind::kSummary, dir_.path()).rc, kExitWarnings);
}

TEST_F(TorchDumpDamageTest, ASecondSessionAppendedToTheFileIsReadWithoutGaps) {
  // The monitor opens the raw file for appending and numbers chunks from 0 in each session.
  auto more = DumpBytes(buffers_, DumpSpec{});
  bytes_.insert(bytes_.end(), more.begin(), more.end());
  Rewrite();
  const Decoded d = Decode(dir_.path());
  EXPECT_EQ(d.counts.records, 2 * total_);
  EXPECT_FALSE(d.integrity.HasWarnings());
  EXPECT_EQ(d.integrity.sequence_gaps, 0u);
  std::string all;
  for (const auto& m : d.integrity.messages) all += m;
  EXPECT_NE(all.find("chunk index starts again at 0"), std::string::npos) << all;
}

TEST_F(TorchDumpDamageTest, ARegionWithNoRowsGivesNoRows) {
  ReportOptions opt;
  opt.filter.from_rel = int64_t{3600} * 1'000'000'000;  // an hour after the first record
  opt.format = ExportFormat::kCsv;
  const Output o = Report(ReportKind::kExport, dir_.path(), opt);
  EXPECT_EQ(o.rc, kExitWarnings) << "unresolved names still count";
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << "the CSV header only:\n" << o.out;
}

TEST_F(TorchDumpDamageTest, ApproximateClockTicksAreMappedToWallClock) {
  // The same buffers read as TSC ticks (2 per ns): durations halve, starts map through the pairs.
  const Decoded ns = Decode(dir_.path());
  DumpSpec spec;
  spec.ticks = true;
  spec.first_start = ns.rows.front().start;
  WriteDump(dir_.path(), buffers_, spec);
  const Decoded ticks = Decode(dir_.path());
  ASSERT_EQ(ticks.rows.size(), ns.rows.size());
  for (size_t i = 0; i < ns.rows.size(); ++i) {
    const auto& a = ns.rows[i];
    const auto& b = ticks.rows[i];
    ASSERT_EQ(a.correlation, b.correlation);
    EXPECT_NEAR(static_cast<double>(b.duration), static_cast<double>(a.duration) / 2, 1.0) << i;
    EXPECT_NEAR(static_cast<double>(b.wall_start - kSessionStart),
                static_cast<double>(a.start - spec.first_start) / 2, 2.0) << i;
  }
}

TEST_F(TorchDumpDamageTest, DumpsInRankDirectoriesMergeAsRanks) {
  TempDir job;
  for (const char* rank : {"rank0", "rank1"}) {
    fs::create_directory(job.path() + "/" + rank);
    WriteDump(job.path() + "/" + rank, buffers_);
  }
  const Output o = Report(ReportKind::kSummary, job.path());
  EXPECT_EQ(o.rc, kExitWarnings);
  EXPECT_NE(o.out.find("rank 0 (PyTorch dump " + job.path() + "/rank0)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("rank 1 (PyTorch dump " + job.path() + "/rank1)"), std::string::npos) << o.out;
  EXPECT_EQ(o.err.find("different jobs"), std::string::npos) << o.err;
  // Naming one of the files reads that dump.
  const Output one = Report(ReportKind::kInfo, job.path() + "/rank1/" + kTorchRawFileName);
  EXPECT_NE(one.out.find("records: " + std::to_string(total_)), std::string::npos) << one.out;
}

// Every byte of a small dump of real records flipped in turn, and the dump cut at every length:
// what is lost is at most the chunk holding the damage (the chunks before a cut survive).
TEST(TorchDumpBytesTest, EveryFlipOrCutCostsAtMostItsChunk) {
  const auto raw = testing::Unzstd(testing::RealCuptiPath("h200-cupti13-window.raw.zst"));
  auto buffers = testing::SplitAtRecords(raw, 1000);  // ~1000-byte buffers of mixed kinds
  ASSERT_GE(buffers.size(), 5u);
  buffers.resize(5);
  const std::vector<uint8_t> dump = DumpBytes(buffers, DumpSpec{});
  std::vector<size_t> chunk_end;
  std::vector<uint64_t> chunk_records;
  uint64_t total = 0;
  for (const auto b : buffers) {
    chunk_end.push_back((chunk_end.empty() ? 0 : chunk_end.back()) + kTorchChunkHeaderSize + b.size());
    chunk_records.push_back(RecordsIn(b));
    total += chunk_records.back();
  }
  auto decode = [](const std::vector<uint8_t>& bytes) {
    Collector sink;
    TraceBuilder b(TraceFilter{}, &sink, 16, ReorderOptions{8, 0});
    TorchDumpMeta m;
    m.cupti_version = 130001;
    const std::string path = "dump";
    b.OnHeader(TorchDumpHeader(m, 1), ChunkOrigin{&path, 0, 0});
    ReadIntegrity integrity;
    ReadTorchRawBytes(bytes, RecordingFile{path, bytes.size(), 1, {}}, b, &integrity);
    b.Finish();
    return b.counts().records;
  };
  ASSERT_EQ(decode(dump), total);
  for (size_t at = 0; at < dump.size(); ++at) {
    std::vector<uint8_t> bad = dump;
    bad[at] ^= 0xFF;
    const size_t chunk = std::upper_bound(chunk_end.begin(), chunk_end.end(), at) - chunk_end.begin();
    EXPECT_GE(decode(bad), total - chunk_records[chunk]) << "byte " << at << " flipped";
  }
  for (size_t cut = 0; cut < dump.size(); ++cut) {
    const std::vector<uint8_t> part(dump.begin(), dump.begin() + cut);
    uint64_t whole = 0;
    for (size_t k = 0; k < chunk_end.size() && chunk_end[k] <= cut; ++k) whole += chunk_records[k];
    EXPECT_EQ(decode(part), whole) << "cut at " << cut;
  }
}

TEST(TorchDumpMetaTest, ParsesTheMonitorsJson) {
  const std::string json =
      "{\"activities\":[10,1,2],\"buffer_size\":4194304,\"cuda_version\":\"13.0\","
      "\"cupti_version\":130001,\"extra\":{\"nested\":[1.5,-2e3,null,\"x\"]},"
      "\"flush_period_ns\":1000000000,\"hes_enabled\":true,"
      "\"libcupti_path\":\"\\/opt\\/caf\\u00e9\\/libcupti.so\",\"meta_version\":2,"
      "\"session_start_approx_ns\":18446744073709551615,"
      "\"session_start_calibrated_unix_ns\":-5,\"session_start_unix_ns\":1795938001000000000,"
      "\"timestamp_mode\":\"approximate_clock\"}";
  const auto bytes = EncodeTorchMeta(json);
  auto m = ParseTorchDumpMeta(bytes, "m");
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->cupti_version, 130001u);
  EXPECT_EQ(m->activities, (std::vector<uint32_t>{10, 1, 2}));
  EXPECT_EQ(m->libcupti_path, "/opt/caf\xc3\xa9/libcupti.so");
  EXPECT_EQ(m->session_start_approx_ns, UINT64_MAX);
  EXPECT_EQ(m->session_start_calibrated_unix_ns, -5);
  EXPECT_TRUE(m->hes_enabled);
  const pb::RecordingHeader h = TorchDumpHeader(*m, 42);
  EXPECT_EQ(h.cuda_runtime_version(), 13000);
  EXPECT_EQ(h.enabled_kinds_size(), 3);
  EXPECT_EQ(h.process_start_unix_ns(), 1795938001000000000);
  // Nesting deeper than the parser follows is refused, never recursed into.
  std::string deep = "{\"x\":" + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_FALSE(ParseTorchDumpMeta(EncodeTorchMeta(deep), "m").has_value());
}

}  // namespace
}  // namespace cupmon::decoder

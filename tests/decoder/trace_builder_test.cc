// Joins and edge cases: nsys's duplicate-correlation case, graph launches, annotations, unknown
// timestamps, unresolved names, partnerless correlation ids, bad calibration, unknown kinds.
#include "cupmon/decoder/trace_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "cupmon/decoder/reports.h"
#include "report_run.h"
#include "recording_builder.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {
// The text and exit codes cupmon-decode would show (report_run.h).
using ::cupmon::testing::ReportOptions;
using ::cupmon::testing::RunReport;
using ::cupmon::testing::kExitClean, ::cupmon::testing::kExitRegression,
    ::cupmon::testing::kExitUnusable, ::cupmon::testing::kExitWarnings;

using testing::BufferBuilder;
using testing::kT0;
using testing::TempDir;

struct OwnedRow {
  Row row;
  std::string name, api_name, annotation;
};

class CollectingSink : public RowSink {
 public:
  void OnRow(const Row& r) override {
    rows.push_back({r, std::string(r.name), std::string(r.api.name), std::string(r.annotation)});
  }
  std::vector<OwnedRow> rows;
  size_t Count(RowType t) const {
    size_t n = 0;
    for (const auto& r : rows) n += r.row.type == t;
    return n;
  }
};

void WriteRecording(const std::string& dir, const std::vector<std::vector<uint8_t>>& buffers,
                    const std::vector<std::pair<uint64_t, std::string>>& strings = {},
                    const std::vector<std::pair<uint64_t, int64_t>>& calibration = {}) {
  RecordingWriter w(testing::WriterOptions(dir), testing::SyntheticHeader());
  ASSERT_TRUE(w.Open().has_value());
  std::vector<pb::StringEntry> entries;
  for (const auto& [ptr, text] : strings) {
    entries.emplace_back();
    entries.back().set_pointer(ptr);
    entries.back().set_text(text);
  }
  w.AddStrings(entries);
  if (!calibration.empty()) {
    pb::Calibration c;
    for (const auto& [cupti, wall] : calibration) {
      auto* s = c.add_samples();
      s->set_cupti_ns(cupti);
      s->set_realtime_ns(wall);
    }
    w.WriteCalibration(c);
  }
  for (const auto& b : buffers) w.WriteRawBuffer(b, 0, 0);
  w.Close(0);
}

struct Built {
  CollectingSink sink;
  TraceCounts counts;
};

std::unique_ptr<Built> Build(const std::string& dir, size_t horizon = 1 << 16,
                             ReorderOptions reorder = {}) {
  auto out = std::make_unique<Built>();
  auto listing = ListRecordings(dir);
  EXPECT_TRUE(listing.has_value());
  TraceBuilder b(TraceFilter{}, &out->sink, horizon, reorder);
  ReadIntegrity integrity;
  ReadRecording(listing->recordings.at(0), b, &integrity);
  b.Finish();
  out->counts = b.counts();
  return out;
}

std::string Report(ReportKind kind, const std::string& dir, int* rc = nullptr) {
  std::ostringstream out, err;
  const int r = RunReport(kind, dir, ReportOptions{}, out, err);
  if (rc) *rc = r;
  return out.str();
}

TEST(TraceBuilderTest, SharedCorrelationIdNeverDuplicatesAKernelRow) {
  // nsys seed 003: a second runtime record carried the launch's correlation id and the kernel
  // came out twice in the kernel exec trace.
  TempDir dir;
  BufferBuilder api, gpu;
  api.Runtime(kT0 + 100, kT0 + 200, 5, 211).Runtime(kT0 + 210, kT0 + 215, 5, 10 /* cudaGetLastError */);
  gpu.Kernel(kT0 + 300, kT0 + 900, 5, 0x10);
  WriteRecording(dir.path(), {api.bytes(), gpu.bytes()}, {{0x10, "_Z1kv"}});
  auto b = Build(dir.path());
  ASSERT_EQ(b->sink.Count(RowType::kKernel), 1u);
  EXPECT_EQ(b->sink.Count(RowType::kApi), 2u);
  EXPECT_EQ(b->counts.duplicate_api_correlation, 1u);
  for (const auto& r : b->sink.rows)
    if (r.row.type == RowType::kKernel) {
      EXPECT_EQ(r.api_name, "cudaLaunchKernel");
      EXPECT_EQ(r.name, "k()");
    }
  int rc = 0;
  const std::string kern = Report(ReportKind::kKernExec, dir.path(), &rc);
  size_t lines = 0;  // rows of kernel "k()", shown by its short name
  std::istringstream rows(kern);
  for (std::string line; std::getline(rows, line);)
    lines += line.size() > 3 && line.compare(line.size() - 3, 3, "  k") == 0;
  EXPECT_EQ(lines, 1u) << kern;
  EXPECT_EQ(rc, kExitWarnings);  // the shared id is reported
}

TEST(TraceBuilderTest, GraphLaunchIsOneApiCallWithManyKernels) {
  TempDir dir;
  BufferBuilder gpu, api;
  gpu.Kernel(kT0 + 1000, kT0 + 2000, 9, 0x10).Kernel(kT0 + 2000, kT0 + 3000, 9, 0x10).Kernel(kT0 + 3000, kT0 + 4000, 9, 0x20);
  api.Runtime(kT0 + 100, kT0 + 500, 9, 311);
  // GPU buffer first: the API record arrives later and is still joined.
  WriteRecording(dir.path(), {gpu.bytes(), api.bytes()}, {{0x10, "_Z1av"}, {0x20, "_Z1bv"}});
  auto b = Build(dir.path());
  ASSERT_EQ(b->sink.Count(RowType::kKernel), 3u);
  for (const auto& r : b->sink.rows) {
    if (r.row.type == RowType::kKernel) {
      EXPECT_TRUE(r.row.api.found);
      EXPECT_EQ(r.api_name, "cudaGraphLaunch");
    } else {
      EXPECT_EQ(r.row.launched, 3u);
    }
  }
  EXPECT_EQ(b->counts.gpu_without_api, 0u);
}

TEST(TraceBuilderTest, ZeroAndReversedTimestampsAreUnknownNotHuge) {
  TempDir dir;
  BufferBuilder gpu;
  gpu.Kernel(0, 0, 1, 0x10).Kernel(kT0 + 500, kT0 + 100, 2, 0x10).Kernel(kT0, kT0 + 50, 3, 0x10);
  WriteRecording(dir.path(), {gpu.bytes()}, {{0x10, "_Z1kv"}});
  auto b = Build(dir.path());
  ASSERT_EQ(b->sink.rows.size(), 3u);
  EXPECT_FALSE(b->sink.rows[0].row.valid_time);
  EXPECT_FALSE(b->sink.rows[1].row.valid_time);
  EXPECT_EQ(b->sink.rows[1].row.duration, 0u);
  EXPECT_TRUE(b->sink.rows[2].row.valid_time);
  EXPECT_EQ(b->counts.unknown_timestamps, 2u);
  int rc = 0;
  const std::string summary = Report(ReportKind::kSummary, dir.path(), &rc);
  EXPECT_EQ(rc, kExitWarnings);
  // Three calls; min = max = the one valid 50ns duration.
  EXPECT_NE(summary.find("3       50ns       50ns       50ns  k\n"), std::string::npos) << summary;
  EXPECT_NE(summary.find("2 records with unknown timestamps"), std::string::npos);
}

TEST(TraceBuilderTest, NamesAndPartnersThatAreMissingAreCounted) {
  TempDir dir;
  BufferBuilder gpu, api;
  gpu.Kernel(kT0, kT0 + 10, 1, 0xdead);  // no string entry, no API record
  api.Runtime(kT0, kT0 + 5, 2, 20);      // cudaMalloc: no GPU activity
  api.Runtime(kT0, kT0 + 5, 3, 9999);    // past the cbid table
  WriteRecording(dir.path(), {gpu.bytes(), api.bytes()});
  auto b = Build(dir.path());
  ASSERT_EQ(b->sink.rows.size(), 3u);
  EXPECT_EQ(b->sink.rows[0].name, "<unresolved kernel name 0xdead>");
  EXPECT_EQ(b->counts.unresolved_names, 1u);
  EXPECT_EQ(b->counts.gpu_without_api, 1u);
  EXPECT_EQ(b->counts.api_without_gpu, 2u);
  EXPECT_EQ(b->sink.rows[2].name, "cbid#9999");
}

TEST(TraceBuilderTest, LatestStringEntryForAPointerWins) {
  TempDir dir;
  RecordingWriter w(testing::WriterOptions(dir.path()), testing::SyntheticHeader());
  ASSERT_TRUE(w.Open().has_value());
  pb::StringEntry e;
  e.set_pointer(0x10);
  e.set_text("_Z3oldv");
  w.AddStrings({&e, 1});
  BufferBuilder first, second;
  first.Kernel(kT0, kT0 + 1, 1, 0x10);
  w.WriteRawBuffer(first.bytes(), 0, 0);
  e.set_text("_Z3newv");  // module reloaded: the same address now names another kernel
  w.AddStrings({&e, 1});
  second.Kernel(kT0 + 2, kT0 + 3, 2, 0x10);
  w.WriteRawBuffer(second.bytes(), 0, 0);
  w.Close(0);
  auto b = Build(dir.path());
  ASSERT_EQ(b->sink.rows.size(), 2u);
  EXPECT_EQ(b->sink.rows[0].name, "old()");
  EXPECT_EQ(b->sink.rows[1].name, "new()");
}

TEST(TraceBuilderTest, NonMonotonicCalibrationIsCountedAndMissingOneIsFine) {
  TempDir dir;
  BufferBuilder gpu;
  gpu.Kernel(kT0 + 1000, kT0 + 2000, 1, 0);
  WriteRecording(dir.path(), {gpu.bytes()}, {}, {{kT0, 5}, {kT0 - 10, 7}});
  auto b = Build(dir.path());
  EXPECT_EQ(b->counts.calibration.non_monotonic, 1u);
  EXPECT_EQ(b->sink.rows.at(0).row.wall_start, 5 + 1000);
  EXPECT_TRUE(b->counts.HasWarnings());

  TempDir plain;
  WriteRecording(plain.path(), {gpu.bytes()});
  auto p = Build(plain.path());
  EXPECT_EQ(p->sink.rows.at(0).row.wall_start, static_cast<int64_t>(kT0 + 1000));
}

TEST(TraceBuilderTest, UnknownKindStopsOnlyThatBuffer) {
  TempDir dir;
  BufferBuilder bad, good;
  std::vector<uint8_t> unknown(24, 0);
  unknown[0] = 120;
  bad.Kernel(kT0, kT0 + 1, 1, 0).AddRaw(unknown).Kernel(kT0, kT0 + 1, 2, 0);
  good.Kernel(kT0, kT0 + 1, 3, 0);
  WriteRecording(dir.path(), {bad.bytes(), good.bytes()});
  auto b = Build(dir.path());
  EXPECT_EQ(b->sink.rows.size(), 2u);
  EXPECT_EQ(b->counts.buffers_stopped, 1u);
  EXPECT_EQ(b->counts.stopped_by_kind.at(120), 1u);
}

TEST(TraceBuilderTest, SampleCarriesAnnotationsAndJoinsEveryActivity) {
  TempDir dir;
  testing::WriteSampleRecording(dir.path());
  auto b = Build(dir.path());
  EXPECT_EQ(b->counts.gpu_without_api, 0u);
  size_t annotated = 0;
  for (const auto& r : b->sink.rows) annotated += r.annotation == "train_step";
  EXPECT_EQ(annotated, 4u);  // two launches and their two kernels
}

TEST(TraceBuilderTest, SmallHorizonBoundsTheJoinWindow) {
  TempDir dir;
  BufferBuilder gpu, filler, api;
  gpu.Kernel(kT0, kT0 + 10, 1, 0);
  for (uint32_t i = 0; i < 10; ++i) filler.Memset(kT0, kT0 + 1, 100 + i, 8);
  api.Runtime(kT0, kT0 + 5, 1, 211);
  WriteRecording(dir.path(), {gpu.bytes(), filler.bytes(), api.bytes()});
  EXPECT_EQ(Build(dir.path(), 4)->counts.gpu_without_api, 11u);  // the API came too late
  EXPECT_EQ(Build(dir.path(), 64)->counts.gpu_without_api, 10u);
}

// The correlation table indexes ids by their low bits (correlation_table.h: 8 index slots per live
// id, at least 1024): ids that differ by a multiple of the index size share a slot, and all but
// one of them live in the table's overflow map. Each kernel must still join its own call.
void ExpectEachKernelJoinsItsOwnCall(const Built& b, size_t pairs) {
  EXPECT_EQ(b.counts.gpu_without_api, 0u);
  EXPECT_EQ(b.counts.api_without_gpu, 0u);
  EXPECT_EQ(b.counts.duplicate_api_correlation, 0u);
  ASSERT_EQ(b.sink.Count(RowType::kKernel), pairs);
  for (const auto& r : b.sink.rows) {
    if (r.row.type == RowType::kApi) {
      EXPECT_EQ(r.row.launched, 1u) << "call " << r.row.correlation;
      continue;
    }
    ASSERT_TRUE(r.row.api.found) << "kernel " << r.row.correlation;
    EXPECT_EQ(r.row.api.start + 50, r.row.start) << "kernel " << r.row.correlation;
  }
}

TEST(TraceBuilderTest, CorrelationIdsSharingAnIndexSlotJoinTheirOwnCalls) {
  // Horizon 4: at most 18 live ids, a 1024-slot index and a 1024-entry ring. 3,000 ids 1024
  // apart all land in one slot, and the ring wraps: evictions erase from the slot and the map.
  // Two pairs a buffer, so that no entry is evicted before its kernel row is emitted.
  TempDir dir;
  std::vector<std::vector<uint8_t>> buffers;
  constexpr size_t kPairs = 3000;
  for (uint32_t i = 0; i < kPairs; i += 2) {
    BufferBuilder mixed;
    for (uint32_t j = i; j < i + 2; ++j) {
      const uint64_t t = kT0 + 100 * uint64_t{j};
      mixed.Runtime(t, t + 10, 5 + 1024 * j, 211).Kernel(t + 50, t + 60, 5 + 1024 * j, 0x10);
    }
    buffers.push_back(mixed.bytes());
  }
  WriteRecording(dir.path(), buffers, {{0x10, "_Z1kv"}});
  ExpectEachKernelJoinsItsOwnCall(*Build(dir.path(), 4), kPairs);

  // Default horizon: a 2^22-slot index. Kernels arrive first, so their calls find entries that
  // the kernels created, most of them in the overflow map.
  TempDir dir2;
  BufferBuilder gpu, api;
  constexpr size_t kFar = 500;
  for (uint32_t i = 0; i < kFar; ++i) {
    const uint64_t t = kT0 + 100 * uint64_t{i};
    const uint32_t corr = 9 + (uint32_t{1} << 22) * i;
    gpu.Kernel(t + 50, t + 60, corr, 0x10);
    api.Runtime(t, t + 10, corr, 211);
  }
  WriteRecording(dir2.path(), {gpu.bytes(), api.bytes()}, {{0x10, "_Z1kv"}});
  ExpectEachKernelJoinsItsOwnCall(*Build(dir2.path()), kFar);
}

// A builder that finishes leaves its emptied correlation table to the next one of the same horizon
// (the next rank of an export). The next recording reuses the same ids, some of them through the
// overflow map, and has no calls: none of its kernels may join a call of the first.
TEST(TraceBuilderTest, AReusedCorrelationTableHoldsNothingOfTheLastRecording) {
  constexpr size_t kPairs = 40;
  const auto corr = [](uint32_t j) { return 5 + j / 4 + 1024 * (j % 4); };  // 4 ids a slot
  TempDir first, second;
  std::vector<std::vector<uint8_t>> buffers;
  for (uint32_t i = 0; i < kPairs; i += 2) {
    BufferBuilder mixed;
    for (uint32_t j = i; j < i + 2; ++j) {
      const uint64_t t = kT0 + 100 * uint64_t{j};
      mixed.Runtime(t, t + 10, corr(j), 211).Kernel(t + 50, t + 60, corr(j), 0x10);
    }
    buffers.push_back(mixed.bytes());
  }
  WriteRecording(first.path(), buffers, {{0x10, "_Z1kv"}});
  BufferBuilder gpu;
  for (uint32_t j = 0; j < kPairs; ++j)
    gpu.Kernel(kT0 + 100 * uint64_t{j} + 50, kT0 + 100 * uint64_t{j} + 60, corr(j), 0x10);
  WriteRecording(second.path(), {gpu.bytes()}, {{0x10, "_Z1kv"}});

  // Horizon 16: up to 66 live entries, all 40 ids live when the first builder finishes.
  ExpectEachKernelJoinsItsOwnCall(*Build(first.path(), 16), kPairs);
  const auto b = Build(second.path(), 16);
  EXPECT_EQ(b->counts.gpu_without_api, kPairs);
  ASSERT_EQ(b->sink.Count(RowType::kKernel), kPairs);
  for (const auto& r : b->sink.rows) EXPECT_FALSE(r.row.api.found) << r.row.correlation;
  // And the first recording again, through the table the second left.
  ExpectEachKernelJoinsItsOwnCall(*Build(first.path(), 16), kPairs);
}

// CUPTI delivers buffers per stream as they fill, so a later buffer can hold earlier work.
void WriteDisordered(const std::string& dir) {
  BufferBuilder late, early, api;
  for (uint32_t i = 0; i < 5; ++i) late.Kernel(kT0 + 10'000 + i * 100, kT0 + 10'050 + i * 100, 100 + i, 0x10, 8);
  for (uint32_t i = 0; i < 5; ++i) early.Kernel(kT0 + 1'000 + i * 100, kT0 + 1'050 + i * 100, 200 + i, 0x10, 7);
  api.Runtime(kT0 + 500, kT0 + 600, 200, 211).Runtime(kT0 + 9'000, kT0 + 9'100, 100, 211);
  WriteRecording(dir, {late.bytes(), early.bytes(), api.bytes()}, {{0x10, "_Z1kv"}});
}

TEST(TraceBuilderTest, ReorderSortsRowsByStartTime) {
  TempDir dir;
  WriteDisordered(dir.path());
  auto delivery = Build(dir.path());
  ASSERT_EQ(delivery->sink.rows.size(), 12u);
  EXPECT_EQ(delivery->sink.rows.front().row.start, kT0 + 10'000);  // delivery order by default

  auto sorted = Build(dir.path(), 1 << 16, ReorderOptions{64, 0});
  ASSERT_EQ(sorted->sink.rows.size(), 12u);
  for (size_t i = 1; i < sorted->sink.rows.size(); ++i)
    EXPECT_LE(sorted->sink.rows[i - 1].row.start, sorted->sink.rows[i].row.start) << i;
  EXPECT_EQ(sorted->sink.rows.front().row.type, RowType::kApi);
  EXPECT_EQ(sorted->counts.out_of_order, 0u);
  // Joins are unchanged by the reordering: the two kernels with a launch record (correlation ids
  // 100 and 200) keep it, the eight without one stay unjoined.
  for (const auto& r : sorted->sink.rows) {
    if (r.row.type == RowType::kKernel) {
      EXPECT_EQ(r.row.api.found, r.row.correlation % 100 == 0) << r.row.correlation;
    }
  }
  EXPECT_EQ(sorted->counts.gpu_without_api, 8u);
  EXPECT_EQ(delivery->counts.gpu_without_api, 8u);
}

TEST(TraceBuilderTest, ReorderMergesMoreInterleavedBuffersThanItHasRuns) {
  // 12 ascending buffers whose starts interleave (more than the stage's 8 sorted runs), one
  // descending buffer (every row but its first goes to the heap) and one that repeats buffer 0's
  // starts (equal starts leave in arrival order). Ids: 1000 + 100 * buffer + index; the repeat
  // 5000 + index.
  TempDir dir;
  std::vector<std::vector<uint8_t>> buffers;
  constexpr uint32_t kPer = 40;
  auto start_of = [](uint32_t buffer, uint32_t i) { return kT0 + 1000 + (i * 12 + buffer) * 10; };
  for (uint32_t b = 0; b < 12; ++b) {
    BufferBuilder gpu;
    for (uint32_t i = 0; i < kPer; ++i)
      gpu.Kernel(start_of(b, i), start_of(b, i) + 5, 1000 + 100 * b + i, 0x10, b);
    buffers.push_back(gpu.bytes());
  }
  BufferBuilder down, repeat;
  for (uint32_t i = kPer; i-- > 0;)
    down.Kernel(start_of(0, i) + 5, start_of(0, i) + 6, 3000 + i, 0x10);
  for (uint32_t i = 0; i < kPer; ++i)
    repeat.Kernel(start_of(0, i), start_of(0, i) + 5, 5000 + i, 0x10);
  buffers.push_back(down.bytes());
  buffers.push_back(repeat.bytes());
  WriteRecording(dir.path(), buffers, {{0x10, "_Z1kv"}});
  constexpr size_t kRows = 14 * kPer;

  auto sorted = Build(dir.path(), 1 << 16, ReorderOptions{100'000, 0});
  ASSERT_EQ(sorted->sink.rows.size(), kRows);
  EXPECT_EQ(sorted->counts.out_of_order, 0u);
  for (size_t i = 1; i < kRows; ++i) {
    const Row& a = sorted->sink.rows[i - 1].row;
    const Row& b = sorted->sink.rows[i].row;
    ASSERT_LE(a.start, b.start) << "row " << i;
    if (a.start == b.start) {
      EXPECT_EQ(a.correlation + 4000, b.correlation) << "row " << i;  // buffer 0, then the repeat
    } else {
      EXPECT_NE(b.correlation / 1000, 5u) << "row " << i << ": the repeat's row left alone";
    }
  }

  // A bound below the disorder: every row is still emitted once, the late ones counted.
  auto bounded = Build(dir.path(), 1 << 16, ReorderOptions{16, 0});
  ASSERT_EQ(bounded->sink.rows.size(), kRows);
  EXPECT_GT(bounded->counts.out_of_order, 0u);
  std::vector<uint32_t> ids;
  for (const auto& r : bounded->sink.rows) ids.push_back(r.row.correlation);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
}

TEST(TraceBuilderTest, RowsLaterThanTheReorderBoundAreEmittedAndCounted) {
  TempDir dir;
  WriteDisordered(dir.path());
  // Two rows held: the five late-delivered-early kernels and the early API call arrive after
  // later rows were written. Nothing is lost; each such row is counted.
  auto b = Build(dir.path(), 1 << 16, ReorderOptions{2, 0});
  ASSERT_EQ(b->sink.rows.size(), 12u);
  EXPECT_GT(b->counts.out_of_order, 0u);
  size_t inversions = 0;
  for (size_t i = 1; i < b->sink.rows.size(); ++i)
    inversions += b->sink.rows[i].row.start < b->sink.rows[i - 1].row.start;
  EXPECT_GT(inversions, 0u);
  EXPECT_LE(inversions, b->counts.out_of_order);
}

TEST(TraceBuilderTest, ReorderTimeHorizonReleasesRowsEarly) {
  TempDir dir;
  WriteDisordered(dir.path());
  // A 1 us horizon releases the first buffer's kernels once the stream has moved 1 us past them,
  // so the earlier buffers that follow come out of order; a 1 s horizon holds everything.
  auto tight = Build(dir.path(), 1 << 16, ReorderOptions{1000, 100});
  EXPECT_GT(tight->counts.out_of_order, 0u);
  auto loose = Build(dir.path(), 1 << 16, ReorderOptions{1000, 1'000'000'000});
  EXPECT_EQ(loose->counts.out_of_order, 0u);
  EXPECT_EQ(tight->sink.rows.size(), loose->sink.rows.size());
}

TEST(TraceBuilderTest, ReportsSortTracesButSummaryIgnoresOrder) {
  TempDir dir;
  WriteDisordered(dir.path());
  std::ostringstream out, err;
  ReportOptions opt;
  opt.format = ExportFormat::kJsonl;
  ASSERT_EQ(RunReport(ReportKind::kExport, dir.path(), opt, out, err), kExitClean) << err.str();
  std::istringstream lines(out.str());
  std::string line;
  int64_t prev = 0;
  size_t n = 0;
  while (std::getline(lines, line)) {
    const size_t at = line.find("\"start_ns\":");
    ASSERT_NE(at, std::string::npos) << line;
    const int64_t start = std::stoll(line.substr(at + 11));
    EXPECT_GE(start, prev) << line;
    prev = start;
    ++n;
  }
  EXPECT_EQ(n, 12u);
}

TEST(TraceBuilderTest, KernelsLaunchedBeforeAWindowAreMarkedAndNoOthers) {
  // A kernel queued before a window opened can start inside it; its launch call came before the
  // window's runtime records began. Such rows are marked (correlation id below the window's first
  // API record's); a kernel launched inside the window whose launch record is missing is not.
  TempDir dir;
  {
    RecordingWriter w(testing::WriterOptions(dir.path()), testing::SyntheticHeader());
    ASSERT_TRUE(w.Open().has_value());
    std::vector<pb::StringEntry> names(1);
    names[0].set_pointer(0x10);
    names[0].set_text("_Z1kv");
    w.AddStrings(names);
    const auto marker = [&](pb::WindowMarker::Edge edge, uint64_t t) {
      pb::WindowMarker m;
      m.set_window_id(1);
      m.set_edge(edge);
      m.set_source(pb::TRIGGER_SIGNAL);
      m.set_cupti_ns(t);
      w.WriteWindowMarker(m);
    };
    BufferBuilder before, gpu, api, after;
    before.Kernel(kT0 + 100, kT0 + 200, 1, 0x10).Kernel(kT0 + 300, kT0 + 400, 2, 0x10);
    w.WriteRawBuffer(before.bytes(), 0, 0);
    marker(pb::WindowMarker::BEGIN, kT0 + 1000);
    // Kernels first, their buffer ahead of the API buffer (CUPTI's order varies).
    gpu.Kernel(kT0 + 1500, kT0 + 1600, 3, 0x10)   // launched before the window
        .Kernel(kT0 + 2500, kT0 + 2600, 4, 0x10)  // launched before the window
        .Kernel(kT0 + 3000, kT0 + 3100, 10, 0x10)
        .Kernel(kT0 + 5000, kT0 + 5100, 12, 0x10);  // launched inside; its record is missing
    api.Runtime(kT0 + 1200, kT0 + 1300, 10, 211).Runtime(kT0 + 4000, kT0 + 4100, 11, 211);
    w.WriteRawBuffer(gpu.bytes(), 0, 0);
    w.WriteRawBuffer(api.bytes(), 0, 0);
    marker(pb::WindowMarker::END, kT0 + 100000);
    after.Kernel(kT0 + 200000, kT0 + 200100, 5, 0x10);
    w.WriteRawBuffer(after.bytes(), 0, 0);
    w.Close(0);
  }
  auto listing = ListRecordings(dir.path());
  ASSERT_TRUE(listing.has_value());
  CollectingSink sink;
  TraceBuilder b(TraceFilter{}, &sink, 1 << 16, ReorderOptions{});
  ReadIntegrity integrity;
  ReadRecording(listing->recordings.at(0), b, &integrity);
  b.Finish();
  std::vector<uint32_t> marked, unjoined;
  for (const auto& r : sink.rows) {
    if (r.row.type != RowType::kKernel) continue;
    if (r.row.api.before_window) marked.push_back(r.row.correlation);
    if (!r.row.api.found) unjoined.push_back(r.row.correlation);
  }
  std::sort(marked.begin(), marked.end());
  std::sort(unjoined.begin(), unjoined.end());
  EXPECT_EQ(marked, (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(unjoined, (std::vector<uint32_t>{1, 2, 3, 4, 5, 12}));
  EXPECT_EQ(b.counts().launched_before_window, 2u);
  ASSERT_EQ(b.windows().count(1), 1u);
  EXPECT_EQ(b.windows().at(1).first_api_correlation, 10u);
  EXPECT_EQ(b.windows().at(1).launched_before, 2u);

  const std::string kern = Report(ReportKind::kKernExec, dir.path());
  size_t n = 0;
  for (size_t p = kern.find("(before window)"); p != std::string::npos;
       p = kern.find("(before window)", p + 1))
    ++n;
  EXPECT_EQ(n, 2u) << kern;
  EXPECT_NE(Report(ReportKind::kSummary, dir.path()).find("(2 launched before it opened)"),
            std::string::npos);
  EXPECT_NE(Report(ReportKind::kInfo, dir.path())
                .find("2 GPU activities launched before it opened (no launch record)"),
            std::string::npos);
  ReportOptions jsonl;
  jsonl.format = ExportFormat::kJsonl;
  std::ostringstream out, err;
  RunReport(ReportKind::kExport, dir.path(), jsonl, out, err);
  const std::string rows = out.str();
  n = 0;
  for (size_t p = rows.find("\"launched_before_window\":true"); p != std::string::npos;
       p = rows.find("\"launched_before_window\":true", p + 1))
    ++n;
  EXPECT_EQ(n, 2u) << rows;
}

}  // namespace
}  // namespace cupmon::decoder

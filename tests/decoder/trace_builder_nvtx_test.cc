// NVTX ranges from CUPTI MARKER records: START/END pairing, nesting depth, marks, unended and
// unpaired ranges, GPU rows labelled with the range open on their launching thread or process,
// and the exports.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cupmon/decoder/reports.h"
#include "report_run.h"
#include "cupmon/decoder/steps.h"
#include "cupmon/decoder/trace_builder.h"
#include "decoder_fuzz_entry.h"
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
using testing::kMarkerEnd;
using testing::kMarkerInstant;
using testing::kMarkerStart;
using testing::kT0;
using testing::TempDir;

uint64_t Us(uint64_t n) { return kT0 + n * 1000; }

struct OwnedRow {
  Row row;
  std::string name, domain, range;
};

class CollectingSink : public RowSink {
 public:
  explicit CollectingSink(bool ranges) : ranges_(ranges) {}
  void OnRow(const Row& r) override {
    rows.push_back({r, std::string(r.name), std::string(r.range_domain), std::string(r.range)});
  }
  bool WantsRanges() const override { return ranges_; }
  const OwnedRow* Find(RowType t, const std::string& name, uint32_t corr = 0) const {
    for (const auto& r : rows)
      if (r.row.type == t && r.name == name && (!corr || r.row.correlation == corr)) return &r;
    return nullptr;
  }
  const OwnedRow* Kernel(uint32_t corr) const { return Find(RowType::kKernel, "gemm()", corr); }
  std::vector<OwnedRow> rows;

 private:
  bool ranges_;
};

TraceCounts Build(const std::string& dir, CollectingSink* sink, size_t horizon = 1 << 16,
                  NvtxScope scope = NvtxScope::kProcess) {
  auto listing = ListRecordings(dir);
  EXPECT_TRUE(listing.has_value());
  TraceFilter filter;
  filter.nvtx_scope = scope;
  TraceBuilder b(std::move(filter), sink, horizon);
  ReadIntegrity integrity;
  ReadRecording(listing->recordings.at(0), b, &integrity);
  b.Finish();
  return b.counts();
}

TEST(TraceBuilderNvtxTest, RangesPairNestAndCountWhatDoesNotPair) {
  TempDir dir;
  testing::WriteNvtxRecording(dir.path());
  CollectingSink sink(true);
  const TraceCounts c = Build(dir.path(), &sink);
  EXPECT_EQ(c.nvtx.ranges, 5u);  // inner, t2 inner, t2 outer, outer, the unresolved one
  EXPECT_EQ(c.nvtx.marks, 1u);
  EXPECT_EQ(c.nvtx.unended, 1u);
  EXPECT_EQ(c.nvtx.ends_without_start, 1u);
  EXPECT_EQ(c.nvtx.unresolved_names, 1u);
  EXPECT_EQ(c.nvtx.range_rows, 7u);
  EXPECT_TRUE(c.HasWarnings());  // the unresolved name is damage

  const OwnedRow* outer = sink.Find(RowType::kRange, "outer");
  const OwnedRow* inner = sink.Find(RowType::kRange, "inner");
  const OwnedRow* mark = sink.Find(RowType::kRange, "checkpoint");
  const OwnedRow* t2_outer = sink.Find(RowType::kRange, "t2 outer");
  const OwnedRow* t2_inner = sink.Find(RowType::kRange, "t2 inner");
  const OwnedRow* never = sink.Find(RowType::kRange, "never ended");
  const OwnedRow* bad = sink.Find(RowType::kRange, "<unresolved range name 0xbad>");
  ASSERT_TRUE(outer && inner && mark && t2_outer && t2_inner && never && bad);
  EXPECT_EQ(outer->row.start, Us(10));
  EXPECT_EQ(outer->row.end, Us(80));
  EXPECT_EQ(outer->row.duration, 70'000u);
  EXPECT_EQ(outer->row.nvtx.depth, 0u);
  EXPECT_EQ(outer->row.tid, 101u);
  EXPECT_EQ(outer->row.pid, testing::kTestPid);
  EXPECT_EQ(outer->domain, "");
  EXPECT_EQ(inner->row.nvtx.depth, 1u);
  EXPECT_EQ(inner->domain, "mylib");
  EXPECT_EQ(inner->row.end, Us(50));
  EXPECT_EQ(inner->row.nvtx.kind, RangeKind::kPushPop);
  EXPECT_EQ(mark->row.nvtx.kind, RangeKind::kMark);
  EXPECT_EQ(mark->row.start, mark->row.end);
  EXPECT_EQ(mark->row.nvtx.depth, 2u);  // inside outer and inner
  EXPECT_EQ(t2_outer->row.tid, 102u);
  EXPECT_EQ(t2_outer->row.nvtx.depth, 0u);
  EXPECT_EQ(t2_inner->row.nvtx.depth, 1u);
  EXPECT_EQ(bad->row.nvtx.depth, 0u);  // thread 102's ranges had ended
  EXPECT_FALSE(never->row.nvtx.ended);
  EXPECT_TRUE(outer->row.nvtx.ended);
  EXPECT_EQ(never->row.start, Us(100));
  EXPECT_EQ(never->row.duration, 0u);
  // Ranges are rows of their own: the GPU and API counts are those of the recording's kernels.
  EXPECT_EQ(c.gpu_rows, 4u);
  EXPECT_EQ(c.api_rows, 4u);
}

TEST(TraceBuilderNvtxTest, KernelsCarryTheInnermostRangeOpenOnTheLaunchingThread) {
  TempDir dir;
  testing::WriteNvtxRecording(dir.path());
  // A sink that does not take ranges still gets the labels, and no range rows.
  CollectingSink sink(false);
  const TraceCounts c = Build(dir.path(), &sink);
  EXPECT_EQ(c.nvtx.range_rows, 0u);
  EXPECT_EQ(c.nvtx.ranges, 5u);
  for (const auto& r : sink.rows) EXPECT_NE(r.row.type, RowType::kRange);
  ASSERT_TRUE(sink.Kernel(1) && sink.Kernel(2) && sink.Kernel(3) && sink.Kernel(4));
  EXPECT_EQ(sink.Kernel(1)->range, "inner");
  EXPECT_EQ(sink.Kernel(2)->range, "t2 outer");
  EXPECT_EQ(sink.Kernel(3)->range, "outer");
  EXPECT_EQ(sink.Kernel(4)->range, "");
}

TEST(TraceBuilderNvtxTest, KernelsEmittedBeforeTheirRangeEndsAreLabelled) {
  // Horizon 1: each kernel leaves the join stage before the END records are read.
  TempDir dir;
  RecordingWriter w(testing::WriterOptions(dir.path()), testing::SyntheticHeader());
  ASSERT_TRUE(w.Open().has_value());
  std::vector<pb::StringEntry> e(2);
  e[0].set_pointer(0x10), e[0].set_text("step 1");
  e[1].set_pointer(0x20), e[1].set_text("_Z4gemmv");
  w.AddStrings(e);
  BufferBuilder starts, api, gpu, ends;
  starts.Marker(kMarkerStart, Us(1), 1, 0x10);
  api.Runtime(Us(2), Us(3), 1, 211).Runtime(Us(4), Us(5), 2, 211).Runtime(Us(20), Us(21), 3, 211);
  gpu.Kernel(Us(6), Us(7), 1, 0x20).Kernel(Us(8), Us(9), 2, 0x20).Kernel(Us(22), Us(23), 3, 0x20);
  ends.Marker(kMarkerEnd, Us(10), 1, 0);
  w.WriteRawBuffer(starts.bytes(), 0, 0);
  w.WriteRawBuffer(api.bytes(), 0, 0);
  w.WriteRawBuffer(gpu.bytes(), 1, 7);
  w.WriteRawBuffer(ends.bytes(), 0, 0);
  w.Close(0);
  CollectingSink sink(true);
  Build(dir.path(), &sink, /*horizon=*/1);
  ASSERT_TRUE(sink.Kernel(1) && sink.Kernel(2) && sink.Kernel(3));
  EXPECT_EQ(sink.Kernel(1)->range, "step 1");
  EXPECT_EQ(sink.Kernel(2)->range, "step 1");
  // Launched after the END: the range was known to have ended by the time this kernel left.
  EXPECT_EQ(sink.Kernel(3)->range, "");
  ASSERT_TRUE(sink.Find(RowType::kRange, "step 1"));
}

TEST(TraceBuilderNvtxTest, RangeEndedOnAnotherThreadIsAStartEndRange) {
  TempDir dir;
  RecordingWriter w(testing::WriterOptions(dir.path()), testing::SyntheticHeader());
  ASSERT_TRUE(w.Open().has_value());
  pb::StringEntry e;
  e.set_pointer(0x10), e.set_text("load");
  w.AddStrings({&e, 1});
  BufferBuilder m;
  m.Marker(kMarkerStart, Us(1), 1, 0x10, 101).Marker(kMarkerEnd, Us(9), 1, 0, 202);
  w.WriteRawBuffer(m.bytes(), 0, 0);
  w.Close(0);
  CollectingSink sink(true);
  const TraceCounts c = Build(dir.path(), &sink);
  ASSERT_EQ(sink.rows.size(), 1u);
  EXPECT_EQ(sink.rows[0].row.nvtx.kind, RangeKind::kStartEnd);
  EXPECT_EQ(sink.rows[0].row.tid, 101u);  // the thread that started it
  EXPECT_FALSE(c.HasWarnings());
}

// A training step marked on the main thread (101) while other threads launch: "step 1" with
// "bwd" nested in it, a loader thread (103) with its own range "load" opened later, and launches
// (correlation ids) on the backward thread (102) and on the main thread:
//   corr 1 at 22 on 102, inside bwd;           corr 3 at 25 on 101, inside bwd (its own);
//   corr 5 at 34 on 102, step 1 and load open; corr 2 at 37 on 102, inside step 1 only;
//   corr 4 at 45 on 102, after every range closed.
void WriteBackwardThreadRecording(const std::string& dir) {
  RecordingWriter w(testing::WriterOptions(dir), testing::SyntheticHeader());
  ASSERT_TRUE(w.Open().has_value());
  std::vector<pb::StringEntry> e(4);
  e[0].set_pointer(0x10), e[0].set_text("step 1");
  e[1].set_pointer(0x11), e[1].set_text("bwd");
  e[2].set_pointer(0x12), e[2].set_text("load");
  e[3].set_pointer(0x20), e[3].set_text("_Z4gemmv");
  w.AddStrings(e);
  BufferBuilder main, backward, loader, gpu;
  main.Marker(kMarkerStart, Us(10), 1, 0x10)
      .Marker(kMarkerStart, Us(20), 2, 0x11)
      .Runtime(Us(25), Us(26), 3, 211)
      .Marker(kMarkerEnd, Us(30), 2, 0)
      .Marker(kMarkerEnd, Us(40), 1, 0);
  loader.Marker(kMarkerStart, Us(32), 3, 0x12, 103).Marker(kMarkerEnd, Us(36), 3, 0, 103);
  backward.Runtime(Us(22), Us(23), 1, 211, 102)
      .Runtime(Us(34), Us(35), 5, 211, 102)
      .Runtime(Us(37), Us(38), 2, 211, 102)
      .Runtime(Us(45), Us(46), 4, 211, 102);
  for (uint32_t corr = 1; corr <= 5; ++corr)
    gpu.Kernel(Us(50 + 10 * corr), Us(55 + 10 * corr), corr, 0x20);
  // Per-thread buffers, completed in this order (CUDA 13 keeps a buffer per thread).
  w.WriteRawBuffer(backward.bytes(), 0, 0);
  w.WriteRawBuffer(main.bytes(), 0, 0);
  w.WriteRawBuffer(loader.bytes(), 0, 0);
  w.WriteRawBuffer(gpu.bytes(), 1, 7);
  w.Close(0);
}

TEST(TraceBuilderNvtxTest, ThreadScopeLabelsOnlyLaunchesOnTheThreadThatPushed) {
  TempDir dir;
  WriteBackwardThreadRecording(dir.path());
  CollectingSink sink(true);
  Build(dir.path(), &sink, 1 << 16, NvtxScope::kThread);
  for (uint32_t corr : {1u, 2u, 4u, 5u}) {
    ASSERT_TRUE(sink.Kernel(corr));
    EXPECT_EQ(sink.Kernel(corr)->range, "") << "corr " << corr;
  }
  ASSERT_TRUE(sink.Kernel(3));
  EXPECT_EQ(sink.Kernel(3)->range, "bwd");
  EXPECT_EQ(sink.Kernel(3)->row.range_scope, NvtxScope::kThread);
}

TEST(TraceBuilderNvtxTest, ProcessScopeLabelsLaunchesOfThreadsWithoutRanges) {
  TempDir dir;
  WriteBackwardThreadRecording(dir.path());
  CollectingSink sink(true);
  Build(dir.path(), &sink);  // the default scope
  const std::pair<uint32_t, const char*> expected[] = {
      {1, "bwd"}, {5, "load"}, {2, "step 1"}};  // load: opened last of the two open at 34
  for (const auto& [corr, name] : expected) {
    ASSERT_TRUE(sink.Kernel(corr));
    EXPECT_EQ(sink.Kernel(corr)->range, name) << "corr " << corr;
    EXPECT_EQ(sink.Kernel(corr)->row.range_scope, NvtxScope::kProcess) << "corr " << corr;
  }
  // The launching thread's own range stays as it was; after every END, no label.
  EXPECT_EQ(sink.Kernel(3)->range, "bwd");
  EXPECT_EQ(sink.Kernel(3)->row.range_scope, NvtxScope::kThread);
  EXPECT_EQ(sink.Kernel(4)->range, "");
  // Labels do not change the range rows: still on the main and loader threads.
  EXPECT_EQ(sink.Find(RowType::kRange, "bwd")->row.tid, 101u);
  EXPECT_EQ(sink.Find(RowType::kRange, "load")->row.tid, 103u);
}

TEST(TraceBuilderNvtxTest, ExportsMarkLabelsTakenFromTheProcess) {
  TempDir dir;
  WriteBackwardThreadRecording(dir.path());
  auto count = [](const std::string& s, const std::string& word) {
    size_t n = 0;
    for (size_t p = s.find(word); p != std::string::npos; p = s.find(word, p + 1)) ++n;
    return n;
  };
  size_t perfetto_process_words[2] = {0, 0};
  for (NvtxScope scope : {NvtxScope::kThread, NvtxScope::kProcess}) {
    const bool process = scope == NvtxScope::kProcess;
    ReportOptions o;
    o.filter.nvtx_scope = scope;
    o.format = ExportFormat::kJsonl;
    std::ostringstream jsonl, chrome, perfetto, err;
    EXPECT_EQ(RunReport(ReportKind::kExport, dir.path(), o, jsonl, err), kExitClean) << err.str();
    o.format = ExportFormat::kChromeJson;
    RunReport(ReportKind::kExport, dir.path(), o, chrome, err);
    o.format = ExportFormat::kPerfetto;
    RunReport(ReportKind::kExport, dir.path(), o, perfetto, err);
    const std::string j = jsonl.str(), c = chrome.str(), p = perfetto.str();
    EXPECT_EQ(j.find("\"correlation_id\":1,") != std::string::npos, true);
    EXPECT_EQ(j.find("\"range\":\"bwd\",\"range_scope\":\"process\"") != std::string::npos, process)
        << j;
    EXPECT_EQ(j.find("\"range\":\"step 1\",\"range_scope\":\"process\"") != std::string::npos,
              process)
        << j;
    EXPECT_EQ(j.find("\"range_scope\":\"thread\""), std::string::npos) << "thread: unmarked";
    EXPECT_NE(j.find("\"range\":\"bwd\"}"), std::string::npos) << "corr 3, its own thread's";
    EXPECT_EQ(c.find("\"nvtx_range\":\"step 1\",\"nvtx_scope\":\"process\"") != std::string::npos,
              process)
        << c;
    EXPECT_EQ(c.find("\"nvtx_range\":\"bwd\"}}") != std::string::npos, true) << c;
    // Perfetto interns the annotation name nvtx_scope at the first label from the process (a
    // trace without one keeps its bytes), and writes "process" on each of those three kernels.
    EXPECT_EQ(p.find("nvtx_scope") != std::string::npos, process);
    perfetto_process_words[process] = count(p, "process");
  }
  EXPECT_EQ(perfetto_process_words[1], perfetto_process_words[0] + 3);
}

// tests/data/h200-torch-nvtx: 20 steps, "step N" and "forward" pushed on the main thread;
// autograd runs each backward pass on its own thread, which pushes no range. Nsight Systems'
// projection leaves those kernels unlabelled; the process scope gives them their step.
TEST(TraceBuilderNvtxTest, TorchBackwardKernelsTakeTheStepOpenOnTheMainThread) {
  const std::string rec = std::string(CUPMON_SOURCE_DIR) + "/tests/data/h200-torch-nvtx";
  struct Tally {
    std::map<uint64_t, size_t> kernels_by_thread;
    std::map<std::pair<uint64_t, std::string>, size_t> labels;  // (thread, label "scope:name")
  };
  auto tally = [&](NvtxScope scope) {
    CollectingSink sink(true);
    Build(rec, &sink, 1 << 16, scope);
    Tally t;
    std::vector<const OwnedRow*> steps;
    for (const OwnedRow& r : sink.rows)
      if (r.row.type == RowType::kRange && r.name.starts_with("step ")) steps.push_back(&r);
    for (const OwnedRow& r : sink.rows) {
      if (r.row.type != RowType::kKernel || !r.row.api.found) continue;
      // A step label names the step range that held the launch, never a neighbour.
      for (const OwnedRow* s : steps) {
        if (r.range.starts_with("step ") && s->row.start <= r.row.api.start &&
            r.row.api.start <= s->row.end) {
          EXPECT_EQ(r.range, s->name) << "launch at " << r.row.api.start;
        }
      }
      ++t.kernels_by_thread[r.row.api.tid];
      std::string label = r.range;
      if (label.starts_with("step ")) label = "step N";  // one per step: counted together
      if (!label.empty())
        label = (r.row.range_scope == NvtxScope::kProcess ? "process:" : "thread:") + label;
      ++t.labels[{r.row.api.tid, label}];
    }
    return t;
  };
  const Tally thread = tally(NvtxScope::kThread), process = tally(NvtxScope::kProcess);
  ASSERT_FALSE(HasFailure());
  constexpr uint64_t kMain = 3296379200, kAutograd = 1592616640;
  EXPECT_EQ(thread.kernels_by_thread, (std::map<uint64_t, size_t>{{kAutograd, 800}, {kMain, 700}}));
  using Key = std::pair<uint64_t, std::string>;
  EXPECT_EQ(thread.labels, (std::map<Key, size_t>{{{kAutograd, ""}, 800},
                                                  {{kMain, "thread:forward"}, 520},
                                                  {{kMain, "thread:step N"}, 180}}));
  EXPECT_EQ(process.labels, (std::map<Key, size_t>{{{kAutograd, "process:step N"}, 800},
                                                   {{kMain, "thread:forward"}, 520},
                                                   {{kMain, "thread:step N"}, 180}}));
}

TEST(TraceBuilderNvtxTest, JsonlHasRangeRowsAndLabelsAndSampleHasNone) {
  TempDir dir;
  testing::WriteNvtxRecording(dir.path());
  ReportOptions o;
  o.format = ExportFormat::kJsonl;
  std::ostringstream out, err;
  EXPECT_EQ(RunReport(ReportKind::kExport, dir.path(), o, out, err), kExitWarnings);
  const std::string s = out.str();
  const std::string inner = "\"type\":\"range\",\"kind\":12,\"nvtx\":\"push_pop\","
                            "\"name\":\"inner\",\"domain\":\"mylib\",\"pid\":4242,\"tid\":101,"
                            "\"start_ns\":" +
                            std::to_string(Us(20)) + ",\"end_ns\":" + std::to_string(Us(50)) +
                            ",\"duration_ns\":30000,\"depth\":1}";
  EXPECT_NE(s.find(inner), std::string::npos) << s;
  EXPECT_NE(s.find("\"nvtx\":\"mark\",\"name\":\"checkpoint\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"name\":\"never ended\",\"domain\":\"\",\"pid\":4242,\"tid\":101,"
                   "\"start_ns\":" + std::to_string(Us(100)) +
                   ",\"end_ns\":null,\"duration_ns\":null,\"depth\":0}"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("\"correlation_id\":1,\"name\":\"gemm()\""), std::string::npos);
  EXPECT_NE(s.find("\"range\":\"inner\""), std::string::npos) << s;
  size_t labelled = 0;
  for (size_t p = s.find("\"range\":\""); p != std::string::npos; p = s.find("\"range\":\"", p + 1))
    ++labelled;
  EXPECT_EQ(labelled, 3u);  // kernels 1-3; kernel 4 was launched outside every range
  EXPECT_NE(err.str().find("NVTX range name pointer 0xbad has no string entry"), std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("never ended"), std::string::npos) << err.str();

  TempDir plain;
  testing::WriteSampleRecording(plain.path());
  std::ostringstream out2, err2;
  RunReport(ReportKind::kExport, plain.path(), o, out2, err2);
  EXPECT_EQ(out2.str().find("\"range\""), std::string::npos);
  EXPECT_EQ(out2.str().find("\"type\":\"range\""), std::string::npos);
}

TEST(TraceBuilderNvtxTest, ChromeJsonDrawsRangesOnTheirThreadAndLabelsKernels) {
  TempDir dir;
  testing::WriteNvtxRecording(dir.path());
  ReportOptions o;
  o.format = ExportFormat::kChromeJson;
  std::ostringstream out, err;
  RunReport(ReportKind::kExport, dir.path(), o, out, err);
  const std::string s = out.str();
  // Times count from the process start, kT0 - 1 s.
  EXPECT_NE(s.find("{\"name\":\"inner\",\"cat\":\"nvtx\",\"ph\":\"X\",\"pid\":4242,\"tid\":101,"
                   "\"ts\":1000020.000,\"dur\":30.000,\"args\":{\"depth\":1,\"nvtx\":\"push_pop\","
                   "\"domain\":\"mylib\"}}"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("{\"name\":\"checkpoint\",\"cat\":\"nvtx\",\"ph\":\"i\",\"s\":\"t\","
                   "\"pid\":4242,\"tid\":101,\"ts\":1000025.000,"
                   "\"args\":{\"depth\":2,\"nvtx\":\"mark\"}}"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("\"name\":\"never ended\""), std::string::npos);
  EXPECT_NE(s.find("\"unended\":true"), std::string::npos);
  EXPECT_NE(s.find("\"registers\":32,\"nvtx_range\":\"t2 outer\"}}"), std::string::npos) << s;

  TempDir plain;
  testing::WriteSampleRecording(plain.path());
  std::ostringstream out2, err2;
  RunReport(ReportKind::kExport, plain.path(), o, out2, err2);
  EXPECT_EQ(out2.str().find("nvtx"), std::string::npos);
}

TEST(TraceBuilderNvtxTest, SummaryAndInfoHaveAnNvtxSectionOnlyWithNvtx) {
  TempDir dir;
  testing::WriteNvtxRecording(dir.path());
  std::ostringstream out, err, info, err2;
  RunReport(ReportKind::kSummary, dir.path(), ReportOptions{}, out, err);
  const std::string s = out.str();
  EXPECT_NE(s.find("==cupmon== NVTX: 5 ranges, 1 marks, 1 unended, 1 END(s) without START, 1 "
                   "unresolved names\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("    NVTX ranges:   42.17%   70.000us         1   70.000us   70.000us   "
                   "70.000us  outer\n"),
            std::string::npos)
      << s;
  // Never ended: one call, no time; the mark is not a range.
  EXPECT_NE(s.find("0.00%        0ns         1          -          -          -  never ended"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("checkpoint"), std::string::npos);
  RunReport(ReportKind::kInfo, dir.path(), ReportOptions{}, info, err2);
  EXPECT_NE(info.str().find("  nvtx: 5 ranges, 1 marks"), std::string::npos) << info.str();

  TempDir plain;
  testing::WriteSampleRecording(plain.path());
  std::ostringstream out2, info2, e1, e2;
  RunReport(ReportKind::kSummary, plain.path(), ReportOptions{}, out2, e1);
  RunReport(ReportKind::kInfo, plain.path(), ReportOptions{}, info2, e2);
  EXPECT_EQ(out2.str().find("NVTX"), std::string::npos);
  EXPECT_EQ(info2.str().find("nvtx"), std::string::npos);
}

TEST(TraceBuilderNvtxTest, KinetoWritesRangesAsUserAnnotations) {
  TempDir dir, out_dir;
  testing::WriteNvtxRecording(dir.path());
  ReportOptions o;
  o.format = ExportFormat::kKineto;
  o.output_dir = out_dir.path();
  std::ostringstream out, err;
  RunReport(ReportKind::kExport, dir.path(), o, out, err);
  std::string all;
  for (const auto& f : std::filesystem::directory_iterator(out_dir.path())) {
    std::ifstream in(f.path());
    all += std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  EXPECT_NE(all.find("{\"name\":\"inner\",\"cat\":\"user_annotation\",\"ph\":\"X\",\"pid\":4242,"
                     "\"tid\":101,"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("\"name\":\"t2 outer\",\"cat\":\"user_annotation\""), std::string::npos);
  EXPECT_EQ(all.find("checkpoint"), std::string::npos);   // marks are left out
  EXPECT_EQ(all.find("never ended"), std::string::npos);  // and ranges never ended
}

// Four NVTX ranges "step 1".."step 4" on thread 101, each around two launches (gemm, relu) whose
// kernels run inside it, and a range "forward" nested in step 3 around its second launch.
void WriteNvtxSteps(const std::string& dir) {
  RecordingWriter w(testing::WriterOptions(dir), testing::SyntheticHeader());
  ASSERT_TRUE(w.Open().has_value());
  std::vector<pb::StringEntry> e(7);
  for (int n = 0; n < 4; ++n) {
    e[n].set_pointer(0x10 + n);
    e[n].set_text("step " + std::to_string(n + 1));
  }
  e[4].set_pointer(0x20), e[4].set_text("_Z4gemmv");
  e[5].set_pointer(0x21), e[5].set_text("_Z4reluv");
  e[6].set_pointer(0x30), e[6].set_text("forward");
  w.AddStrings(e);
  BufferBuilder cpu, gpu;
  for (uint32_t n = 1; n <= 4; ++n) {
    const uint64_t base = n * 1000;
    cpu.Marker(kMarkerStart, Us(base), n, 0x10 + n - 1)
        .Runtime(Us(base + 10), Us(base + 12), 2 * n - 1, 211);
    if (n == 3) cpu.Marker(kMarkerStart, Us(base + 15), 100, 0x30);
    cpu.Runtime(Us(base + 20), Us(base + 22), 2 * n, 211);
    if (n == 3) cpu.Marker(kMarkerEnd, Us(base + 25), 100, 0);
    cpu.Marker(kMarkerEnd, Us(base + 500), n, 0);
    gpu.Kernel(Us(base + 100), Us(base + 200), 2 * n - 1, 0x20)
        .Kernel(Us(base + 300), Us(base + 400), 2 * n, 0x21);
  }
  w.WriteRawBuffer(cpu.bytes(), 0, 0);
  w.WriteRawBuffer(gpu.bytes(), 1, 7);
  w.Close(0);
}

TEST(TraceBuilderNvtxTest, StepsByAnnotationTakeStepLikeNvtxRanges) {
  TempDir dir;
  WriteNvtxSteps(dir.path());
  auto listing = ListRecordings(dir.path());
  ASSERT_TRUE(listing.has_value());
  StepOptions o;
  o.source = StepSource::kAnnotation;
  const StepList list = FindSteps(listing->recordings.at(0), o);
  EXPECT_EQ(list.source, StepSource::kAnnotation);
  ASSERT_EQ(list.steps.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(list.steps[i].label, "step " + std::to_string(i + 1));
    EXPECT_EQ(list.steps[i].kernels, 2u) << "step " << i + 1;
    EXPECT_EQ(list.steps[i].start, Us((i + 1) * 1000 + 100));
  }
  // Auto picks the labels too: every step carries one.
  StepOptions a;
  EXPECT_EQ(FindSteps(listing->recordings.at(0), a).source, StepSource::kAnnotation);
}

TEST(TraceBuilderNvtxTest, DamagedMarkersNeverCrashOrLeakIntoOtherRows) {
  // A second START with a held id, an END with id 0, a START with no timestamp, and a marker
  // with a kind the decoder does not pair (a sync marker): counted or ignored, never fatal.
  TempDir dir;
  RecordingWriter w(testing::WriterOptions(dir.path()), testing::SyntheticHeader());
  ASSERT_TRUE(w.Open().has_value());
  BufferBuilder m, api, gpu;
  m.Marker(kMarkerStart, Us(1), 5, 0xfeed)
      .Marker(kMarkerStart, Us(2), 5, 0xfeed)
      .Marker(kMarkerEnd, Us(3), 0, 0)
      .Marker(kMarkerStart, 0, 6, 0)
      .Marker(8 /* SYNC_ACQUIRE */, Us(4), 7, 0)
      .Marker(kMarkerEnd, Us(9), 5, 0);
  api.Runtime(Us(2), Us(3), 1, 211);
  gpu.Kernel(Us(4), Us(5), 1, 0);
  w.WriteRawBuffer(m.bytes(), 0, 0);
  w.WriteRawBuffer(api.bytes(), 0, 0);
  w.WriteRawBuffer(gpu.bytes(), 1, 7);
  w.Close(0);
  CollectingSink sink(true);
  const TraceCounts c = Build(dir.path(), &sink);
  EXPECT_EQ(c.nvtx.ranges, 1u);
  EXPECT_EQ(c.nvtx.ends_without_start, 1u);
  EXPECT_EQ(c.nvtx.unended, 1u);         // id 6
  EXPECT_EQ(c.nvtx.unresolved_names, 2u);  // both STARTs of id 5
  const OwnedRow* untimed = sink.Find(RowType::kRange, "(unnamed)");
  ASSERT_TRUE(untimed);
  EXPECT_FALSE(untimed->row.valid_time);
  const OwnedRow* k = sink.Find(RowType::kKernel, "<unresolved kernel name 0x0>");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->range, "<unresolved range name 0xfeed>");
  EXPECT_EQ(c.unknown_timestamps, 0u);  // marker times are not GPU/API timestamps
}

TEST(TraceBuilderNvtxTest, FuzzSeedWithMarkersDecodesToItsRows) {
  // tests/fuzz/record_corpus/d5cca49f...: marks, nested and unended ranges, an END without START,
  // an END on another thread, an untimed START, a sync marker, two launches and their kernels.
  const auto bytes = testing::ReadAll(std::string(CUPMON_SOURCE_DIR) +
                                      "/tests/fuzz/record_corpus/"
                                      "d5cca49f799d60e43d40206edb4d45c6f257ee95");
  ASSERT_EQ(bytes.size(), 1073u);
  // 1 mark, 2 ended ranges, 3 unended (one untimed), 2 API rows, 2 kernels.
  EXPECT_EQ(fuzz::DecodeRawBufferFuzzInput(bytes.data(), bytes.size()), 10u);
}

}  // namespace
}  // namespace cupmon::decoder

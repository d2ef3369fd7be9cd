// The Kineto JSON export (decoder/src/export/kineto/kineto_exporter.cc): the synthetic sample's
// trace against its golden file (tests/data/golden/kineto-rank0.json; CUPMON_UPDATE_GOLDEN=1
// rewrites it), steps from annotations and from a KinetoStepSource, and bad output directories
// and regions.
// tests/decoder/kineto_export_test.py checks real recordings with HTA itself.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "cupmon/decoder/reports.h"
#include "report_run.h"
#include "cupmon/decoder/steps.h"
#include "export/kineto/kineto_exporter.h"
#include "json_parser.h"
#include "recording_builder.h"
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
using testing::JsonParser;
namespace fs = std::filesystem;

std::string ReadText(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

Json ParseJson(const std::string& text) {
  Json j;
  EXPECT_TRUE(JsonParser(text).Parse(&j)) << "not JSON: " << text.substr(0, 400);
  return j;
}

// The complete ("X") events of a trace with category `cat`.
std::vector<const Json*> Slices(const Json& trace, const std::string& cat) {
  std::vector<const Json*> out;
  for (const Json& e : trace.fields.at("traceEvents").items)
    if (e.fields.count("ph") && e.fields.at("ph").text == "X" && e.fields.at("cat").text == cat)
      out.push_back(&e);
  return out;
}

int Export(const std::string& in, const std::string& dir, std::string* err_text = nullptr,
           ReportOptions opt = {}) {
  opt.format = ExportFormat::kKineto;
  opt.output_dir = dir;
  std::ostringstream out, err;
  const int rc = RunReport(ReportKind::kExport, in, opt, out, err);
  if (err_text) *err_text = err.str();
  EXPECT_EQ(out.str(), "") << "the kineto export writes nothing to standard output";
  return rc;
}

TEST(KinetoSinkTest, StepNumberOfReadsLabelsThatNameOneStep) {
  EXPECT_EQ(StepNumberOf("step 12"), 12u);
  EXPECT_EQ(StepNumberOf("Step#3"), 3u);
  EXPECT_EQ(StepNumberOf("ProfilerStep#40"), 40u);
  EXPECT_EQ(StepNumberOf("iteration 7"), 7u);
  EXPECT_EQ(StepNumberOf("iter_0"), 0u);
  EXPECT_EQ(StepNumberOf("train_step=5"), 5u);
  EXPECT_EQ(StepNumberOf("Training step: 9"), 9u);
  EXPECT_EQ(StepNumberOf("step12"), 12u);
  EXPECT_FALSE(StepNumberOf("train_step"));
  EXPECT_FALSE(StepNumberOf("step"));
  EXPECT_FALSE(StepNumberOf("step "));
  EXPECT_FALSE(StepNumberOf("step 1 forward"));
  EXPECT_FALSE(StepNumberOf("steps 3"));
  EXPECT_FALSE(StepNumberOf("warmup 2"));
  EXPECT_FALSE(StepNumberOf("forward"));
  EXPECT_EQ(StepNumberOf("step-3"), 3u);
  EXPECT_FALSE(StepNumberOf("step 99999999999999999999999"));  // past uint64
}

class KinetoSampleTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::WriteSampleRecording(in_.path()); }
  testing::TempDir in_, out_;
};

TEST_F(KinetoSampleTest, SampleMatchesGoldenAndHoldsWhatHtaReads) {
  std::string err;
  ASSERT_EQ(Export(in_.path(), out_.path(), &err), kExitClean) << err;
  EXPECT_NE(err.find("wrote " + out_.path() + "/rank0.json"), std::string::npos) << err;
  const std::string text = ReadText(out_.path() + "/rank0.json");
  const std::string golden = std::string(CUPMON_SOURCE_DIR) + "/tests/data/golden/kineto-rank0.json";
  if (std::getenv("CUPMON_UPDATE_GOLDEN")) std::ofstream(golden, std::ios::trunc) << text;
  EXPECT_EQ(text, ReadText(golden)) << "output differs from " << golden;
  EXPECT_FALSE(fs::exists(out_.path() + "/rank0.json.tmp"));

  // HTA's rank regular expression, on the first line where it matches (as trace_file.py).
  std::istringstream lines(text);
  std::string line;
  std::smatch m;
  const std::regex rank_re(R"re("rank":\s+(\d+))re");
  while (std::getline(lines, line) && !std::regex_search(line, m, rank_re)) {
  }
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m[1].str(), "0");

  const Json j = ParseJson(text);
  EXPECT_EQ(j.fields.at("distributedInfo").fields.at("rank").number, 0);
  EXPECT_EQ(j.fields.at("schemaVersion").number, 1);
  ASSERT_TRUE(j.fields.count("baseTimeNanoseconds"));
  // The first event is metadata: HTA reads a correlation to index 0 as "not in the trace".
  EXPECT_EQ(j.fields.at("traceEvents").items.at(0).fields.at("ph").text, "M");
  const auto kernels = Slices(j, "kernel");
  EXPECT_EQ(kernels.size(), 6u);  // three kernels and the graph's three
  for (const Json* k : kernels) {
    const auto& args = k->fields.at("args").fields;
    EXPECT_EQ(args.at("stream").number, k->fields.at("tid").number);
    EXPECT_TRUE(args.count("correlation") && args.count("device") && args.count("grid"));
  }
  EXPECT_EQ(Slices(j, "gpu_memcpy").size(), 2u);
  EXPECT_EQ(Slices(j, "gpu_memset").size(), 1u);
  for (const Json* m2 : Slices(j, "gpu_memcpy"))
    EXPECT_EQ(m2->fields.at("name").text.rfind("Memcpy ", 0), 0u) << m2->fields.at("name").text;
  for (const char* cat : {"cuda_runtime", "cuda_driver"})
    for (const Json* c : Slices(j, cat))
      EXPECT_FALSE(c->fields.at("args").fields.count("stream"))
          << "HTA takes an event with a stream for GPU work";
  // "train_step" has no number: a plain annotation, not an iteration.
  const auto notes = Slices(j, "user_annotation");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0]->fields.at("name").text, "train_step");
  EXPECT_EQ(Slices(j, "Trace").size(), 1u);  // the window
}

// A recording with two annotated steps, "forward" nested in each, and "warmup" before them.
void WriteStepRecording(const std::string& dir) {
  using namespace cupmon::testing;
  RecordingWriter w(WriterOptions(dir, "cupmon-steps"), SyntheticHeader());
  ASSERT_TRUE(w.Open().has_value());
  constexpr uint64_t kGemm = 0x7f0000002000;
  std::vector<pb::StringEntry> strings(5);
  strings[0].set_pointer(kGemm), strings[0].set_text("gemm");
  strings[1].set_pointer(11), strings[1].set_text("step 1");
  strings[2].set_pointer(12), strings[2].set_text("step 2");
  strings[3].set_pointer(13), strings[3].set_text("forward");
  strings[4].set_pointer(14), strings[4].set_text("warmup");
  for (size_t i = 0; i < strings.size(); ++i) strings[i].set_id(static_cast<uint32_t>(i + 1));
  w.AddStrings(strings);
  BufferBuilder api, gpu;
  uint32_t corr = 1;
  auto launch = [&](uint64_t t, uint64_t label) {
    api.External(corr, label).Runtime(t, t + 5'000, corr, 211);
    gpu.Kernel(t + 10'000, t + 20'000, corr++, kGemm);
  };
  launch(kT0, 14);
  for (uint64_t step = 0; step < 2; ++step) {
    const uint64_t t = kT0 + 1'000'000 * (step + 1);
    launch(t, 11 + step);
    launch(t + 100'000, 13);
    launch(t + 200'000, 11 + step);
  }
  w.WriteRawBuffer(gpu.bytes(), 1, 7);
  w.WriteRawBuffer(api.bytes(), 0, 0);
  w.WriteStats(static_cast<int64_t>(kT0) + 5'000'000);
  w.Close(static_cast<int64_t>(kT0) + 5'000'000);
}

TEST(KinetoSinkTest, AnnotatedStepsBecomeProfilerSteps) {
  testing::TempDir in, out;
  WriteStepRecording(in.path());
  std::string err;
  ASSERT_EQ(Export(in.path(), out.path(), &err), kExitClean) << err;
  const Json j = ParseJson(ReadText(out.path() + "/rank0.json"));
  std::vector<std::string> names;
  for (const Json* e : Slices(j, "user_annotation")) names.push_back(e->fields.at("name").text);
  std::sort(names.begin(), names.end());
  // One "forward" per step, not one spanning both.
  EXPECT_EQ(names, (std::vector<std::string>{"ProfilerStep#1", "ProfilerStep#2", "forward",
                                             "forward", "warmup"}));
  for (const Json* e : Slices(j, "user_annotation")) {
    const std::string& name = e->fields.at("name").text;
    if (name.rfind("ProfilerStep#", 0) == 0) {
      // From the step's first call to the end of its last: 205 us.
      EXPECT_DOUBLE_EQ(e->fields.at("dur").number, 205.0);
      EXPECT_EQ(e->fields.at("args").fields.at("source").text, "annotation");
      EXPECT_EQ(e->fields.at("tid").number, 101);
    }
    if (name == "forward") {
      EXPECT_DOUBLE_EQ(e->fields.at("dur").number, 5.0);
    }
  }
}

// A step detector stand-in: sees every written row, reports one step.
class FakeSteps : public KinetoStepSource {
 public:
  void Begin(const TraceBuilder&, const Recording&) override { ++begun; }
  void OnRow(const Row& row) override {
    ++rows;
    if (!first) first = row.wall_start;
    last = std::max(last, row.wall_end);
  }
  std::vector<TrainingStep> Steps() override { return {{7, first, last, 0, 101, "fake detector"}}; }
  int begun = 0;
  uint64_t rows = 0;
  int64_t first = 0, last = 0;
};

TEST(KinetoSinkTest, StepSourceNamesTheIterationsAndAnnotationsStayAnnotations) {
  testing::TempDir in;
  WriteStepRecording(in.path());
  auto listing = ListRanks({in.path()});
  ASSERT_TRUE(listing.has_value() && listing->ranks.size() == 1);
  const Recording& rec = listing->ranks[0].recording;
  FakeSteps steps;
  std::ostringstream out;
  KinetoTraceWriter writer(out);
  struct Forward : RowSink {
    KinetoTraceWriter* w;
    void OnRow(const Row& r) override { w->Write(r); }
  } forward;
  forward.w = &writer;
  TraceBuilder builder(TraceFilter{}, &forward, 1 << 16, ReorderOptions{1 << 16, 0});
  KinetoRank rank;
  rank.label = "rank 0";
  rank.file_name = "rank0.json";
  // kDetected: the source's steps, even though the recording has step annotations.
  writer.set_options({KinetoSteps::kDetected, false});
  writer.Begin(builder, rec, rank, &steps);
  ReadIntegrity integrity;
  ReadRecording(rec, builder, &integrity);
  builder.Finish();
  writer.End(builder, rec);
  EXPECT_EQ(steps.begun, 1);
  EXPECT_EQ(steps.rows, writer.rows());
  EXPECT_EQ(steps.rows, 14u);  // 7 calls, 7 kernels
  EXPECT_EQ(writer.steps(), 1u);
  const Json j = ParseJson(out.str());
  std::vector<std::string> names;
  for (const Json* e : Slices(j, "user_annotation")) names.push_back(e->fields.at("name").text);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"ProfilerStep#7", "forward", "forward", "step 1",
                                             "step 2", "warmup"}));
  for (const Json* e : Slices(j, "user_annotation")) {
    if (e->fields.at("name").text == "ProfilerStep#7") {
      EXPECT_EQ(e->fields.at("args").fields.at("source").text, "fake detector");
    }
  }
}

TEST(KinetoSinkTest, AutoPrefersStepAnnotationsToDetectedSteps) {
  testing::TempDir in, out;
  WriteStepRecording(in.path());
  std::string err;
  ReportOptions opt;  // kineto_steps kAuto: the detector runs, and the annotations win
  ASSERT_EQ(Export(in.path(), out.path(), &err, opt), kExitClean) << err;
  const Json j = ParseJson(ReadText(out.path() + "/rank0.json"));
  for (const Json* e : Slices(j, "user_annotation")) {
    if (e->fields.at("name").text.rfind("ProfilerStep#", 0) == 0) {
      EXPECT_EQ(e->fields.at("args").fields.at("source").text, "annotation");
    }
  }
  opt.kineto_steps = KinetoSteps::kNone;  // none: "step 1" stays a plain annotation
  ASSERT_EQ(Export(in.path(), out.path(), &err, opt), kExitClean) << err;
  std::vector<std::string> names;
  // Named: a temporary trace would die before the loop's body reads the slices it points into.
  const Json none = ParseJson(ReadText(out.path() + "/rank0.json"));
  for (const Json* e : Slices(none, "user_annotation")) names.push_back(e->fields.at("name").text);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"forward", "forward", "step 1", "step 2", "warmup"}));
}

// Unix ns of a slice's start and end, from the trace's base and its microseconds with three
// decimals (exact to the nanosecond).
std::pair<int64_t, int64_t> SpanNs(const Json& trace, const Json& e) {
  const auto base = static_cast<int64_t>(trace.fields.at("baseTimeNanoseconds").number);
  const int64_t ts = std::llround(e.fields.at("ts").number * 1000);
  return {base + ts, base + ts + std::llround(e.fields.at("dur").number * 1000)};
}

TEST(KinetoSinkTest, DetectedStepsHoldTheKernelsStepsCountsAndSyntheticLaunchesAreMarked) {
  testing::TempDir in, out;
  testing::StepStreamSpec spec;
  spec.steps = 12;
  const testing::StepStreamTruth truth = testing::WriteStepRecording(in.path(), spec);
  auto listing = ListRanks({in.path()});
  ASSERT_TRUE(listing.has_value() && listing->ranks.size() == 1);
  StepOptions by_pattern;
  by_pattern.source = StepSource::kPattern;
  const StepList found = FindSteps(listing->ranks[0].recording, by_pattern);
  ASSERT_EQ(found.steps.size(), truth.step_starts.size());

  ReportOptions opt;
  opt.kineto_steps = KinetoSteps::kDetected;
  opt.kineto_synthetic_launches = true;
  std::string err;
  ASSERT_EQ(Export(in.path(), out.path(), &err, opt), kExitClean) << err;
  const std::string text = ReadText(out.path() + "/rank0.json");
  const Json j = ParseJson(text);
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const Json* e : Slices(j, "user_annotation")) {
    const std::string& name = e->fields.at("name").text;
    ASSERT_EQ(name, "ProfilerStep#" + std::to_string(spans.size() + 1));
    EXPECT_EQ(e->fields.at("args").fields.at("source").text, "cupmon-detected");
    EXPECT_EQ(e->fields.at("tid").number, kDetectedStepsTid);
    spans.push_back(SpanNs(j, *e));
  }
  ASSERT_EQ(spans.size(), found.steps.size());
  // HTA's rule, ts <= start < ts + dur, gives each step the kernels `steps` counts in it.
  std::vector<uint64_t> per_step(spans.size());
  uint64_t before = 0;
  for (const Json* k : Slices(j, "kernel")) {
    const int64_t start = SpanNs(j, *k).first;
    size_t in_steps = 0;
    for (size_t i = 0; i < spans.size(); ++i)
      if (spans[i].first <= start && start < spans[i].second) ++per_step[i], ++in_steps;
    EXPECT_LE(in_steps, 1u) << "steps overlap";
    before += in_steps == 0;
  }
  EXPECT_EQ(before, found.kernels_before);
  for (size_t i = 0; i < spans.size(); ++i)
    EXPECT_EQ(per_step[i], found.steps[i].kernels) << "step " << i + 1;

  // No launch records in this recording: one synthetic event per GPU activity, at its start,
  // with its correlation, zero length, on the steps thread.
  std::map<double, std::vector<double>> synthetic;  // correlation -> ts
  for (const Json* e : Slices(j, std::string(kCatSyntheticLaunch))) {
    EXPECT_EQ(e->fields.at("name").text, kSyntheticLaunchName);
    EXPECT_EQ(e->fields.at("dur").number, 0.0);
    EXPECT_EQ(e->fields.at("tid").number, kDetectedStepsTid);
    EXPECT_EQ(e->fields.at("args").fields.at("synthetic").type, Json::kBool);
    EXPECT_FALSE(e->fields.at("args").fields.count("stream"));
    synthetic[e->fields.at("args").fields.at("correlation").number].push_back(
        e->fields.at("ts").number);
  }
  size_t gpu = 0;
  for (const char* cat : {"kernel", "gpu_memcpy", "gpu_memset"}) {
    for (const Json* e : Slices(j, cat)) {
      ++gpu;
      const auto it = synthetic.find(e->fields.at("args").fields.at("correlation").number);
      ASSERT_NE(it, synthetic.end()) << "no synthetic launch for a " << cat;
      EXPECT_NE(std::find(it->second.begin(), it->second.end(), e->fields.at("ts").number),
                it->second.end());
    }
  }
  size_t written = 0;
  for (const auto& [corr, ts] : synthetic) written += ts.size();
  EXPECT_EQ(written, gpu);
  size_t marked = 0;  // the parser keeps no boolean's value: count the text
  for (size_t at = 0; (at = text.find("\"synthetic\":true}", at)) != std::string::npos; ++at)
    ++marked;
  EXPECT_EQ(marked, gpu);
  EXPECT_NE(err.find(std::to_string(gpu) + " GPU activities without a launch record"),
            std::string::npos) << err;
  bool named = false;
  for (const Json& e : j.fields.at("traceEvents").items)
    named |= e.fields.at("ph").text == "M" && e.fields.at("tid").number == kDetectedStepsTid &&
             e.fields.at("args").fields.at("name").text == "cupmon: detected steps";
  EXPECT_TRUE(named);

  // none: no steps, and without the flag no synthetic events.
  opt.kineto_steps = KinetoSteps::kNone;
  opt.kineto_synthetic_launches = false;
  ASSERT_EQ(Export(in.path(), out.path(), &err, opt), kExitClean) << err;
  const Json plain = ParseJson(ReadText(out.path() + "/rank0.json"));
  EXPECT_TRUE(Slices(plain, "user_annotation").empty());
  EXPECT_TRUE(Slices(plain, std::string(kCatSyntheticLaunch)).empty());
}

TEST(KinetoSinkTest, UnusableDirectoriesFailBeforeReading) {
  testing::TempDir tmp;
  const std::string file = tmp.path() + "/plain-file";
  std::ofstream(file) << "x";
  auto r = KinetoExporter::PrepareDirectory(file);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("not a directory"), std::string::npos) << r.error().message;
  r = KinetoExporter::PrepareDirectory(file + "/sub");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("cannot create " + file + "/sub"), std::string::npos)
      << r.error().message;
  r = KinetoExporter::PrepareDirectory("");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("-o DIR"), std::string::npos);
  // Missing directories (and parents) are created.
  EXPECT_TRUE(KinetoExporter::PrepareDirectory(tmp.path() + "/a/b").has_value());
  EXPECT_TRUE(fs::is_directory(tmp.path() + "/a/b"));
  if (geteuid() != 0) {  // root writes anywhere
    const std::string ro = tmp.path() + "/read-only";
    fs::create_directory(ro);
    chmod(ro.c_str(), 0555);
    r = KinetoExporter::PrepareDirectory(ro);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("cannot write " + ro), std::string::npos);
    chmod(ro.c_str(), 0755);
  }

  // Through RunReport: exit 2, nothing written.
  testing::TempDir in;
  testing::WriteSampleRecording(in.path());
  std::string err;
  EXPECT_EQ(Export(in.path(), file, &err), kExitUnusable);
  EXPECT_NE(err.find("not a directory"), std::string::npos) << err;
}

TEST_F(KinetoSampleTest, AFileThatCannotBeCreatedFailsTheExport) {
  // rank0.json.tmp is a directory: the trace cannot be written, and no rank0.json appears.
  fs::create_directory(out_.path() + "/rank0.json.tmp");
  std::string err;
  EXPECT_EQ(Export(in_.path(), out_.path(), &err), kExitUnusable);
  EXPECT_NE(err.find("cannot create " + out_.path() + "/rank0.json.tmp"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out_.path() + "/rank0.json"));
}

// A write that fails part way (a file size limit, with SIGXFSZ ignored, as a full disk fails with
// ENOSPC): the reason is the write's own, and neither rank0.json nor its temporary is left.
TEST_F(KinetoSampleTest, AWriteThatFailsIsReportedWithItsReason) {
  std::string err;
  int rc = 0;
  {
    testing::ScopedFileSizeLimit limit(4096);
    ASSERT_TRUE(limit.ok());
    rc = Export(in_.path(), out_.path(), &err);
  }
  EXPECT_EQ(rc, kExitUnusable) << err;
  EXPECT_NE(err.find("cannot write " + out_.path() + "/rank0.json: File too large"),
            std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(out_.path() + "/rank0.json"));
  EXPECT_FALSE(fs::exists(out_.path() + "/rank0.json.tmp"));
}

TEST_F(KinetoSampleTest, ARegionWithoutRowsWritesAnEmptyTraceAndSaysSo) {
  ReportOptions opt;
  opt.filter.from_rel = int64_t{3600} * 1'000'000'000;  // an hour after the first record
  std::string err;
  EXPECT_EQ(Export(in_.path(), out_.path(), &err, opt), kExitClean) << err;
  EXPECT_NE(err.find("no rows in the region"), std::string::npos) << err;
  const Json j = ParseJson(ReadText(out_.path() + "/rank0.json"));
  EXPECT_EQ(j.fields.at("distributedInfo").fields.at("rank").number, 0);
  EXPECT_TRUE(Slices(j, "kernel").empty());
  EXPECT_TRUE(Slices(j, "cuda_runtime").empty());
}

TEST_F(KinetoSampleTest, OtherTracesInTheDirectoryAreWarnedAbout) {
  std::ofstream(out_.path() + "/rank5.json") << "{}";
  std::string err;
  EXPECT_EQ(Export(in_.path(), out_.path(), &err), kExitWarnings);
  EXPECT_NE(err.find(out_.path() + "/rank5.json is not from this export"), std::string::npos)
      << err;
  // A second export into the same directory replaces its own files without a warning.
  fs::remove(out_.path() + "/rank5.json");
  EXPECT_EQ(Export(in_.path(), out_.path(), &err), kExitClean) << err;
}

}  // namespace
}  // namespace cupmon::decoder

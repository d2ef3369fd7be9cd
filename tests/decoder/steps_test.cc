// StepDetector (decoder/src/step_detector.cc) and `cupmon-decode steps` (steps.cc,
// commands/steps_report.cc): synthetic training loops (test double) and the real H200 recordings.
#include <algorithm>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/reports.h"
#include "report_run.h"
#include "cupmon/decoder/step_detector.h"
#include "cupmon/decoder/steps.h"
#include "cupmon/decoder/trace_builder.h"
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

// A step of `unit` names on stream 1, one kernel per microsecond.
struct Fed {
  std::vector<uint64_t> starts;  // of each step's first kernel
};

Fed FeedLoop(StepDetector& d, const std::vector<uint32_t>& unit, int steps, uint64_t* t) {
  Fed fed;
  for (int s = 0; s < steps; ++s) {
    fed.starts.push_back(*t);
    for (uint32_t name : unit) {
      d.OnKernel(1, name, *t);
      *t += 1000;
    }
    *t += 50'000;
  }
  return fed;
}

std::vector<uint64_t> Starts(const std::vector<StepBoundary>& b) {
  std::vector<uint64_t> out;
  for (const auto& x : b) out.push_back(x.start);
  return out;
}

TEST(StepDetectorTest, CountsEveryStepOfARepeatedUnitWithLayersInside) {
  StepDetector d;
  uint64_t t = 1'000'000;
  for (uint32_t i = 0; i < 3; ++i) d.OnKernel(1, 100 + i, t += 1000);  // initialisation
  // Layers repeat inside the step (10, 11 four times); only the whole unit is the step.
  const std::vector<uint32_t> unit = {10, 11, 10, 11, 10, 11, 10, 11, 20, 21, 30, 31, 40};
  const Fed fed = FeedLoop(d, unit, 40, &t);
  d.Finish();
  const auto b = d.TakeBoundaries();
  ASSERT_TRUE(d.pattern());
  EXPECT_EQ(d.pattern()->period, unit.size());
  EXPECT_EQ(Starts(b), fed.starts);
  EXPECT_EQ(d.pattern()->signature.back(), 10u);  // the step opens with its first kernel
  EXPECT_TRUE(d.pattern()->aligned_to_start);
}

TEST(StepDetectorTest, FirstStepWithExtraKernelsAndAnotherStreamStillCount) {
  StepDetector d;
  uint64_t t = 1'000'000;
  const std::vector<uint32_t> unit = {1, 2, 3, 2, 3, 4, 5, 6};
  std::vector<uint64_t> starts;
  for (int s = 0; s < 30; ++s) {
    starts.push_back(t);
    for (size_t i = 0; i < unit.size(); ++i) {
      if (s == 0 && i == 5)
        for (int x = 0; x < 3; ++x) d.OnKernel(1, 77, t += 1000);  // warm-up only
      d.OnKernel(1, unit[i], t);
      if (i == 2) d.OnKernel(2, 90 + static_cast<uint32_t>(s % 3), t + 10);  // another stream
      t += 1000;
    }
    t += 20'000;
  }
  d.Finish();
  EXPECT_EQ(Starts(d.TakeBoundaries()), starts);
  ASSERT_TRUE(d.pattern());
  EXPECT_EQ(d.pattern()->stream_key, 1u);
}

TEST(StepDetectorTest, KernelsDeliveredOutOfOrderAreReorderedFirst) {
  StepDetectorOptions o;
  o.first_attempt = 64;
  StepDetector in_order(o), shuffled(o);
  std::vector<std::pair<uint64_t, uint32_t>> k;
  const std::vector<uint32_t> unit = {5, 6, 7, 6, 7, 8};
  uint64_t t = 1000;
  std::vector<uint64_t> starts;
  for (int s = 0; s < 50; ++s) {
    starts.push_back(t);
    for (uint32_t n : unit) k.emplace_back(t += 1000, n);
    t += 9000;
  }
  for (const auto& [start, name] : k) in_order.OnKernel(3, name, start);
  // Two buffers filled side by side: runs of 7 alternate between them, the second handed over
  // after the first.
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < k.size(); ++i)
      if (static_cast<int>((i / 7) % 2) == pass) shuffled.OnKernel(3, k[i].second, k[i].first);
  in_order.Finish();
  shuffled.Finish();
  const auto a = Starts(in_order.TakeBoundaries()), b = Starts(shuffled.TakeBoundaries());
  EXPECT_EQ(a.size(), 50u);
  EXPECT_EQ(a, b);
}

// StepDetectorOptions::huge_mappings (the decoder's): the same steps as on the heap, with the
// reorder runs past kHugeMappingMin (2^17 kernels held: 4 MiB a run, grown from the heap into a
// mapping) and kernels of two side-by-side buffers interleaved.
TEST(StepDetectorTest, BuffersInHugeMappingsCutTheSameSteps) {
  StepDetectorOptions heap;
  StepDetectorOptions mapped = heap;
  mapped.huge_mappings = true;
  StepDetector a(heap), b(mapped);
  const std::vector<uint32_t> unit = {5, 6, 7, 6, 7, 8, 9};
  uint64_t t = 1000;
  std::vector<uint64_t> starts;
  std::vector<std::pair<uint64_t, uint32_t>> k;
  for (int s = 0; s < 60'000; ++s) {
    starts.push_back(t + 1000);
    for (uint32_t n : unit) k.emplace_back(t += 1000, n);
    t += 9000;
  }
  for (size_t at = 0; at < k.size(); at += 4096)  // buffers of 4,096, two filled side by side
    for (int pass = 0; pass < 2; ++pass)
      for (size_t i = at; i < std::min(k.size(), at + 4096); ++i)
        if (static_cast<int>((i / 7) % 2) == pass)
          for (StepDetector* d : {&a, &b}) d->OnKernel(3, k[i].second, k[i].first, i);
  EXPECT_GE(a.buffered(), heap.reorder_kernels);  // the runs held 4 MiB of kernels
  a.Finish();
  b.Finish();
  const auto x = a.TakeBoundaries(), y = b.TakeBoundaries();
  EXPECT_EQ(Starts(x), starts);
  ASSERT_EQ(Starts(y), starts);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i].tag, x[i].tag) << i;
}

// ReleaseHeld (the monitor's flush mark): the held kernels of two side-by-side buffers go through
// in start order without ending the stream; later kernels still come in and are cut.
TEST(StepDetectorTest, ReleaseHeldPutsTheReorderStageThroughAndTheStreamGoesOn) {
  StepDetectorOptions o;
  o.first_attempt = 64;
  StepDetector d(o);  // reorder bound: the default 2^17, far above what is fed here
  const std::vector<uint32_t> unit = {5, 6, 7, 6, 7, 8};
  uint64_t t = 1000;
  std::vector<uint64_t> starts;
  const auto flush = [&](int steps) {
    std::vector<std::pair<uint64_t, uint32_t>> k;
    for (int s = 0; s < steps; ++s) {
      starts.push_back(t + 1000);  // the step's first kernel
      for (uint32_t n : unit) k.emplace_back(t += 1000, n);
      t += 9000;
    }
    for (int pass = 0; pass < 2; ++pass)
      for (size_t i = 0; i < k.size(); ++i)
        if (static_cast<int>(i % 2) == pass) d.OnKernel(3, k[i].second, k[i].first);
  };
  flush(40);
  EXPECT_FALSE(d.has_boundaries());  // all 240 held
  EXPECT_EQ(d.buffered(), 240u);
  d.ReleaseHeld();
  std::vector<uint64_t> got = Starts(d.TakeBoundaries());
  EXPECT_EQ(got, std::vector<uint64_t>(starts.begin(), starts.end()));
  flush(10);
  d.ReleaseHeld();
  const std::vector<uint64_t> more = Starts(d.TakeBoundaries());
  got.insert(got.end(), more.begin(), more.end());
  EXPECT_EQ(got, starts);  // 50 steps, in order, across the two releases
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(StepDetectorTest, NoRepetitionNoSteps) {
  StepDetector d;
  uint64_t lcg = 7;
  for (int i = 0; i < 5000; ++i) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    d.OnKernel(1, static_cast<uint32_t>(lcg >> 33) % 64, static_cast<uint64_t>(i) * 1000 + 1);
  }
  d.Finish();
  EXPECT_FALSE(d.pattern());
  EXPECT_TRUE(d.TakeBoundaries().empty());
}

TEST(StepDetectorTest, MemoryStaysBoundedWhileNothingRepeats) {
  StepDetectorOptions o;
  o.first_attempt = 256;
  o.max_learn_kernels = 1024;
  o.reorder_kernels = 0;
  StepDetector d(o);
  for (uint32_t i = 0; i < 20000; ++i) {
    d.OnKernel(1, i, uint64_t{i} * 1000 + 1);  // all distinct
    ASSERT_LE(d.buffered(), o.max_learn_kernels);
  }
  EXPECT_TRUE(d.learning());
  // Then a loop starts: found within 8 buffers (attempts back off), its later steps all cut.
  uint64_t t = 30'000'000;
  const Fed fed = FeedLoop(d, {1, 2, 3, 4}, 3000, &t);
  d.Finish();
  ASSERT_TRUE(d.pattern());
  const auto starts = Starts(d.TakeBoundaries());
  EXPECT_GE(starts.size(), 3000u - 8 * 1024 / 4);
  // Cut on the loop's own boundaries (after a dropped prefix the phase may be any of the unit's).
  EXPECT_GE(starts.back(), fed.starts.back());
  EXPECT_LT(starts.back(), fed.starts.back() + 4000);
}

class StepsTest : public ::testing::Test {
 protected:
  Recording Only(const std::string& dir) {
    auto listing = ListRecordings(dir);
    EXPECT_TRUE(listing.has_value());
    EXPECT_EQ(listing->recordings.size(), 1u);
    return listing->recordings.at(0);
  }
  std::string Run(const std::vector<std::string>& paths, int* rc, StepOptions steps = {}) {
    ReportOptions o;
    o.steps = steps;
    std::ostringstream out, err;
    *rc = RunReport(ReportKind::kSteps, paths, o, out, err);
    err_ = err.str();
    return out.str();
  }
  testing::TempDir tmp_;
  std::string err_;
};

TEST_F(StepsTest, SyntheticLoopExactCountStartsBytesAndSlowStepFirst) {
  testing::StepStreamSpec spec;
  spec.steps = 120;
  spec.slow_step = 77;
  const auto truth = testing::WriteStepRecording(tmp_.path(), spec);
  const StepList l = FindSteps(Only(tmp_.path()), StepOptions{});
  EXPECT_EQ(l.source, StepSource::kPattern);
  ASSERT_EQ(l.steps.size(), spec.steps);
  std::vector<uint64_t> starts;
  for (const Step& s : l.steps) starts.push_back(s.start);
  EXPECT_EQ(starts, truth.step_starts);
  EXPECT_EQ(l.kernels_before, spec.init_kernels);
  ASSERT_TRUE(l.pattern);
  EXPECT_EQ(l.pattern->period, truth.kernels_per_step);
  EXPECT_EQ(l.signature_names.back(), "gemm_fwd(float const*, float const*, float*, int)");
  EXPECT_EQ(l.signature_names[l.signature_names.size() - 2], "adam_multi_tensor_b(float**, int)");
  for (const Step& s : l.steps) {
    EXPECT_EQ(s.memcpys, 1u);
    EXPECT_EQ(s.memcpy_bytes, spec.memcpy_bytes);
    // Main stream, the side stream's prefetch, the noise kernel of every 7th step, step 1's fills.
    const uint64_t expect = truth.kernels_per_step + 1 + (s.number % 7 == 3) +
                            (s.number == 1 ? spec.first_step_extra : 0);
    EXPECT_EQ(s.kernels, expect) << "step " << s.number;
    ASSERT_EQ(s.devices.size(), 1u);
    EXPECT_GT(s.devices[0].busy_ns, 0u);
    EXPECT_LE(s.devices[0].busy_ns, s.duration());
  }
  const auto slow = SlowSteps(l.steps, RollingMedians(l.steps, 50), StepOptions{});
  ASSERT_FALSE(slow.empty());
  EXPECT_EQ(l.steps[slow[0]].number, spec.slow_step);  // the wait before its launches is its own
  EXPECT_GE(l.steps[slow[0]].duration(), spec.slow_gap_ns);
}

// Records out of start order within the scanner's window are placed exactly (figures_test.py
// checks every figure); one further behind is counted and kept out of its device's union, so that
// busy time never counts an overlap twice and the longest gap still fits in the idle time.
TEST_F(StepsTest, ActivityBeyondTheReorderWindowIsCountedAndGapsFitInIdleTime) {
  testing::StepStreamSpec spec;
  // About 250,000 records: the late one comes after more than the step detector's reorder stage
  // (131,072 kernels, which settles the steps' boundaries) and the scanner's 65,536 hold.
  spec.steps = 4000;
  spec.late_step = 100;
  const auto truth = testing::WriteStepRecording(tmp_.path(), spec);
  const StepList l = FindSteps(Only(tmp_.path()), StepOptions{});
  ASSERT_EQ(l.steps.size(), spec.steps);
  EXPECT_EQ(l.late_activities, 1u);
  EXPECT_EQ(l.late_busy_ns, 5'000u);  // all of it: its step was swept long before
  const Step& late = l.steps[spec.late_step - 1];
  EXPECT_EQ(late.kernels, truth.kernels_per_step + 2 + (late.number % 7 == 3));  // still counted
  for (const Step& s : l.steps)
    for (const StepDeviceTime& d : s.devices) {
      EXPECT_LE(d.busy_ns, s.duration()) << "step " << s.number;
      EXPECT_LE(d.max_gap_ns, s.duration() - d.busy_ns) << "step " << s.number;
    }
  int rc = 0;
  Run({tmp_.path()}, &rc);
  EXPECT_NE(err_.find("1 activit(ies) further out of start order than the step scanner holds: "
                      "5.0000us of their time is left out of busy"),
            std::string::npos)
      << err_;
}

TEST_F(StepsTest, ReportListsTheSlowStepFirstWithADrillDownCommand) {
  testing::StepStreamSpec spec;
  spec.steps = 100;
  spec.slow_step = 40;
  testing::WriteStepRecording(tmp_.path(), spec);
  int rc = -1;
  const std::string out = Run({tmp_.path()}, &rc);
  EXPECT_EQ(rc, kExitClean) << err_;
  EXPECT_NE(out.find("steps: 100 from the kernel pattern"), std::string::npos) << out;
  const size_t slow = out.find("slow steps (");
  ASSERT_NE(slow, std::string::npos) << out;
  const std::string after = out.substr(out.find('\n', slow) + 1);
  EXPECT_EQ(after.rfind("  step 40 at ", 0), 0u) << after;
  EXPECT_NE(after.find("cupmon-decode gpu-trace " + tmp_.path() + " --from 2026-"), std::string::npos);
}

TEST_F(StepsTest, AnnotatedStepsAreUsedWhenPresent) {
  testing::StepStreamSpec spec;
  spec.steps = 30;
  spec.annotate = true;
  const auto truth = testing::WriteStepRecording(tmp_.path(), spec);
  const StepList l = FindSteps(Only(tmp_.path()), StepOptions{});
  EXPECT_EQ(l.source, StepSource::kAnnotation);
  EXPECT_EQ(l.pattern_steps, spec.steps);
  ASSERT_EQ(l.steps.size(), spec.steps);
  for (size_t i = 0; i < l.steps.size(); ++i) {
    EXPECT_EQ(l.steps[i].label, "step " + std::to_string(i));
    // "forward" hides the step label on the first kernels: the step still opens at the first.
    EXPECT_EQ(l.steps[i].start, truth.step_starts[i]) << i;
  }
  StepOptions by_pattern;
  by_pattern.source = StepSource::kPattern;
  const StepList p = FindSteps(Only(tmp_.path()), by_pattern);
  EXPECT_EQ(p.source, StepSource::kPattern);
  ASSERT_EQ(p.steps.size(), spec.steps);
  EXPECT_EQ(p.steps[5].label, "step 5");  // pattern steps carry the annotation's label
}

TEST_F(StepsTest, StragglerRankIsNamed) {
  testing::StepStreamSpec spec;
  spec.steps = 80;
  spec.ranks = 2;
  spec.straggler_rank = 1;
  spec.straggler_step = 33;
  spec.straggler_ns = 3'000'000;
  testing::WriteStepRecording(tmp_.path(), spec);
  int rc = -1;
  const std::string out = Run({tmp_.path()}, &rc);
  EXPECT_EQ(rc, kExitClean) << err_;
  const size_t at = out.find("steps where ranks diverge");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string after = out.substr(out.find('\n', at) + 1);
  EXPECT_EQ(after.rfind("  step 33: straggler rank 1 (", 0), 0u) << after;
}

TEST_F(StepsTest, CsvAndJsonlHaveOneRowPerStep) {
  testing::StepStreamSpec spec;
  spec.steps = 25;
  testing::WriteStepRecording(tmp_.path(), spec);
  for (StepFormat f : {StepFormat::kCsv, StepFormat::kJsonl}) {
    StepOptions o;
    o.format = f;
    int rc = -1;
    const std::string out = Run({tmp_.path()}, &rc, o);
    EXPECT_EQ(rc, kExitClean);
    const auto lines = std::count(out.begin(), out.end(), '\n');
    EXPECT_EQ(lines, spec.steps + (f == StepFormat::kCsv ? 1 : 0)) << out;
    if (f == StepFormat::kJsonl) {
      EXPECT_EQ(out.rfind("{\"rank\":0,\"pid\":4242,\"step\":1,", 0), 0u);
    } else {
      EXPECT_EQ(out.rfind("rank,pid,step,start_ns,", 0), 0u);
    }
  }
}

TEST_F(StepsTest, RangeOptionsAreRefusedAndNoPatternIsSaid) {
  testing::WriteSampleRecording(tmp_.path());  // a few kernels, nothing repeats
  ReportOptions o;
  o.filter.from_rel = 0;
  std::ostringstream out, err;
  EXPECT_EQ(RunReport(ReportKind::kSteps, {tmp_.path()}, o, out, err), kExitUnusable);
  EXPECT_NE(err.str().find("--from"), std::string::npos);
  int rc = -1;
  const std::string text = Run({tmp_.path()}, &rc);
  EXPECT_EQ(rc, kExitClean);
  EXPECT_NE(text.find("steps: none found"), std::string::npos) << text;
  EXPECT_NE(err_.find("no training steps found"), std::string::npos);
}

TEST_F(StepsTest, EmptyDirectoryIsUnusable) {
  int rc = -1;
  Run({tmp_.path()}, &rc);
  EXPECT_EQ(rc, kExitUnusable);
}

// Kernels of a recording in start order, by name.
class KernelRows : public RowSink {
 public:
  void OnRow(const Row& r) override {
    if (r.type == RowType::kKernel) {
      rows.emplace_back(r.start, std::string(r.name));
      walls.push_back(r.wall_start);
    }
  }
  std::vector<std::pair<uint64_t, std::string>> rows;
  std::vector<int64_t> walls;  // as gpu-trace's --from/--to see them
};

// The span FindSteps gives (the HTML report's chart axis) is that of every GPU activity, as the
// trace builder maps them: its calibration grows as it reads, so the two may differ by a little.
class GpuSpan : public RowSink {
 public:
  void OnRow(const Row& r) override {
    if (r.type == RowType::kApi || !r.valid_time) return;
    first = std::min(first, r.wall_start);
    last = std::max(last, r.wall_end);
  }
  int64_t first = INT64_MAX, last = INT64_MIN;
};

TEST(RealStepsTest, SampleSpanIsThatOfItsGpuActivity) {
  const std::string dir = std::string(CUPMON_SOURCE_DIR) + "/tests/data/sample";
  auto listing = ListRecordings(dir);
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->recordings.size(), 1u);
  const StepList l = FindSteps(listing->recordings[0], StepOptions{});
  GpuSpan span;
  TraceBuilder b(TraceFilter{}, &span);
  ReadIntegrity integrity;
  ReadRecording(listing->recordings[0], b, &integrity);
  b.Finish();
  ASSERT_LT(span.first, span.last);
  EXPECT_NEAR(static_cast<double>(l.first_wall), static_cast<double>(span.first), 100e3);
  EXPECT_NEAR(static_cast<double>(l.last_wall), static_cast<double>(span.last), 100e3);
  EXPECT_LE(l.first_wall, l.steps.front().wall_start);
  EXPECT_GE(l.last_wall, l.steps.back().wall_end);
}

// tests/data/sample: train_mlp.py --steps 800 --warmup 20 on the H200.
TEST(RealStepsTest, SampleHas820StepsCutBetweenTheSameTwoKernels) {
  const std::string dir = std::string(CUPMON_SOURCE_DIR) + "/tests/data/sample";
  auto listing = ListRecordings(dir);
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->recordings.size(), 1u);
  const StepList l = FindSteps(listing->recordings[0], StepOptions{});
  ASSERT_EQ(l.steps.size(), 820u);
  EXPECT_EQ(l.source, StepSource::kPattern);

  // Independently of the detector: every step opens with the same kernel, and every step after
  // the first with the same kernel before it.
  KernelRows sink;
  TraceBuilder b(TraceFilter{}, &sink);
  ReadIntegrity integrity;
  ReadRecording(listing->recordings[0], b, &integrity);
  b.Finish();
  // Each step's drill-down range selects exactly its kernels, as gpu-trace maps their times.
  std::vector<int64_t> walls = sink.walls;
  std::sort(walls.begin(), walls.end());
  for (const Step& s : l.steps) {
    const auto n = std::upper_bound(walls.begin(), walls.end(), s.drill_to) -
                   std::lower_bound(walls.begin(), walls.end(), s.drill_from);
    EXPECT_EQ(static_cast<uint64_t>(n), s.kernels) << "step " << s.number;
  }
  std::stable_sort(sink.rows.begin(), sink.rows.end());
  std::map<std::pair<std::string, std::string>, int> pairs;
  std::map<std::string, int> firsts;
  for (const Step& s : l.steps) {
    auto it = std::lower_bound(sink.rows.begin(), sink.rows.end(),
                               std::make_pair(s.start, std::string()));
    ASSERT_NE(it, sink.rows.end());
    ASSERT_EQ(it->first, s.start);
    ++firsts[it->second];
    if (s.number > 1) ++pairs[{std::prev(it)->second, it->second}];
  }
  ASSERT_EQ(firsts.size(), 1u);
  EXPECT_NE(firsts.begin()->first.find("sgemm_64x64_8x5_tn"), std::string::npos);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs.begin()->second, 819);
  EXPECT_NE(pairs.begin()->first.first.find("multi_tensor_apply_kernel"), std::string::npos);
  EXPECT_EQ(l.kernels_before, 2u);  // the two torch.randn before the loop
  // 203 kernels a step; the first has AdamW's 96 state fills on top.
  EXPECT_EQ(l.steps[0].kernels, 299u);
  for (size_t i = 1; i < l.steps.size(); ++i) EXPECT_EQ(l.steps[i].kernels, 203u) << i;
}

// tests/data/ddp-2rank: ddp_train.py --steps 1500 (20 warm-up) on two H200s.
TEST(RealStepsTest, TwoRankRecordingHas1520StepsPerRank) {
  const std::string dir = std::string(CUPMON_SOURCE_DIR) + "/tests/data/ddp-2rank";
  auto listing = ListRanks({dir});
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->ranks.size(), 2u);
  for (const Rank& r : listing->ranks) {
    const StepList l = FindSteps(r.recording, StepOptions{});
    EXPECT_EQ(l.steps.size(), 1520u) << r.label;
    uint64_t comm = 0;
    for (const Step& s : l.steps) comm += s.comm_ns > 0;
    EXPECT_EQ(comm, 1520u) << r.label;  // every step has its NCCL all-reduce
  }
}

// StepFinder (the kineto export's detector, fed by the export's own read) as a consumer of a
// trace builder that builds rows finds what FindSteps finds alone.
TEST(RealStepsTest, StepFinderBesideABuilderFindsWhatFindStepsFinds) {
  const std::string dir = std::string(CUPMON_SOURCE_DIR) + "/tests/data/sample";
  auto listing = ListRecordings(dir);
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->recordings.size(), 1u);
  StepOptions options;
  options.source = StepSource::kPattern;
  const StepList alone = FindSteps(listing->recordings[0], options);

  StepFinder finder(options);
  GpuSpan span;
  TraceBuilder b(TraceFilter{}, &span);
  b.AddConsumer(&finder.consumer());
  ReadIntegrity integrity;
  ReadRecording(listing->recordings[0], b, &integrity);
  b.Finish();
  const StepList along = finder.Finish();

  ASSERT_EQ(alone.steps.size(), 820u);
  ASSERT_EQ(along.steps.size(), alone.steps.size());
  for (size_t i = 0; i < alone.steps.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(along.steps[i].number, alone.steps[i].number);
    EXPECT_EQ(along.steps[i].start, alone.steps[i].start);
    EXPECT_EQ(along.steps[i].end, alone.steps[i].end);
    EXPECT_EQ(along.steps[i].drill_from, alone.steps[i].drill_from);
    EXPECT_EQ(along.steps[i].drill_to, alone.steps[i].drill_to);
    EXPECT_EQ(along.steps[i].kernels, alone.steps[i].kernels);
  }
  EXPECT_EQ(along.activities, alone.activities);
  EXPECT_LT(span.first, span.last);  // the builder read the recording too
}

// StepOptions::times_only (the kineto export's steps): the same steps in time as the full scan,
// on every bundled recording whose kernels repeat, annotated or not; nothing else filled in.
TEST(RealStepsTest, TimesOnlyPlacesTheSameStepsAsTheFullScan) {
  size_t recordings = 0;
  for (const char* name :
       {"sample", "ddp-2rank", "h200-nvtx", "h200-torch-nvtx", "synthetic-sample"}) {
    const std::string dir = std::string(CUPMON_SOURCE_DIR) + "/tests/data/" + name;
    auto listing = ListRecordings(dir);
    ASSERT_TRUE(listing.has_value()) << name;
    size_t steps = 0;
    for (const Recording& r : listing->recordings) {
      SCOPED_TRACE(std::string(name) + " pid " + std::to_string(r.header.pid()));
      ++recordings;
      StepOptions full;
      full.source = StepSource::kPattern;
      StepOptions lean = full;
      lean.times_only = true;
      const StepList a = FindSteps(r, full);
      const StepList b = FindSteps(r, lean);
      ASSERT_EQ(b.steps.size(), a.steps.size());
      steps += a.steps.size();
      EXPECT_EQ(b.activities, a.activities);
      EXPECT_EQ(b.kernels_before, a.kernels_before);
      EXPECT_EQ(b.annotated_steps, 0u);
      for (size_t i = 0; i < a.steps.size(); ++i) {
        SCOPED_TRACE(i);
        const Step& x = a.steps[i];
        const Step& y = b.steps[i];
        EXPECT_EQ(y.number, x.number);
        EXPECT_EQ(y.start, x.start);
        EXPECT_EQ(y.end, x.end);
        EXPECT_EQ(y.since, x.since);
        EXPECT_EQ(y.wall_start, x.wall_start);
        EXPECT_EQ(y.wall_end, x.wall_end);
        EXPECT_EQ(y.drill_from, x.drill_from);
        EXPECT_EQ(y.drill_to, x.drill_to);
        EXPECT_EQ(y.first_record, x.first_record);
        EXPECT_EQ(y.kernels, 0u);
        EXPECT_TRUE(y.devices.empty());
        EXPECT_TRUE(y.label.empty());
      }
    }
    if (std::string(name) != "synthetic-sample") {
      EXPECT_GT(steps, 0u) << name;
    }
  }
  EXPECT_GE(recordings, 6u);
}

}  // namespace
}  // namespace cupmon::decoder

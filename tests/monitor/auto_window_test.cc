// Windows that open themselves (monitor/src/auto_window.cc, CUPMON_AUTO_WINDOW), end to end: a
// synthetic step stream from the CUPTI test double -> the writer's step watch -> the control
// thread's window -> the BEGIN marker in the files, read back with cupmon::decoder's reader.
#include "monitor/src/auto_window.h"

#include <cupti.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cupmon/control/control_client.h"
#include "cupmon/control/protocol.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/commands.h"
#include "cupmon/decoder/reports.h"
#include "cupmon/format/record_sizes.h"
#include "cupmon/monitor/config.h"
#include "cupmon/monitor/monitor.h"
#include "monitor/src/auto_window_trigger.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor/testing/kernel10_facts.h"
#include "monitor_fixture.h"
#include "tools/cupmon_decode/stderr_text.h"
#include "test_dir.h"

namespace cupmon {
namespace {

using testing::FakeCupti;
using testing::WaitFor;

constexpr uint64_t kStepNs = 1'000'000;  // a normal step: 1 ms
constexpr uint64_t kSlowNs = 5'000'000;  // a slow one: 5 ms, 5x the median (the default is 3x)
// The watch learns the pattern at 4096 kernels (1024 steps of 4), then times each step as soon as
// the next one's first kernel is delivered: FlushAndWait marks the flush (MarkFlushed), and the
// kernels held to restore start order go through.
constexpr uint64_t kSlowAt = 2000;  // after learning and MIN_STEPS
constexpr uint64_t kStreamSteps = 3000;

// A training loop on one stream, produced from its own thread while a second thread produces
// memcpys (CUPTI calls back from several threads). Step s (1-based, counted over the stream's
// life) lasts length(s); its kernels are spread evenly over min(length(s), busy_ns), and the GPU
// is idle for the rest.
class StepStream {
 public:
  // Four kernels a step: fwd_gemm, bwd_gemm, allreduce, adam_step.
  explicit StepStream(FakeCupti& fake)
      : StepStream(fake, {"fwd_gemm", "bwd_gemm", "allreduce", "adam_step"}, kStepNs) {}
  StepStream(FakeCupti& fake, const std::vector<std::string>& step_names, uint64_t busy_ns)
      : fake_(fake), busy_ns_(busy_ns) {
    std::vector<std::string> distinct;
    for (const std::string& n : step_names) {
      auto at = std::find(distinct.begin(), distinct.end(), n);
      if (at == distinct.end()) {
        distinct.push_back(n);
        ids_.push_back(fake.AddKernelName(n));
        names_.push_back(ids_.back());
      } else {
        names_.push_back(ids_[static_cast<size_t>(at - distinct.begin())]);
      }
    }
    kernels_ = fake.NewProducer();
    copies_ = fake.NewProducer();
  }
  // Steps in `slow` take kSlowNs instead of kStepNs.
  void Produce(uint64_t steps, const std::set<uint64_t>& slow) {
    ProduceLengths(steps, [&](uint64_t s) { return slow.count(s) ? kSlowNs : kStepNs; });
  }
  void ProduceLengths(uint64_t steps, const std::function<uint64_t(uint64_t)>& length) {
    const uint64_t first = next_step_;
    std::thread kernels([&] {
      for (uint64_t s = first; s < first + steps; ++s) {
        const uint64_t len = length(s);
        const uint64_t busy = std::min(len, busy_ns_);
        for (size_t i = 0; i < names_.size(); ++i) {
          const uint64_t start = t_ + i * (busy / names_.size());
          EXPECT_TRUE(kernels_->Kernel(names_[i], start, start + 1000));
        }
        t_ += len;
      }
    });
    std::thread copies([&] {
      for (uint64_t i = 0; i < steps; ++i) copies_->Memcpy(64, 1, 1 + i, 2 + i);
    });
    kernels.join();
    copies.join();
    next_step_ += steps;
  }
 private:
  FakeCupti& fake_;
  uint64_t busy_ns_;
  std::vector<uint32_t> ids_;    // per distinct name
  std::vector<uint32_t> names_;  // per kernel of a step
  FakeCupti::Producer* kernels_;
  FakeCupti::Producer* copies_;
  uint64_t next_step_ = 1;
  uint64_t t_ = 1'000'000'000;
};

// A realistic step: 200 kernels, five layers of the same 20 kernels then 100 of their own
// (tests/bench/step_watch_bench.cc has the same shape).
std::vector<std::string> TwoHundredKernelStep() {
  std::vector<std::string> names;
  for (size_t i = 0; i < 200; ++i)
    names.push_back(i < 100 ? "layer_kernel_" + std::to_string(i % 20)
                            : "step_kernel_" + std::to_string(i));
  return names;
}

// Deterministic noise in [-1, 1) (a fixed LCG: the same stream every run).
class Noise {
 public:
  double Next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state_ >> 11) / static_cast<double>(uint64_t{1} << 52) - 1.0;
  }

 private:
  uint64_t state_ = 42;
};

struct Markers : decoder::ChunkVisitor {
  std::vector<pb::WindowMarker> begins;
  void OnWindowMarker(const pb::WindowMarker& m) override {
    if (m.edge() == pb::WindowMarker::BEGIN) begins.push_back(m);
  }
};

std::vector<pb::WindowMarker> Begins(const std::string& dir) {
  Markers m;
  auto listing = decoder::ListRecordings(dir);
  EXPECT_TRUE(listing) << listing.error().message;
  if (!listing || listing->recordings.empty()) return {};
  decoder::ReadIntegrity integrity;
  decoder::ReadRecording(listing->recordings[0], m, &integrity);
  return m.begins;
}

MonitorOptions AutoOptions(FakeCupti* fake, const std::string& dir) {
  MonitorOptions o = testing::TestDoubleOptions(fake, dir);
  o.config.auto_window = true;
  o.config.window_ms = 60'000;  // stays open until the test closes it
  return o;
}

// Flushes, lets the writer time what it got and the control thread poll its mailbox.
void Settle(Monitor& m) {
  m.FlushAndWait();
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * AutoWindowTrigger::kPollMs));
}

// The slow step is timed as soon as the next step's first kernel is delivered: the stream ends
// one step after it, and the window is there (in the double, whose producer fills one buffer in
// start order; the real CUPTI's side-by-side buffers are why the flush mark exists).
TEST(AutoWindowTest, OneSlowStepOpensOneWindowAtThatStepOneStepLater) {
  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window", "one");
  auto m = Monitor::Start(AutoOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  StepStream stream(fake);
  const uint64_t slow_step = kSlowAt;
  stream.Produce(slow_step + 1, {slow_step});
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_opened == 1; }))
      << "steps timed: " << (*m)->GetStats().auto_steps_timed;
  Settle(**m);
  const MonitorStats s = (*m)->GetStats();
  EXPECT_EQ(s.auto_windows_opened, 1u);
  EXPECT_EQ(s.windows_opened, 1u);
  EXPECT_EQ(s.auto_windows_skipped, 0u);
  EXPECT_EQ(s.auto_steps_timed, slow_step);  // every step up to the slow one; the last is open
  ASSERT_TRUE((*m)->Stop());
  const std::vector<pb::WindowMarker> begins = Begins(dir);
  ASSERT_EQ(begins.size(), 1u);
  const pb::WindowMarker& b = begins[0];
  EXPECT_EQ(b.source(), pb::TRIGGER_AUTO);
  EXPECT_EQ(b.trigger_step(), slow_step);
  EXPECT_EQ(b.trigger_step_ns(), kSlowNs);
  EXPECT_EQ(b.trigger_median_ns(), kStepNs);
  EXPECT_DOUBLE_EQ(b.trigger_factor(), 3);
  EXPECT_EQ(b.requested_ms(), 60'000u);

  // cupmon-decode info says why the window opened.
  std::ostringstream out, err;
  decode_cli::StderrText err_text(err);
  decoder::RunRowsCommand(decoder::ReportKind::kInfo, {dir}, {}, out, err_text);
  const std::string expected = "#1 source TRIGGER_AUTO";
  EXPECT_NE(out.str().find(expected), std::string::npos) << out.str();
  const std::string why = "why: step " + std::to_string(slow_step) + " took " +
                          decoder::FormatDuration(double{kSlowNs}) + ", 5.00x the median " +
                          decoder::FormatDuration(double{kStepNs}) + " (threshold 3x)";
  EXPECT_NE(out.str().find(why), std::string::npos) << why << "\n" << out.str();

  // cupmon-decode steps: the window, the step it began in, and the same reason.
  std::ostringstream steps, steps_err;
  decode_cli::StderrText steps_err_text(steps_err);
  decoder::RunStepsCommand({dir}, {}, steps, steps_err_text);
  EXPECT_NE(steps.str().find("windows: 1\n  #1 TRIGGER_AUTO at "), std::string::npos)
      << steps.str().substr(steps.str().find("windows:") == std::string::npos
                                ? 0
                                : steps.str().find("windows:"));
  EXPECT_NE(steps.str().find("    " + why + "\n"), std::string::npos) << steps.str();

  // cupmon-decode report (HTML): the windows table has the reason in its own column.
  std::ostringstream html, html_err;
  decode_cli::StderrText html_err_text(html_err);
  decoder::RunHtmlCommand({dir}, {}, html, html_err_text);
  EXPECT_NE(html.str().find("<th>why it opened</th>"), std::string::npos) << html_err.str();
  const std::string reason = why.substr(std::string("why: ").size());
  EXPECT_NE(html.str().find("<td class=\"why\">" + reason + "</td>"), std::string::npos)
      << html_err.str();
}

TEST(AutoWindowTest, EvenStepsOpenNoWindow) {
  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window", "none");
  auto m = Monitor::Start(AutoOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  StepStream stream(fake);
  stream.Produce(kStreamSteps, {});
  Settle(**m);
  const MonitorStats s = (*m)->GetStats();
  // The steps were timed (the watch ran), and none was slow.
  EXPECT_EQ(s.auto_steps_timed, kStreamSteps - 1);  // durations need the next step's start
  EXPECT_EQ(s.auto_windows_opened, 0u);
  EXPECT_EQ(s.auto_windows_skipped, 0u);
  ASSERT_TRUE((*m)->Stop());
  EXPECT_TRUE(Begins(dir).empty());
}

TEST(AutoWindowTest, SlowStepsAreIgnoredWhenTheTriggerIsOff) {
  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window", "off");
  MonitorOptions o = AutoOptions(&fake, dir);
  o.config.auto_window = false;
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  StepStream stream(fake);
  stream.Produce(kStreamSteps, {kSlowAt});
  Settle(**m);
  EXPECT_EQ((*m)->GetStats().auto_steps_timed, 0u);  // off: not even timed
  EXPECT_EQ((*m)->GetStats().windows_opened, 0u);
  ASSERT_TRUE((*m)->Stop());
}

TEST(AutoWindowTest, SecondSlowStepWithinMinGapOpensNone) {
  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window", "gap");
  auto m = Monitor::Start(AutoOptions(&fake, dir));  // MIN_GAP: the default 10 min
  ASSERT_TRUE(m) << m.error().message;
  StepStream stream(fake);
  stream.Produce(kStreamSteps, {kSlowAt});
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_opened == 1; }));
  ASSERT_TRUE((*m)->RequestCloseWindow());  // closed: only the gap can hold the next one back
  stream.Produce(kStreamSteps, {kStreamSteps + kSlowAt});
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_skipped == 1; }));
  Settle(**m);
  EXPECT_EQ((*m)->GetStats().auto_windows_opened, 1u);
  EXPECT_EQ((*m)->GetStats().windows_opened, 1u);
  ASSERT_TRUE((*m)->Stop());
  EXPECT_EQ(Begins(dir).size(), 1u);
}

TEST(AutoWindowTest, NoAutomaticWindowWhileAWindowIsOpenButOneAfterWithoutAGap) {
  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window", "open");
  MonitorOptions o = AutoOptions(&fake, dir);
  o.config.auto_window_min_gap_ms = 0;
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_TRUE((*m)->RequestWindow(60'000, {}, pb::TRIGGER_API));
  StepStream stream(fake);
  stream.Produce(kStreamSteps, {kSlowAt});
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_skipped == 1; }));
  EXPECT_EQ((*m)->GetStats().auto_windows_opened, 0u);
  ASSERT_TRUE((*m)->RequestCloseWindow());
  // No gap configured and no window open: the next slow step opens one.
  const uint64_t second = kStreamSteps + kSlowAt + 1;
  stream.Produce(kStreamSteps, {second});
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_opened == 1; }));
  ASSERT_TRUE((*m)->Stop());
  const std::vector<pb::WindowMarker> begins = Begins(dir);
  ASSERT_EQ(begins.size(), 2u);
  EXPECT_EQ(begins[0].source(), pb::TRIGGER_API);
  EXPECT_EQ(begins[0].trigger_step(), 0u);
  EXPECT_EQ(begins[1].source(), pb::TRIGGER_AUTO);
  EXPECT_EQ(begins[1].trigger_step(), second);
}

// cupmonctl window PID --duration 2s --when-slower 2 --kinds runtime, over the control socket, on
// a job started without CUPMON_AUTO_WINDOW: armed once, one window at the first step slower than
// 2x the median, with the request's duration and kinds; the next slow step opens none.
TEST(AutoWindowTest, WhenSlowerOverTheSocketArmsTheTriggerOnce) {
  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window", "socket");
  MonitorOptions o = AutoOptions(&fake, dir);
  o.config.auto_window = false;
  o.config.auto_window_min_gap_ms = 0;  // the one-shot trigger's single window is the limit
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  auto path = control::FindSocket(getpid(), dir + "/registry");
  ASSERT_TRUE(path) << path.error().message;
  auto ask = [&](double factor, int64_t at_ms) {
    pb::ControlRequest r;
    r.mutable_open_window()->set_duration_ms(2000);
    r.mutable_open_window()->add_kinds("runtime");
    r.mutable_open_window()->set_when_slower(factor);
    r.mutable_open_window()->set_at_unix_ms(at_ms);
    auto reply = control::Call(*path, r, std::chrono::seconds(10));
    EXPECT_TRUE(reply) << reply.error().message;
    return reply ? *reply : pb::ControlReply();
  };
  // Bad factors and --at together are refused, naming what was wrong.
  for (double bad : {1.0, 0.5, -2.0, 5000.0}) {
    const pb::ControlReply r = ask(bad, 0);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().find("--when-slower"), std::string::npos) << r.error();
  }
  const pb::ControlReply with_at = ask(2.0, cupmon::control::NowUnixMs() + 60'000);
  EXPECT_FALSE(with_at.ok());
  EXPECT_NE(with_at.error().find("exclude"), std::string::npos) << with_at.error();

  const pb::ControlReply armed = ask(2.0, 0);
  ASSERT_TRUE(armed.ok()) << armed.error();
  EXPECT_EQ(armed.window_id(), 0u);
  EXPECT_NE(armed.message().find("armed"), std::string::npos) << armed.message();
  EXPECT_FALSE((*m)->GetStats().window_open);  // nothing opens before a slow step

  StepStream stream(fake);
  stream.Produce(kStreamSteps, {kSlowAt});
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_opened == 1; }));
  ASSERT_TRUE((*m)->RequestCloseWindow());
  // Once: disarmed after its window, so a later slow step opens none (and is not even offered).
  stream.Produce(kStreamSteps, {kStreamSteps + kSlowAt});
  Settle(**m);
  EXPECT_EQ((*m)->GetStats().auto_windows_opened, 1u);
  EXPECT_EQ((*m)->GetStats().windows_opened, 1u);
  ASSERT_TRUE((*m)->Stop());
  const std::vector<pb::WindowMarker> begins = Begins(dir);
  ASSERT_EQ(begins.size(), 1u);
  EXPECT_EQ(begins[0].source(), pb::TRIGGER_AUTO);
  EXPECT_EQ(begins[0].trigger_step(), kSlowAt);
  EXPECT_DOUBLE_EQ(begins[0].trigger_factor(), 2.0);
  EXPECT_EQ(begins[0].requested_ms(), 2000u);
  ASSERT_EQ(begins[0].kinds_size(), 1);
  EXPECT_EQ(begins[0].kinds(0), static_cast<uint32_t>(CUPTI_ACTIVITY_KIND_RUNTIME));
}

// Ordinary jitter at a realistic rate (200 kernels a step, 6.1 ms steps +-15%, every 23rd step
// 2.1x: 12.9 ms, the H200 loop's worst in 300 steps) opens no window under the defaults; a 1 s
// step in the same loop opens one, at that step.
std::vector<uint64_t> JitteryLengths(size_t steps) {
  Noise noise;
  std::vector<uint64_t> lengths(steps + 1);
  for (size_t s = 1; s <= steps; ++s)
    lengths[s] = s % 23 == 0 ? 12'900'000
                             : static_cast<uint64_t>(6'100'000 * (1 + 0.15 * noise.Next()));
  return lengths;
}

TEST(AutoWindowJitterTest, TwoTimesJitterOpensNoWindowUnderTheDefaultsAOneSecondStepOpensOne) {
  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window", "jitter");
  auto m = Monitor::Start(AutoOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  StepStream stream(fake, TwoHundredKernelStep(), 5'000'000);
  std::vector<uint64_t> lengths = JitteryLengths(600);
  stream.ProduceLengths(400, [&](uint64_t step) { return lengths[step]; });
  Settle(**m);
  MonitorStats s = (*m)->GetStats();
  EXPECT_EQ(s.auto_steps_timed, 399u);
  EXPECT_EQ(s.auto_windows_opened, 0u);
  EXPECT_EQ(s.auto_windows_skipped, 0u);
  constexpr uint64_t kOneSecondStep = 500;
  lengths[kOneSecondStep] = 1'000'000'000;
  stream.ProduceLengths(200, [&](uint64_t step) { return lengths[step]; });
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_opened == 1; }));
  Settle(**m);
  s = (*m)->GetStats();
  EXPECT_EQ(s.auto_windows_opened, 1u);
  EXPECT_EQ(s.auto_windows_skipped, 0u);
  ASSERT_TRUE((*m)->Stop());
  const std::vector<pb::WindowMarker> begins = Begins(dir);
  ASSERT_EQ(begins.size(), 1u);
  EXPECT_EQ(begins[0].trigger_step(), kOneSecondStep);
  EXPECT_EQ(begins[0].trigger_step_ns(), 1'000'000'000u);
}

// The same loop under the old default factor, 1.5: its first 2.1x step opens a window (the
// median-plus-spread rule alone would not hold it back), which is why the default is 3.
TEST(AutoWindowJitterTest, TheOldFactorOfOneAndAHalfFiresOnTheJitter) {
  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window", "jitter15");
  MonitorOptions o = AutoOptions(&fake, dir);
  o.config.auto_window_factor = 1.5;
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  StepStream stream(fake, TwoHundredKernelStep(), 5'000'000);
  const std::vector<uint64_t> lengths = JitteryLengths(400);
  stream.ProduceLengths(400, [&](uint64_t step) { return lengths[step]; });
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_opened == 1; }));
  ASSERT_TRUE((*m)->Stop());
  const std::vector<pb::WindowMarker> begins = Begins(dir);
  ASSERT_EQ(begins.size(), 1u);
  EXPECT_EQ(begins[0].trigger_step(), 23u);
  EXPECT_EQ(begins[0].trigger_step_ns(), 12'900'000u);
}

// A loop whose steps spread widely (1 to 11 ms): a step over 3x the median but within the median
// plus 10 median absolute deviations opens nothing; a 1 s step does.
TEST(AutoWindowJitterTest, AStepWithinTheSpreadOpensNoWindow) {
  Noise noise;
  std::vector<uint64_t> lengths(401);
  for (size_t s = 1; s <= 400; ++s)
    lengths[s] = static_cast<uint64_t>(6'000'000 + 5'000'000 * noise.Next());
  constexpr uint64_t kSpike = 200, kOneSecond = 300;
  lengths[kSpike] = 24'000'000;
  lengths[kOneSecond] = 1'000'000'000;
  // The premise, from the 64 steps the watch compares the spike with.
  std::vector<uint64_t> before(lengths.begin() + kSpike - 64, lengths.begin() + kSpike);
  std::sort(before.begin(), before.end());
  const uint64_t median = before[32];
  std::vector<uint64_t> dev;
  for (uint64_t d : before) dev.push_back(d > median ? d - median : median - d);
  std::sort(dev.begin(), dev.end());
  ASSERT_GT(lengths[kSpike], 3 * median);
  ASSERT_LT(lengths[kSpike], median + 10 * dev[32]);

  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window", "spread");
  auto m = Monitor::Start(AutoOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  StepStream stream(fake, TwoHundredKernelStep(), 900'000);
  stream.ProduceLengths(400, [&](uint64_t step) { return lengths[step]; });
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_opened == 1; }));
  Settle(**m);
  EXPECT_EQ((*m)->GetStats().auto_windows_skipped, 0u);  // the spike was never offered
  ASSERT_TRUE((*m)->Stop());
  const std::vector<pb::WindowMarker> begins = Begins(dir);
  ASSERT_EQ(begins.size(), 1u);
  EXPECT_EQ(begins[0].trigger_step(), kOneSecond);
}

// CUPMON_AUTO_WINDOW_ANCHOR=kernel:marker on a loop with no repeating pattern (each step: the
// marker kernel, then 1 to 7 kernels of five names in a changing order): steps are cut at each
// marker kernel, and the slow one opens the window. Without the anchor the pattern detector finds
// no steps in the same loop.
constexpr uint64_t kAnchorSteps = 2000, kAnchorSlow = 1500;  // ~10,000 kernels: past learning

void ProduceIrregularLoop(FakeCupti& fake) {
  const uint32_t marker = fake.AddKernelName("void train_step_marker_kernel<float>()");
  std::vector<uint32_t> others;
  for (const char* n : {"gemm_a", "gemm_b", "relu", "softmax", "reduce"})
    others.push_back(fake.AddKernelName(n));
  FakeCupti::Producer* p = fake.NewProducer();
  Noise noise;
  uint64_t t = 1'000'000'000;
  for (uint64_t s = 1; s <= kAnchorSteps; ++s) {
    const uint64_t len = s == kAnchorSlow ? kSlowNs : kStepNs;
    EXPECT_TRUE(p->Kernel(marker, t, t + 1000));
    const auto extra = 1 + static_cast<size_t>(3.5 * (noise.Next() + 1));
    for (size_t k = 0; k < extra; ++k) {
      const size_t which = static_cast<size_t>(2.5 * (noise.Next() + 1)) % others.size();
      const uint64_t start = t + (k + 1) * 100'000;
      EXPECT_TRUE(p->Kernel(others[which], start, start + 1000));
    }
    t += len;
  }
}

TEST(AutoWindowAnchorTest, KernelAnchorCutsStepsThePatternCannot) {
  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window", "anchor");
  MonitorOptions o = AutoOptions(&fake, dir);
  o.config.auto_window_anchor_kernel = "marker";
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  ProduceIrregularLoop(fake);
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_opened == 1; }));
  Settle(**m);
  EXPECT_EQ((*m)->GetStats().auto_steps_timed, kAnchorSteps - 1);
  ASSERT_TRUE((*m)->Stop());
  const std::vector<pb::WindowMarker> begins = Begins(dir);
  ASSERT_EQ(begins.size(), 1u);
  EXPECT_EQ(begins[0].trigger_step(), kAnchorSlow);
  EXPECT_EQ(begins[0].trigger_step_ns(), kSlowNs);
  EXPECT_EQ(begins[0].trigger_median_ns(), kStepNs);
}

TEST(AutoWindowAnchorTest, WithoutTheAnchorTheSameLoopIsNotTimed) {
  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window", "noanchor");
  auto m = Monitor::Start(AutoOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  ProduceIrregularLoop(fake);
  Settle(**m);
  EXPECT_EQ((*m)->GetStats().auto_steps_timed, 0u);
  EXPECT_EQ((*m)->GetStats().auto_windows_opened, 0u);
  ASSERT_TRUE((*m)->Stop());
}

// StepWatch alone, on buffers shaped as CUPTI hands them over (the bundled H200 sample): one
// stream's kernels alternate between two buffers filled side by side, each in start order,
// delivered one after the other at a flush.
using cupmon::testing::Kernel10Facts;

// Steps [first, first + count) of a 200-kernel loop (5 ms each, `slow` 1 s), split by kernel
// parity into two buffers.
std::pair<std::vector<uint8_t>, std::vector<uint8_t>> SideBySide(uint64_t first, uint64_t count,
                                                                 uint64_t slow) {
  std::vector<uint8_t> even, odd;
  for (uint64_t s = first; s < first + count; ++s) {
    const uint64_t t0 = 1'000'000'000 + (s - 1) * 5'000'000 + (s > slow ? 995'000'000 : 0);
    for (size_t i = 0; i < 200; ++i) {
      CUpti_ActivityKernel10 k{};
      k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k.start = t0 + i * 20'000;
      k.end = k.start + 10'000;
      k.streamId = 7;
      k.name = reinterpret_cast<const char*>(0x7f0000001000ull + (i < 100 ? i % 20 : i) * 64);
      const auto* p = reinterpret_cast<const uint8_t*>(&k);
      std::vector<uint8_t>& to = i % 2 ? odd : even;
      to.insert(to.end(), p, p + sizeof(k));
    }
  }
  return {even, odd};
}

TEST(StepWatchTest, SideBySideBuffersAreTimedAtTheFlushMarkNotAfterTwoToTheFifteenKernels) {
  const SessionFacts facts = Kernel10Facts();
  AutoWindowMailbox held_mailbox, settled_mailbox;
  StepWatch held(facts, StepWatch::Options{}, held_mailbox);
  StepWatch settled(facts, StepWatch::Options{}, settled_mailbox);
  // Flush 1: steps 1-100. Flush 2: steps 101-200, step 150 lasting 1 s.
  for (auto [first, count] : {std::pair<uint64_t, uint64_t>{1, 100}, {101, 100}}) {
    const auto [even, odd] = SideBySide(first, count, 150);
    for (StepWatch* w : {&held, &settled}) {
      w->Add(even.data(), even.size());
      w->Add(odd.data(), odd.size());
    }
    settled.Settle();
    EXPECT_EQ(settled.steps_timed(), first + count - 2);  // every step but the open last one
  }
  // Without the marks, only the count bound releases kernels: 40,000 - 2^15 = 7,232 of them,
  // up to step 37's first kernel, so 36 steps are timed, and step 150 is 113 steps away.
  EXPECT_EQ(held.steps_timed(), 36u);
  EXPECT_FALSE(held_mailbox.Take());
  const std::optional<SlowStep> slow = settled_mailbox.Take();
  ASSERT_TRUE(slow);
  EXPECT_EQ(slow->step, 150u);
  EXPECT_EQ(slow->duration_ns, 1'000'000'000u);
  EXPECT_EQ(slow->median_ns, 5'000'000u);
  EXPECT_EQ(settled.slow_refused(), 0u);  // the only slow step
}

TEST(AutoWindowConfigTest, BadValuesAreRefusedNamingTheVariable) {
  struct Case {
    const char* name;
    const char* value;
  };
  const Case cases[] = {{"CUPMON_AUTO_WINDOW", "maybe"},
                        {"CUPMON_AUTO_WINDOW_FACTOR", "1"},
                        {"CUPMON_AUTO_WINDOW_FACTOR", "fast"},
                        {"CUPMON_AUTO_WINDOW_FACTOR", "1e9"},
                        {"CUPMON_AUTO_WINDOW_MIN_STEPS", "2"},
                        {"CUPMON_AUTO_WINDOW_MIN_GAP", "10 parsecs"},
                        {"CUPMON_AUTO_WINDOW_MIN_GAP", "9999h"},
                        {"CUPMON_AUTO_WINDOW_ANCHOR", "adam"},
                        {"CUPMON_AUTO_WINDOW_ANCHOR", "kernel:"},
                        {"CUPMON_AUTO_WINDOW_ANCHOR", "annotation:step"},
                        {"CUPMON_AUTO_WINDOW_BY", "gpu"},
                        {"CUPMON_AUTO_WINDOW_BY", "host_gap"},
                        {"CUPMON_AUTO_WINDOW_BY", ""},
                        {"CUPMON_STEP_METRICS", "maybe"}};
  for (const Case& c : cases) {
    static const Case* current;
    current = &c;
    MonitorConfig config;
    std::vector<std::string> warnings;
    ApplyControlEnvironment(&config, &warnings, [](const char* n) -> const char* {
      return std::string(n) == current->name ? current->value : nullptr;
    });
    ASSERT_EQ(warnings.size(), 1u) << c.name << "=" << c.value;
    EXPECT_NE(warnings[0].find(c.name), std::string::npos) << warnings[0];
    const MonitorConfig defaults;
    EXPECT_EQ(config.auto_window, defaults.auto_window);
    EXPECT_EQ(config.auto_window_factor, defaults.auto_window_factor);
    EXPECT_EQ(config.auto_window_min_steps, defaults.auto_window_min_steps);
    EXPECT_EQ(config.auto_window_min_gap_ms, defaults.auto_window_min_gap_ms);
    EXPECT_EQ(config.auto_window_anchor_kernel, "");
    EXPECT_EQ(config.auto_window_by, AutoWindowBy::kStep);
    EXPECT_FALSE(config.step_metrics.has_value());
  }
  const auto by = ParseAutoWindowBy("wait");
  ASSERT_FALSE(by);
  EXPECT_NE(by.error().message.find("step, work, host-gap or own"), std::string::npos)
      << by.error().message;
  // An annotation anchor says why it cannot work.
  const auto annotation = ParseStepAnchor("annotation:step");
  ASSERT_FALSE(annotation);
  EXPECT_NE(annotation.error().message.find("trace windows only"), std::string::npos)
      << annotation.error().message;
}

TEST(AutoWindowConfigTest, GoodValuesAreTaken) {
  MonitorConfig config;
  std::vector<std::string> warnings;
  ApplyControlEnvironment(&config, &warnings, [](const char* n) -> const char* {
    const std::string name(n);
    if (name == "CUPMON_AUTO_WINDOW") return "1";
    if (name == "CUPMON_AUTO_WINDOW_FACTOR") return "2.25";
    if (name == "CUPMON_AUTO_WINDOW_MIN_STEPS") return "50";
    if (name == "CUPMON_AUTO_WINDOW_MIN_GAP") return "90s";
    if (name == "CUPMON_AUTO_WINDOW_ANCHOR") return " kernel:adam_step ";
    if (name == "CUPMON_AUTO_WINDOW_BY") return " host-gap ";
    if (name == "CUPMON_STEP_METRICS") return "off";
    return nullptr;
  });
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_TRUE(config.auto_window);
  EXPECT_DOUBLE_EQ(config.auto_window_factor, 2.25);
  EXPECT_EQ(config.auto_window_min_steps, 50u);
  EXPECT_EQ(config.auto_window_min_gap_ms, 90'000u);
  EXPECT_EQ(config.auto_window_anchor_kernel, "adam_step");
  EXPECT_EQ(config.auto_window_by, AutoWindowBy::kHostGap);
  EXPECT_EQ(config.step_metrics, false);
  for (AutoWindowBy b : {AutoWindowBy::kStep, AutoWindowBy::kWork, AutoWindowBy::kHostGap,
                         AutoWindowBy::kOwn})
    EXPECT_EQ(*ParseAutoWindowBy(AutoWindowByName(b)), b);
  // Steps are summed when asked, or for a quantity other than the step time; the metrics endpoint
  // alone does not turn them on.
  MonitorConfig c;
  EXPECT_FALSE(SumsSteps(c));
  c.metrics_address = "127.0.0.1:0";
  EXPECT_FALSE(SumsSteps(c));
  c.step_metrics = true;
  EXPECT_TRUE(SumsSteps(c));
  c.step_metrics = false;
  EXPECT_FALSE(SumsSteps(c));
  c.auto_window = true;
  c.auto_window_by = AutoWindowBy::kOwn;
  EXPECT_TRUE(SumsSteps(c));
  EXPECT_EQ(*ParseDurationMs("10m"), 600'000u);
  EXPECT_EQ(*ParseDurationMs("2h"), 7'200'000u);
  EXPECT_EQ(*ParseDurationMs("250"), 250u);
  EXPECT_FALSE(ParseDurationMs("m"));
}

// CUPMON_AUTO_WINDOW_BY=own on two ranks of a job, each a monitor on the test double. A step of
// four kernels (fwd, bwd, an NCCL all-reduce, adam) every 1 ms. Rank "waiter" waits 3.9 ms longer
// in the all-reduce of one step (the step is 4.9 ms; its work and host gap do not change); rank
// "late" launches that step 3.9 ms late (the idle before it grows: its host gap). Under `own`
// the waiter opens no window and the late rank one, at that step; under `step` both open one.
enum class Slowness { kWaited, kLaunchedLate };

constexpr uint64_t kUs = 1000;
constexpr uint64_t kExtraNs = 3900 * kUs;

struct RankNames {
  explicit RankNames(FakeCupti& fake)
      : fwd(fake.AddKernelName("fwd_gemm")),
        bwd(fake.AddKernelName("bwd_gemm")),
        nccl(fake.AddKernelName("ncclDevKernel_AllReduce_Sum_f32_RING_LL")),
        adam(fake.AddKernelName("adam_step")) {}
  uint32_t fwd, bwd, nccl, adam;
};

// Steps `first` to `last` of the loop; `t` is the next step's start.
void ProduceRankSteps(const RankNames& n, FakeCupti::Producer* p, uint64_t first, uint64_t last,
                      uint64_t slow, Slowness how, uint64_t* t) {
  const uint32_t fwd = n.fwd, bwd = n.bwd, nccl = n.nccl, adam = n.adam;
  for (uint64_t s = first; s <= last; ++s) {
    // The late rank's step `slow` begins kExtraNs late: the idle after step slow - 1 grows.
    if (how == Slowness::kLaunchedLate && s == slow) *t += kExtraNs;
    const uint64_t collective = 100 * kUs + (how == Slowness::kWaited && s == slow ? kExtraNs : 0);
    EXPECT_TRUE(p->Kernel(fwd, *t, *t + 100 * kUs));
    EXPECT_TRUE(p->Kernel(bwd, *t + 100 * kUs, *t + 300 * kUs));
    EXPECT_TRUE(p->Kernel(nccl, *t + 300 * kUs, *t + 300 * kUs + collective));
    EXPECT_TRUE(p->Kernel(adam, *t + 300 * kUs + collective, *t + 350 * kUs + collective));
    *t += 1000 * kUs + (collective - 100 * kUs);
  }
}

struct RankResult {
  uint64_t opened = 0;
  std::vector<pb::WindowMarker> begins;
};

RankResult RunRank(AutoWindowBy by, Slowness how, const std::string& name) {
  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window-by", name);
  MonitorOptions o = AutoOptions(&fake, dir);
  o.config.auto_window_by = by;
  auto m = Monitor::Start(std::move(o));
  EXPECT_TRUE(m) << m.error().message;
  if (!m) return {};
  // The watch learns the pattern, and its first boundaries come at the flush: the sums hold
  // activities from then on. Figures wait for the boundary after the next step's: two steps
  // after the slow one.
  const RankNames names(fake);
  FakeCupti::Producer* p = fake.NewProducer();
  uint64_t t = 1'000'000'000;
  ProduceRankSteps(names, p, 1, 1500, kSlowAt, how, &t);
  Settle(**m);
  ProduceRankSteps(names, p, 1501, kSlowAt + 3, kSlowAt, how, &t);
  Settle(**m);
  Settle(**m);
  RankResult r;
  r.opened = (*m)->GetStats().auto_windows_opened;
  EXPECT_TRUE((*m)->Stop());
  r.begins = Begins(dir);
  return r;
}

TEST(AutoWindowByTest, UnderOwnARankThatOnlyWaitedDoesNotFireAndTheLateRankDoes) {
  const RankResult waiter = RunRank(AutoWindowBy::kOwn, Slowness::kWaited, "own-waiter");
  EXPECT_EQ(waiter.opened, 0u);
  EXPECT_TRUE(waiter.begins.empty());

  const RankResult late = RunRank(AutoWindowBy::kOwn, Slowness::kLaunchedLate, "own-late");
  EXPECT_EQ(late.opened, 1u);
  ASSERT_EQ(late.begins.size(), 1u);
  EXPECT_EQ(late.begins[0].trigger_step(), kSlowAt);
  // Own time: 350 us of work plus the host gap, 550 us normally and 3.9 ms more in that step.
  EXPECT_EQ(late.begins[0].trigger_step_ns(), 350 * kUs + 550 * kUs + kExtraNs);
  EXPECT_EQ(late.begins[0].trigger_median_ns(), 900 * kUs);
  EXPECT_EQ(late.begins[0].trigger_by(), "own");

  // The host gap alone finds it too; the work alone finds neither.
  EXPECT_EQ(RunRank(AutoWindowBy::kHostGap, Slowness::kLaunchedLate, "gap-late").opened, 1u);
  EXPECT_EQ(RunRank(AutoWindowBy::kWork, Slowness::kLaunchedLate, "work-late").opened, 0u);
}

TEST(AutoWindowByTest, UnderStepTimeBothRanksFire) {
  const RankResult waiter = RunRank(AutoWindowBy::kStep, Slowness::kWaited, "step-waiter");
  ASSERT_EQ(waiter.begins.size(), 1u);
  EXPECT_EQ(waiter.begins[0].trigger_step(), kSlowAt);
  EXPECT_EQ(waiter.begins[0].trigger_step_ns(), 1000 * kUs + kExtraNs);
  EXPECT_EQ(waiter.begins[0].trigger_by(), "") << "the step time: no quantity named";
  const RankResult late = RunRank(AutoWindowBy::kStep, Slowness::kLaunchedLate, "step-late");
  ASSERT_EQ(late.begins.size(), 1u);
  EXPECT_EQ(late.begins[0].trigger_step(), kSlowAt - 1);  // the step before the late launch
}

}  // namespace
}  // namespace cupmon

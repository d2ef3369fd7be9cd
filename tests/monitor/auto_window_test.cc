// Windows that open themselves (monitor/src/auto_window.cc, CUPMON_AUTO_WINDOW), end to end: a
// synthetic step stream from the CUPTI test double -> the writer's step watch -> the control
// thread's window -> the BEGIN marker in the files, read back with cupmon::decoder's reader.
#include "monitor/src/auto_window.h"

#include <cupti.h>

#include <chrono>
#include <sstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cupmon/control/control_client.h"
#include "cupmon/control/protocol.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/reports.h"
#include "cupmon/monitor/config.h"
#include "cupmon/monitor/monitor.h"
#include "monitor/src/control_loop.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor_fixture.h"

namespace cupmon {
namespace {

using testing::FakeCupti;
using testing::WaitFor;

constexpr uint64_t kStepNs = 1'000'000;  // a normal step: 1 ms
constexpr uint64_t kSlowNs = 3'000'000;  // a slow one: 3 ms, 3x the median
// The watch holds the latest 2^15 kernels to restore start order (StepWatch's detector options),
// so a step is timed once 2^15 kernels (8192 steps of 4) came after it: each Produce() of
// kSettleSteps releases its first kReleased steps (and all of the previous ones).
constexpr uint64_t kHeldSteps = (uint64_t{1} << 15) / 4;
constexpr uint64_t kReleased = 4096;
constexpr uint64_t kSettleSteps = kHeldSteps + kReleased;
constexpr uint64_t kSlowAt = 2000;  // after learning (1024 steps) and MIN_STEPS

// A training loop of four kernels a step on one stream, produced from its own thread while a
// second thread produces memcpys (CUPTI calls back from several threads).
class StepStream {
 public:
  explicit StepStream(FakeCupti& fake) : fake_(fake) {
    for (const char* n : {"fwd_gemm", "bwd_gemm", "allreduce", "adam_step"})
      names_.push_back(fake.AddKernelName(n));
    kernels_ = fake.NewProducer();
    copies_ = fake.NewProducer();
  }
  // Produces `steps` steps; step numbers in `slow` (1-based, counted over the stream's life)
  // take kSlowNs instead of kStepNs.
  void Produce(uint64_t steps, const std::set<uint64_t>& slow) {
    const uint64_t first = next_step_;
    std::thread kernels([&] {
      for (uint64_t s = first; s < first + steps; ++s) {
        const uint64_t length = slow.count(s) ? kSlowNs : kStepNs;
        for (size_t i = 0; i < names_.size(); ++i) {
          const uint64_t start = t_ + i * (length / names_.size());
          EXPECT_TRUE(kernels_->Kernel(names_[i], start, start + 1000));
        }
        t_ += length;
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
  std::vector<uint32_t> names_;
  FakeCupti::Producer* kernels_;
  FakeCupti::Producer* copies_;
  uint64_t next_step_ = 1;
  uint64_t t_ = 1'000'000'000;
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
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * ControlLoop::kAutoPollMs));
}

TEST(AutoWindowTest, OneSlowStepOpensOneWindowAtThatStep) {
  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window", "one");
  auto m = Monitor::Start(AutoOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  StepStream stream(fake);
  const uint64_t slow_step = kSlowAt;
  stream.Produce(kSettleSteps, {slow_step});
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_opened == 1; }))
      << "steps timed: " << (*m)->GetStats().auto_steps_timed;
  Settle(**m);
  const MonitorStats s = (*m)->GetStats();
  EXPECT_EQ(s.auto_windows_opened, 1u);
  EXPECT_EQ(s.windows_opened, 1u);
  EXPECT_EQ(s.auto_windows_skipped, 0u);
  EXPECT_GT(s.auto_steps_timed, slow_step);
  ASSERT_TRUE((*m)->Stop());
  const std::vector<pb::WindowMarker> begins = Begins(dir);
  ASSERT_EQ(begins.size(), 1u);
  const pb::WindowMarker& b = begins[0];
  EXPECT_EQ(b.source(), pb::TRIGGER_AUTO);
  EXPECT_EQ(b.trigger_step(), slow_step);
  EXPECT_EQ(b.trigger_step_ns(), kSlowNs);
  EXPECT_EQ(b.trigger_median_ns(), kStepNs);
  EXPECT_DOUBLE_EQ(b.trigger_factor(), 1.5);
  EXPECT_EQ(b.requested_ms(), 60'000u);

  // cupmon-decode info says why the window opened.
  std::ostringstream out, err;
  decoder::RunReport(decoder::ReportKind::kInfo, dir, decoder::ReportOptions{}, out, err);
  const std::string expected = "#1 source TRIGGER_AUTO";
  EXPECT_NE(out.str().find(expected), std::string::npos) << out.str();
  const std::string why = "why: step " + std::to_string(slow_step) + " took " +
                          decoder::FormatDuration(double{kSlowNs}) + ", 3.00x the median " +
                          decoder::FormatDuration(double{kStepNs}) + " (threshold 1.5x)";
  EXPECT_NE(out.str().find(why), std::string::npos) << why << "\n" << out.str();
}

TEST(AutoWindowTest, EvenStepsOpenNoWindow) {
  FakeCupti fake;
  const std::string dir = testing::FreshTestDir("cupmon-auto-window", "none");
  auto m = Monitor::Start(AutoOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  StepStream stream(fake);
  stream.Produce(kSettleSteps, {});
  Settle(**m);
  const MonitorStats s = (*m)->GetStats();
  // The steps were timed (the watch ran), and none was slow.
  EXPECT_EQ(s.auto_steps_timed, kReleased - 1);  // durations need the next step's start
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
  stream.Produce(kSettleSteps, {kSlowAt});
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
  stream.Produce(kSettleSteps, {kSlowAt});
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_opened == 1; }));
  ASSERT_TRUE((*m)->RequestCloseWindow());  // closed: only the gap can hold the next one back
  stream.Produce(kSettleSteps, {kSettleSteps + kSlowAt});
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
  stream.Produce(kSettleSteps, {kSlowAt});
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_skipped == 1; }));
  EXPECT_EQ((*m)->GetStats().auto_windows_opened, 0u);
  ASSERT_TRUE((*m)->RequestCloseWindow());
  // No gap configured and no window open: the next slow step opens one.
  const uint64_t second = kSettleSteps + kSlowAt + 1;
  stream.Produce(kSettleSteps, {second});
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
  stream.Produce(kSettleSteps, {kSlowAt});
  (*m)->FlushAndWait();
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().auto_windows_opened == 1; }));
  ASSERT_TRUE((*m)->RequestCloseWindow());
  // Once: disarmed after its window, so a later slow step opens none (and is not even offered).
  stream.Produce(kSettleSteps, {kSettleSteps + kSlowAt});
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
                        {"CUPMON_AUTO_WINDOW_MIN_GAP", "9999h"}};
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
  }
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
    return nullptr;
  });
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_TRUE(config.auto_window);
  EXPECT_DOUBLE_EQ(config.auto_window_factor, 2.25);
  EXPECT_EQ(config.auto_window_min_steps, 50u);
  EXPECT_EQ(config.auto_window_min_gap_ms, 90'000u);
  EXPECT_EQ(*ParseDurationMs("10m"), 600'000u);
  EXPECT_EQ(*ParseDurationMs("2h"), 7'200'000u);
  EXPECT_EQ(*ParseDurationMs("250"), 250u);
  EXPECT_FALSE(ParseDurationMs("m"));
}

}  // namespace
}  // namespace cupmon

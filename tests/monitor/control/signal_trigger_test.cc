// Tests for the signal trigger, including what happens when the application has, or later installs,
// its own handler for the same signal (the behaviour docs/CONTROL.md describes).
#include <csignal>

#include "control_test_util.h"

namespace cupmon::control {
namespace {

volatile sig_atomic_t app_handler_calls = 0;
void AppHandler(int) { app_handler_calls = app_handler_calls + 1; }

void InstallAppHandler() {
  struct sigaction sa {};
  sa.sa_handler = AppHandler;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(::sigaction(SIGUSR2, &sa, nullptr), 0);
}

void (*CurrentHandler())(int) {
  struct sigaction now {};
  ::sigaction(SIGUSR2, nullptr, &now);
  return now.sa_handler;
}

class SignalTriggerTest : public testing::ControlPlaneFixture {
 protected:
  void SetUp() override {
    ControlPlaneFixture::SetUp();
    options_.signal_number = SIGUSR2;
    ::signal(SIGUSR2, SIG_DFL);
    app_handler_calls = 0;
  }
  void TearDown() override {
    ControlPlaneFixture::TearDown();
    ::signal(SIGUSR2, SIG_DFL);
  }
  bool TriggerActive() {
    return RunOnIo([&] { return plane_->signal_trigger_active(); });
  }
  // A socket round trip after raise(): by then the io thread has had the signal's wake-up pending.
  void RoundTrip() {
    auto reply = Send(StatusRequest());
    ASSERT_TRUE(reply.has_value());
    ASSERT_TRUE(reply->ok());
  }
};

TEST_F(SignalTriggerTest, SignalOpensDefaultWindow) {
  ASSERT_TRUE(StartPlane().has_value());
  ASSERT_TRUE(TriggerActive());  // otherwise raise() below would kill the test
  struct sigaction installed {};
  ::sigaction(SIGUSR2, nullptr, &installed);
  EXPECT_TRUE(installed.sa_flags & SA_RESTART);  // interrupted application calls resume
  ASSERT_EQ(::raise(SIGUSR2), 0);
  ASSERT_TRUE(target_.WaitForOpens(1));
  ASSERT_EQ(::kill(::getpid(), SIGUSR2), 0);
  ASSERT_TRUE(target_.WaitForOpens(2));
  {
    std::lock_guard lock(target_.mu);
    EXPECT_EQ(target_.opened[0].source, pb::TRIGGER_SIGNAL);
    EXPECT_EQ(target_.opened[0].duration_ms, 1234u);
    EXPECT_TRUE(target_.opened[0].kinds.empty());
  }
  EXPECT_EQ(Counters().signals, 2u);
  RunOnIo([&] { plane_->Stop(); });
  // SIG_DFL was there before Start, but SIGUSR2's default action ends the process: a stray
  // trigger signal after stop must neither do that nor open a window.
  EXPECT_NE(CurrentHandler(), SIG_DFL);
  ASSERT_EQ(::raise(SIGUSR2), 0);
  EXPECT_EQ(Counters().signals, 2u);
  EXPECT_EQ(target_.open_count(), 2u);
}

TEST_F(SignalTriggerTest, SignalOffInstallsNothing) {
  options_.signal_number = 0;
  ASSERT_TRUE(StartPlane().has_value());
  EXPECT_FALSE(TriggerActive());
  EXPECT_EQ(CurrentHandler(), SIG_DFL);
}

TEST_F(SignalTriggerTest, AppHandlerInstalledBeforeIsLeftAlone) {
  InstallAppHandler();
  ASSERT_TRUE(StartPlane().has_value());
  EXPECT_FALSE(TriggerActive());
  EXPECT_EQ(CurrentHandler(), &AppHandler);
  ASSERT_EQ(::raise(SIGUSR2), 0);
  EXPECT_EQ(app_handler_calls, 1);
  RoundTrip();
  EXPECT_EQ(target_.open_count(), 0u);
  EXPECT_EQ(Counters().signals, 0u);
  RunOnIo([&] { plane_->Stop(); });
  EXPECT_EQ(CurrentHandler(), &AppHandler);
}

TEST_F(SignalTriggerTest, TakeOverReplacesAppHandlerUntilStop) {
  InstallAppHandler();
  options_.take_over_app_signal_handler = true;
  ASSERT_TRUE(StartPlane().has_value());
  ASSERT_TRUE(TriggerActive());
  ASSERT_EQ(::raise(SIGUSR2), 0);
  ASSERT_TRUE(target_.WaitForOpens(1));
  EXPECT_EQ(app_handler_calls, 0);  // asio's handler does not chain to the one it replaced
  RunOnIo([&] { plane_->Stop(); });
  EXPECT_EQ(CurrentHandler(), &AppHandler);  // restored
  ASSERT_EQ(::raise(SIGUSR2), 0);
  EXPECT_EQ(app_handler_calls, 1);
}

TEST_F(SignalTriggerTest, AppHandlerInstalledAfterWinsAndSurvivesStop) {
  ASSERT_TRUE(StartPlane().has_value());
  ASSERT_TRUE(TriggerActive());
  InstallAppHandler();
  EXPECT_FALSE(TriggerActive());  // detectable: the installed handler is no longer asio's
  ASSERT_EQ(::raise(SIGUSR2), 0);
  EXPECT_EQ(app_handler_calls, 1);
  RoundTrip();
  EXPECT_EQ(target_.open_count(), 0u);
  EXPECT_EQ(Counters().signals, 0u);
  // Asio's cleanup would reset the signal to SIG_DFL; Stop puts the application's handler back.
  RunOnIo([&] { plane_->Stop(); });
  EXPECT_EQ(CurrentHandler(), &AppHandler);
}

TEST_F(SignalTriggerTest, WindowErrorFromSignalIsCounted) {
  target_.open_error = "a window is already open";
  ASSERT_TRUE(StartPlane().has_value());
  ASSERT_TRUE(TriggerActive());
  ASSERT_EQ(::raise(SIGUSR2), 0);
  ASSERT_TRUE(target_.WaitForOpens(1));
  RoundTrip();
  const ControlCounters c = Counters();
  EXPECT_EQ(c.signals, 1u);
  EXPECT_EQ(c.window_errors, 1u);
}

}  // namespace
}  // namespace cupmon::control

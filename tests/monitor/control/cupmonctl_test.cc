// Runs the built cupmonctl binary against a live ControlPlane in this process and checks its exit
// codes: 0 ok, 1 refused by the monitor, 2 usage error, 3 not monitored / unreachable.
#include <sys/wait.h>

#include <cstdio>

#include "control_test_util.h"

#ifndef CUPMONCTL_PATH
#error "CUPMONCTL_PATH must name the cupmonctl binary"
#endif

namespace cupmon::control {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

RunResult RunCtl(const std::string& args) {
  RunResult result;
  const std::string command = std::string(CUPMONCTL_PATH) + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) result.output.append(buf, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

class CupmonctlTest : public testing::ControlPlaneFixture {
 protected:
  std::string Ctl(const std::string& rest) { return "--registry " + options_.registry_dir + " " + rest; }
  std::string Pid() { return std::to_string(::getpid()); }
};

TEST_F(CupmonctlTest, PidNotMonitoredExits3) {
  ASSERT_EQ(::mkdir(options_.registry_dir.c_str(), 0700), 0);
  for (const char* verb : {"status", "close", "flush", "rotate"}) {
    const RunResult r = RunCtl(Ctl(std::string(verb) + " 999999999"));
    EXPECT_EQ(r.exit_code, 3) << verb << ": " << r.output;
    EXPECT_NE(r.output.find("not monitored"), std::string::npos) << r.output;
  }
  const RunResult w = RunCtl(Ctl("window 999999999 --duration 1s"));
  EXPECT_EQ(w.exit_code, 3) << w.output;
}

TEST_F(CupmonctlTest, UsageErrorsExit2) {
  const std::vector<std::string> bad = {
      "",                                         // no subcommand
      "status",                                   // no pid
      "status abc",                               // pid not a number
      "window 1 --duration 0s",                   // zero
      "window 1 --duration -5s",                  // negative
      "window 1 --duration 5",                    // no unit
      "window 1 --duration 5h",                   // unknown unit
      "window 1 --duration abc",                  // not a number
      "window 1 --duration 1441m",                // over 24 h
      "window 1",                                 // --duration missing
      "window 1 --duration 1s --kinds kernel",    // unknown kind
      "window 1 --duration 1s --at 5 --align 1s",  // exclusive
      "window 1 --duration 1s --at 1000",          // long past
      "window 1 --duration 1s --align 0s",
      "--timeout 0s status 1",
      "frobnicate 1",
  };
  for (const std::string& args : bad) {
    const RunResult r = RunCtl(Ctl(args));
    EXPECT_EQ(r.exit_code, 2) << "'" << args << "': " << r.output;
  }
}

TEST_F(CupmonctlTest, HelpShowsExamplesAndExits0) {
  const RunResult r = RunCtl("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("cupmonctl window 4242 --duration 5s"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Exit codes"), std::string::npos);
}

TEST_F(CupmonctlTest, WindowStatusCloseAgainstLiveMonitor) {
  ASSERT_TRUE(StartPlane().has_value());
  const RunResult opened = RunCtl(Ctl("window " + Pid() + " --duration 1500ms --kinds Runtime,driver"));
  EXPECT_EQ(opened.exit_code, 0) << opened.output;
  EXPECT_NE(opened.output.find("window 1 open for 1500 ms"), std::string::npos) << opened.output;
  {
    std::lock_guard lock(target_.mu);
    ASSERT_EQ(target_.opened.size(), 1u);
    EXPECT_EQ(target_.opened[0].duration_ms, 1500u);
    EXPECT_EQ(target_.opened[0].kinds, (std::vector<std::string>{"RUNTIME", "DRIVER"}));
  }
  const RunResult status = RunCtl(Ctl("--json status " + Pid()));
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_NE(status.output.find("\"window_open\":true"), std::string::npos) << status.output;
  EXPECT_NE(status.output.find("/fake/output"), std::string::npos);

  const RunResult human = RunCtl(Ctl("status " + Pid()));
  EXPECT_EQ(human.exit_code, 0);
  EXPECT_NE(human.output.find("open (id 1)"), std::string::npos) << human.output;

  const RunResult list = RunCtl(Ctl("list"));
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_NE(list.output.find(Pid()), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("window 1"), std::string::npos) << list.output;

  EXPECT_EQ(RunCtl(Ctl("close " + Pid())).exit_code, 0);
  const RunResult again = RunCtl(Ctl("close " + Pid()));  // nothing open: the monitor says no
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_NE(again.output.find("no window is open"), std::string::npos);
  EXPECT_EQ(RunCtl(Ctl("flush " + Pid())).exit_code, 0);
  EXPECT_EQ(RunCtl(Ctl("rotate " + Pid())).exit_code, 0);
}

TEST_F(CupmonctlTest, AlignedWindowIsScheduled) {
  ASSERT_TRUE(StartPlane().has_value());
  const RunResult r = RunCtl(Ctl("--json window " + Pid() + " --duration 1s --align 200ms"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("scheduled for"), std::string::npos) << r.output;
  ASSERT_TRUE(target_.WaitForOpens(1));
  std::lock_guard lock(target_.mu);
  EXPECT_EQ(target_.opened[0].at_unix_ms % 200, 0);
}

TEST_F(CupmonctlTest, RefusalByMonitorExits1) {
  target_.open_error = "a window is already open";
  ASSERT_TRUE(StartPlane().has_value());
  const RunResult r = RunCtl(Ctl("window " + Pid() + " --duration 1s"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("a window is already open"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace cupmon::control

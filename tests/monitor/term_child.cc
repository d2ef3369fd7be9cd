// Helper for MonitorFaultsTest's SIGTERM cases: runs the monitor on the fake CUPTI (TEST DOUBLE)
// with records left inside the fake's buffers (only a forced flush hands them over), reports the
// record count on fd argv[2], then waits for a signal.
//   term_child DIR FD [app-handler|sigwait|stop-hangs|flush-hangs]
// With "stop-hangs" the stop that follows the signal blocks for good at the fault point
// "term.stop" (as a hung stop would), so only what cupmon wrote before it reaches the file; with
// "flush-hangs" the control thread blocks for good before CUPTI's forced flush ("term.flush", as
// a flush hung in CUPTI would). Either way the process must still end (CUPMON_EXIT_TIMEOUT_MS).
// With "app-handler" the program installs its own SIGTERM handler first (exit status 42). With
// "sigwait" it takes SIGHUP the way some jobs take their shutdown signal: blocked in its (only)
// thread after cupmon has started, then sigwait() (exit status 43). The fake CUPTI's worker (a
// stand-in for CUPTI's threads, not cupmon's) is made with SIGHUP blocked so that only cupmon's
// threads, started while the main thread still took SIGHUP, could take it from the application.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "cupmon/monitor/monitor.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor_fixture.h"

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  if (argc > 3 && std::string(argv[3]) == "app-handler") {
    struct sigaction sa {};
    sa.sa_handler = [](int) { _exit(42); };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
  }
  const bool use_sigwait = argc > 3 && std::string(argv[3]) == "sigwait";
  sigset_t hup;
  sigemptyset(&hup);
  sigaddset(&hup, SIGHUP);
  if (use_sigwait) pthread_sigmask(SIG_BLOCK, &hup, nullptr);
  cupmon::testing::FakeCupti fake;
  if (use_sigwait) pthread_sigmask(SIG_UNBLOCK, &hup, nullptr);
  cupmon::MonitorOptions o = cupmon::testing::TestDoubleOptions(&fake, argv[1]);
  if (argc > 3 && (std::string(argv[3]) == "stop-hangs" || std::string(argv[3]) == "flush-hangs")) {
    const std::string hang_at = std::string(argv[3]) == "stop-hangs" ? "term.stop" : "term.flush";
    o.fault_injector = [hang_at](std::string_view point) {
      if (point == hang_at)
        for (;;) sleep(1);
    };
  }
  std::vector<std::string> warnings;
  cupmon::ApplyControlEnvironment(&o.config, &warnings);  // CUPMON_TERM_FLUSH
  auto m = cupmon::Monitor::Start(std::move(o));
  if (!m) return 3;
  auto* p = fake.NewProducer();
  const uint32_t name = fake.AddKernelName("term_kernel");
  for (int i = 0; i < 5000; ++i) p->Kernel(name, static_cast<uint64_t>(i) + 1, i + 2u);
  if (use_sigwait) pthread_sigmask(SIG_BLOCK, &hup, nullptr);
  const std::string line = "produced " + std::to_string(fake.produced()) + "\n";
  const int fd = std::atoi(argv[2]);
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 4;
  close(fd);
  if (use_sigwait) {
    // sigwait() would unblock SIGHUP in this thread while it waits, and the kernel prefers the
    // main thread when it takes the signal: wait first until SIGHUP is pending, so that the
    // signal arrives while every thread but cupmon's has it blocked.
    for (int waited_ms = 0; waited_ms < 30000; ++waited_ms) {
      sigset_t pending;
      if (sigpending(&pending) == 0 && sigismember(&pending, SIGHUP)) break;
      usleep(1000);
    }
    int sig = 0;
    if (sigwait(&hup, &sig) == 0 && sig == SIGHUP) {
      (*m)->Stop();  // the job's orderly shutdown
      return 43;
    }
    return 5;
  }
  // Short sleeps, not one pause(): ThreadSanitizer takes a signal in its own handler and runs
  // the program's only when the thread enters an intercepted call, so a SIGTERM that came just
  // before pause() could wait for good (once seen in the TSan suite: no handler ran in 20 s).
  for (;;) usleep(10000);
}

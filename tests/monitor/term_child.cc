// Helper for MonitorFaultsTest's SIGTERM cases: runs the monitor on the fake CUPTI (TEST DOUBLE)
// with records left inside the fake's buffers (only a forced flush hands them over), reports the
// record count on fd argv[2], then waits for a signal.
//   term_child DIR FD [app-handler]
// With "app-handler" the program installs its own SIGTERM handler first (exit status 42).
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

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
  cupmon::testing::FakeCupti fake;
  cupmon::MonitorOptions o = cupmon::testing::TestDoubleOptions(&fake, argv[1]);
  std::vector<std::string> warnings;
  cupmon::ApplyControlEnvironment(&o.config, &warnings);  // CUPMON_TERM_FLUSH
  auto m = cupmon::Monitor::Start(std::move(o));
  if (!m) return 3;
  auto* p = fake.NewProducer();
  const uint32_t name = fake.AddKernelName("term_kernel");
  for (int i = 0; i < 5000; ++i) p->Kernel(name, static_cast<uint64_t>(i) + 1, i + 2u);
  const std::string line = "produced " + std::to_string(fake.produced()) + "\n";
  const int fd = std::atoi(argv[2]);
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 4;
  close(fd);
  for (;;) pause();
}

// Helper for MonitorTest.SigkillMidWriteLosesNothingFlushed: runs the monitor with the fake CUPTI
// (TEST DOUBLE), flushes, reports the record count on fd argv[2], then writes until killed.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cupmon/monitor/monitor.h"
#include "monitor/testing/fake_cupti.h"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  cupmon::testing::FakeCupti fake;
  cupmon::MonitorOptions o;
  o.cupti = &fake;
  o.entry_point = "test-double";
  o.synthetic = true;
  o.config.output_dir = argv[1];
  // Inside the test's directory: a killed process leaves its registry link behind, and the user's
  // own registry (the default) is no place for a test's.
  o.config.control_dir = std::string(argv[1]) + "/control";
  o.config.registry_dir = std::string(argv[1]) + "/registry";
  o.config.buffer_bytes = 64 << 10;
  o.config.file_bytes = 1 << 20;
  o.config.flush_ms = 0;
  o.config.stats_ms = 0;
  o.driver_probe = [] { return cupmon::DriverInfo{}; };
  auto m = cupmon::Monitor::Start(std::move(o));
  if (!m) return 3;
  auto* p = fake.NewProducer();
  const uint32_t name = fake.AddKernelName("sigkill_kernel");
  for (int i = 0; i < 50'000; ++i) p->Kernel(name, static_cast<uint64_t>(i) + 1, i + 2u);
  (*m)->FlushAndWait();
  const std::string line = "flushed " + std::to_string(fake.produced()) + "\n";
  const int fd = std::atoi(argv[2]);
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 4;
  close(fd);
  for (uint64_t i = 0;; ++i) {
    p->Kernel(name, i, i + 1);
    if (i % 5000 == 0) (*m)->FlushAndWait();
  }
}

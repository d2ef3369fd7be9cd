// One rank of a synthetic job for the Prometheus live test: a Monitor on the CUPTI test double with
// its metrics endpoint on 127.0.0.1:0, producing steps until its stdin closes.
//
//   prometheus_rank_child DIR COLLECTIVE_US GAP_US
//
// Prints "port N" on stdout once the endpoint serves. Each step: fwd_gemm 100 us, bwd_gemm 200 us,
// an NCCL all-reduce of COLLECTIVE_US, adam_step 50 us, then GAP_US idle before the next step's
// first kernel (the host launching late). Two ranks with (C, G) and (G, C) have the same step time
// and differ only in where it goes. Steps come in batches, each followed by a flush, every 100 ms.
#include <poll.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cupmon/monitor/monitor.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor_fixture.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s DIR COLLECTIVE_US GAP_US\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const uint64_t collective = std::strtoull(argv[2], nullptr, 10) * 1000;
  const uint64_t gap = std::strtoull(argv[3], nullptr, 10) * 1000;
  cupmon::testing::FakeCupti fake;
  cupmon::MonitorOptions o = cupmon::testing::TestDoubleOptions(&fake, dir);
  o.config.metrics_address = "127.0.0.1:0";
  o.config.step_metrics = true;  // CUPMON_STEP_METRICS=1
  auto m = cupmon::Monitor::Start(std::move(o));
  if (!m) {
    std::fprintf(stderr, "prometheus_rank_child: %s\n", m.error().message.c_str());
    return 1;
  }
  std::printf("port %u\n", static_cast<unsigned>((*m)->metrics_port()));
  std::fflush(stdout);

  const uint32_t fwd = fake.AddKernelName("fwd_gemm");
  const uint32_t bwd = fake.AddKernelName("bwd_gemm");
  const uint32_t nccl = fake.AddKernelName("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  const uint32_t adam = fake.AddKernelName("adam_step");
  cupmon::testing::FakeCupti::Producer* p = fake.NewProducer();
  uint64_t t = 1'000'000'000;
  const auto produce = [&](int steps) {
    for (int s = 0; s < steps; ++s) {
      p->Kernel(fwd, t, t + 100'000);
      p->Kernel(bwd, t + 100'000, t + 300'000);
      p->Kernel(nccl, t + 300'000, t + 300'000 + collective);
      p->Kernel(adam, t + 300'000 + collective, t + 350'000 + collective);
      t += 350'000 + collective + gap;
    }
    (*m)->FlushAndWait();
  };
  produce(1200);  // the step watch learns the pattern from its first 4096 kernels
  pollfd in{STDIN_FILENO, POLLIN, 0};
  for (;;) {
    const int r = ::poll(&in, 1, 100);
    if (r > 0) {
      char c;
      if (::read(STDIN_FILENO, &c, 1) <= 0) break;  // the test closed our stdin
    }
    produce(50);
  }
  (*m)->Stop();
  return 0;
}

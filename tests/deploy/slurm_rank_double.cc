// TEST DOUBLE rank for the live Slurm tests (tests/deploy/test_slurm_live.py): the cupmon monitor
// runs in this process on the fake CUPTI (no GPU, synthetic records) and "trains" until it stops.
//   slurm_rank_double SECONDS [STEP_MS]
// It is meant to run as `srun cupmon-srun-wrapper -- slurm_rank_double ...`: the real wrapper and
// cupmon-run set CUPMON_OUTPUT_DIR and the other CUPMON_* variables, which the monitor reads here
// as libcupmon.so reads them when the CUDA driver injects it. Only CUPTI is replaced: the monitor's
// files, control socket, SIGUSR2 window and SIGTERM final flush are the real ones.
//
// Every STEP_MS (default 20) it launches one synthetic kernel (a cudaLaunchKernel API record and a
// kernel record, both stamped with CLOCK_REALTIME as the fake's clock is) and, every 10th step,
// prints `produced N last_end_ns T`: T is the end of the newest record it produced, so a test can
// check that the recording kept everything up to the last line printed before a signal ended it.
// After SECONDS (0: until a signal) it stops the monitor and exits 0.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "cupmon/monitor/config.h"
#include "cupmon/monitor/monitor.h"
#include "monitor/testing/fake_cupti.h"

namespace {

uint64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : "unset";
}

bool ParseNumber(const char* text, long min, long max, long* out) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < min || v > max) return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  long seconds = 0, step_ms = 20;
  if (argc < 2 || argc > 3 || !ParseNumber(argv[1], 0, 86400, &seconds) ||
      (argc == 3 && !ParseNumber(argv[2], 1, 10000, &step_ms))) {
    std::fprintf(stderr,
                 "usage: slurm_rank_double SECONDS [STEP_MS]  (SECONDS 0..86400, 0: until a "
                 "signal; STEP_MS 1..10000, default 20)\n");
    return 2;
  }
  cupmon::MonitorConfig config;
  std::vector<std::string> warnings;
  cupmon::ApplyEnvironment(&config, &warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "slurm_rank_double: %s\n", w.c_str());

  cupmon::testing::FakeCupti fake;
  cupmon::MonitorOptions o;
  o.config = std::move(config);
  o.cupti = &fake;
  o.entry_point = "test-double";
  o.synthetic = true;  // the recording's header says so, and every report of cupmon-decode too
  o.driver_probe = [] {
    cupmon::DriverInfo info;  // synthetic: the test double has no devices
    info.driver_version = 13000;
    return info;
  };
  auto monitor = cupmon::Monitor::Start(std::move(o));
  if (!monitor) {
    std::fprintf(stderr, "slurm_rank_double: the monitor did not start: %s\n",
                 monitor.error().message.c_str());
    return 3;
  }
  std::printf(
      "slurm_rank_double: TEST DOUBLE: the CUPTI test double stands in for CUDA (no GPU, "
      "synthetic records): job %s rank %s pid %d host %s, recording into %s\n",
      Env("SLURM_JOB_ID"), Env("SLURM_PROCID"), static_cast<int>(getpid()), Env("SLURMD_NODENAME"),
      (*monitor)->config().output_dir.c_str());
  std::fflush(stdout);

  auto* producer = fake.NewProducer();
  const uint32_t name = fake.AddKernelName("slurm_rank_double_step");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  uint32_t correlation = 0;
  uint64_t produced = 0;
  uint64_t last_end = 0;  // of the newest record produced (a launch the fake refused is not one)
  while (seconds == 0 || std::chrono::steady_clock::now() < deadline) {
    const uint64_t start = RealtimeNs();
    const uint64_t end = start + 50'000;  // a 50 us "kernel"
    if (producer->Launch(name, ++correlation, start, end)) {
      ++produced;
      last_end = end;
    }
    if (correlation % 10 == 0) {
      std::printf("produced %llu last_end_ns %llu\n", static_cast<unsigned long long>(produced),
                  static_cast<unsigned long long>(last_end));
      std::fflush(stdout);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
  }
  (*monitor)->Stop();
  std::printf("slurm_rank_double: done after %ld s, %llu kernels\n", seconds,
              static_cast<unsigned long long>(produced));
  return 0;
}

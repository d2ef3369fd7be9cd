// The job's step time under a storm of trigger signals (SIGUSR2 at 1000/s) against the same job
// without one, in one process: a monitor on the CUPTI test double (synthetic records, no GPU; the
// figures say what a signal flood costs the host's CPU side, not a GPU job), one job thread doing
// steps of 300 launches and about 2 ms of arithmetic. Three phases of PHASE_S seconds, alternated
// CYCLES times (the first cycle left out): quiet (no window), window (one window held open by the
// API: what a storm costs through the window it keeps open, since its windows follow each other)
// and storm (1000 signals/s, 200 ms windows). Prints the median and the 10th/90th percentiles of
// the step time per phase, the spread of each phase's medians across cycles (the noise), and the
// ratios of the medians.
// Run: build/tests/bench/cupmon_signal_storm_bench [CYCLES=6] [PHASE_S=2]
#include <signal.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cupmon/monitor/monitor.h"
#include "monitor/testing/fake_cupti.h"

namespace {

using Clock = std::chrono::steady_clock;

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

// About 2 ms of arithmetic on this machine's cores; the result keeps it from being optimised out.
double Work(int n) {
  double x = 1.0;
  for (int i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  const int cycles = argc > 1 ? std::atoi(argv[1]) : 6;
  const double phase_s = argc > 2 ? std::atof(argv[2]) : 2.0;
  const std::string dir = std::filesystem::temp_directory_path().string() + "/cupmon-storm-bench-" +
                          std::to_string(getpid());
  std::filesystem::remove_all(dir);

  cupmon::testing::FakeCupti fake;
  cupmon::MonitorOptions o;
  o.cupti = &fake;
  o.entry_point = "test-double";
  o.synthetic = true;
  o.config.output_dir = dir;
  o.config.control_dir = dir + "/control";
  o.config.registry_dir = dir + "/registry";
  o.config.window_ms = 200;
  o.config.signal_number = SIGUSR2;
  o.driver_probe = [] { return cupmon::DriverInfo{13000, 0, {}}; };
  auto started = cupmon::Monitor::Start(o);
  if (!started) {
    std::fprintf(stderr, "monitor: %s\n", started.error().message.c_str());
    return 1;
  }
  cupmon::Monitor& m = **started;

  std::atomic<bool> storm{false}, run{true};
  std::atomic<uint64_t> sent{0};
  std::thread sender([&] {
    auto next = Clock::now();
    while (run.load()) {
      next += std::chrono::milliseconds(1);
      std::this_thread::sleep_until(next);
      if (storm.load()) {
        ::kill(::getpid(), SIGUSR2);
        sent.fetch_add(1);
      }
    }
  });

  // Calibrate the arithmetic to about 2 ms.
  int work = 1'000'000;
  {
    const auto t = Clock::now();
    volatile double sink = Work(work);
    (void)sink;
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t).count();
    work = static_cast<int>(work * 2.0 / std::max(ms, 0.01));
  }

  cupmon::testing::FakeCupti::Producer* p = fake.NewProducer();
  const uint32_t name = fake.AddKernelName("bench_step");
  uint32_t correlation = 0;
  constexpr int kPhases = 3;
  const char* const kNames[kPhases] = {"quiet", "window", "storm"};
  std::vector<double> all[kPhases];
  std::vector<double> medians[kPhases];
  double cpu_s[kPhases] = {}, wall_s[kPhases] = {};
  uint64_t signals_in_phase = 0;
  volatile double sink = 0;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    for (int phase = 0; phase < kPhases; ++phase) {
      storm = phase == 2;
      if (phase == 1)
        (void)m.RequestWindow(static_cast<uint32_t>(phase_s * 1000) + 1000, {},
                              cupmon::pb::TRIGGER_API);
      std::vector<double> steps;
      const double cpu0 = ProcessCpuSeconds();
      const uint64_t sent0 = sent.load();
      const auto start = Clock::now();
      const auto end = start + std::chrono::duration<double>(phase_s);
      while (Clock::now() < end) {
        const auto t = Clock::now();
        for (int i = 0; i < 300; ++i) {
          uint64_t ts = 0;
          fake.GetTimestamp(&ts);
          p->Launch(name, ++correlation, ts, ts + 1000);
        }
        sink = sink + Work(work);
        steps.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
      }
      const double cpu = ProcessCpuSeconds() - cpu0;
      const double wall = std::chrono::duration<double>(Clock::now() - start).count();
      if (cycle > 0) {
        cpu_s[phase] += cpu;
        wall_s[phase] += wall;
        if (phase == 2) signals_in_phase += sent.load() - sent0;
      }
      if (phase == 1) (void)m.RequestCloseWindow();
      if (phase == 2) {  // the last window of the storm closes before the next quiet phase
        storm = false;
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
      }
      if (cycle == 0) continue;  // warm-up
      all[phase].insert(all[phase].end(), steps.begin(), steps.end());
      medians[phase].push_back(Percentile(steps, 0.5));
    }
  }
  storm = false;
  run = false;
  sender.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const cupmon::MonitorStats s = m.GetStats();
  m.Stop();
  std::filesystem::remove_all(dir);

  std::printf("signal storm bench: %d cycles of %.1f s quiet, window and storm phases (first left "
              "out); %llu signals sent, %llu received, %llu windows opened, %llu refused\n",
              cycles, phase_s, static_cast<unsigned long long>(sent.load()),
              static_cast<unsigned long long>(s.trigger_signals),
              static_cast<unsigned long long>(s.windows_opened),
              static_cast<unsigned long long>(s.windows_refused));
  std::printf("%-7s %7s %8s %8s %8s %8s %20s\n", "phase", "steps", "p10 ms", "median", "p90 ms",
              "CPU/s", "cycle medians (ms)");
  double median[kPhases];
  for (int k = 0; k < kPhases; ++k) {
    median[k] = Percentile(all[k], 0.5);
    const auto [lo, hi] = std::minmax_element(medians[k].begin(), medians[k].end());
    std::printf("%-7s %7zu %8.3f %8.3f %8.3f %8.3f %9.3f .. %.3f\n", kNames[k], all[k].size(),
                Percentile(all[k], 0.1), median[k], Percentile(all[k], 0.9),
                cpu_s[k] / wall_s[k], *lo, *hi);
  }
  // Process CPU (all threads: job, sender, cupmon's) per signal, over what the window phase used.
  const double extra_cpu_s = cpu_s[2] - cpu_s[1] * (wall_s[2] / wall_s[1]);
  std::printf("process CPU per signal over the window phase: %.1f us (%llu signals)\n",
              1e6 * extra_cpu_s / static_cast<double>(signals_in_phase),
              static_cast<unsigned long long>(signals_in_phase));
  std::printf("median ratios: window/quiet %.4f, storm/window %.4f, storm/quiet %.4f\n",
              median[1] / median[0], median[2] / median[1], median[2] / median[0]);
  return 0;
}

// Shared by the monitor's CPU tests: a fresh per-process test directory, and MonitorOptions that run
// a Monitor on the CUPTI test double with no timers and a private control/registry directory.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/monitor.h"

namespace cupmon::testing {

// ${TMPDIR:-/tmp}/<prefix>-<pid>-<name>, emptied: per pid, so ctest -j runs do not collide.
inline std::string FreshTestDir(const std::string& prefix, const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-" +
                     std::to_string(getpid()) + "-" + name;
  std::filesystem::remove_all(base);
  return base;
}

// The test double's monitor: synthetic header, no devices, no flush or stats timer (tests flush
// explicitly), control socket and registry link inside `dir`.
inline MonitorOptions TestDoubleOptions(CuptiApi* cupti, const std::string& dir) {
  MonitorOptions o;
  o.cupti = cupti;
  o.entry_point = "test-double";
  o.synthetic = true;
  o.config.output_dir = dir;
  o.config.flush_ms = 0;
  o.config.stats_ms = 0;
  o.config.control_dir = dir + "/control";
  o.config.registry_dir = dir + "/registry";
  o.driver_probe = [] {
    DriverInfo info;  // synthetic: the test double has no devices
    info.driver_version = 13000;
    return info;
  };
  return o;
}

// Waits for an asynchronous event of the monitor's threads (signal, timer) with a generous bound.
template <typename Pred>
bool WaitFor(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace cupmon::testing

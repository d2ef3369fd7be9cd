// Shared by the monitor's CPU tests and their helper programs: MonitorOptions that run a Monitor
// on the CUPTI test double with no timers and a private control/registry directory, and WaitFor.
// The tests' directories are in test_dir.h.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/monitor.h"

namespace cupmon::testing {

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

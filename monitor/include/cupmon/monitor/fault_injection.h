// Fault injection points: named places in the monitor's threads where a test can throw
// (std::bad_alloc, std::system_error) to check that the host process survives.
#pragma once

#include <functional>
#include <string_view>

namespace cupmon {

// Null in production (one test of a null std::function per point). Tests set it through
// MonitorOptions::fault_injector. Points: "start.writer_thread", "start.control_thread",
// "writer.item", "writer.open", "intern", "control.tick", "term.stop" (the stop after SIGTERM or
// SIGINT, on its own thread: a test may also block there, as a hung stop would).
using FaultInjector = std::function<void(std::string_view point)>;

inline void MaybeFault(const FaultInjector& faults, std::string_view point) {
  if (faults) faults(point);
}

}  // namespace cupmon

// RepeatingTimer: runs a tick every period on the control thread, each inside its own exception
// boundary, until the loop stops.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include <boost/asio/io_context.hpp>

#include "cupmon/monitor/monitor_clock.h"

namespace cupmon {

// A tick's exception is counted in `faults` and the timer re-armed: a fault never stops the
// schedule. Once `stopping` is true a firing runs nothing and re-arms nothing.
//
// Threading: Start() on the control thread (or before its io_context runs); the tick runs there.
class RepeatingTimer {
 public:
  RepeatingTimer(boost::asio::io_context& io, MonitorClock& clock,
                 const std::atomic<bool>& stopping, std::atomic<uint64_t>& faults)
      : timer_(io, clock), stopping_(stopping), faults_(faults) {}
  RepeatingTimer(const RepeatingTimer&) = delete;
  RepeatingTimer& operator=(const RepeatingTimer&) = delete;

  // Runs `tick` every `period_ms` from now; 0: never.
  void Start(uint32_t period_ms, std::function<void()> tick);

 private:
  void Arm();

  ClockTimer timer_;
  const std::atomic<bool>& stopping_;
  std::atomic<uint64_t>& faults_;
  uint32_t period_ms_ = 0;
  std::function<void()> tick_;
};

}  // namespace cupmon

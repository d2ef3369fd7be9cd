// RepeatingTimer: a ClockTimer re-armed after each tick (repeating_timer.h).
#include "repeating_timer.h"

#include <chrono>
#include <utility>

namespace cupmon {

void RepeatingTimer::Start(uint32_t period_ms, std::function<void()> tick) {
  if (period_ms == 0) return;
  period_ms_ = period_ms;
  tick_ = std::move(tick);
  Arm();
}

void RepeatingTimer::Arm() {
  timer_.ExpiresAfterWait(std::chrono::milliseconds(period_ms_),
                          [this](const boost::system::error_code& ec) noexcept {
                            if (ec || stopping_.load()) return;
                            try {
                              tick_();
                            } catch (...) {
                              faults_.fetch_add(1, std::memory_order_relaxed);
                            }
                            try {
                              Arm();
                            } catch (...) {
                              faults_.fetch_add(1, std::memory_order_relaxed);
                            }
                          });
}

}  // namespace cupmon

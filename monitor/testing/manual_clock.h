// TEST DOUBLE: a virtual clock for the monitor (MonitorClock) that moves only when a test advances
// it, and fires the monitor's timers on its virtual deadlines.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>

#include "cupmon/base/thread_annotations.h"
#include "cupmon/monitor/monitor_clock.h"

namespace cupmon::testing {

// Steady time starts at `steady_start_ns`, wall time at `realtime_start_ns`; both move together,
// by Advance only.
//
// Advance(step) moves the clock to now + step, then runs every timer whose deadline was reached
// (once each, as a thread that was busy for the whole step sees them) on its io_context and waits
// until those handlers returned; timers they arm for a time already reached run too, before it
// returns. So a test that advances in steps of S sees each periodic timer of period P >= S fire
// once per P of virtual time, at most S late, and everything a timer handler queued (a flush, a
// marker) is queued when Advance returns.
//
// Threading: any thread; Advance from one thread at a time, never from a timer's io_context.
class ManualClock final : public MonitorClock, private TimerService {
 public:
  explicit ManualClock(int64_t realtime_start_ns, int64_t steady_start_ns = 1'000'000'000'000);

  int64_t SteadyNs() override;
  int64_t RealtimeNs() override;
  TimerService* timers() override { return this; }

  // False when a handler did not return within `wait` of real time (its io_context stopped or
  // is stuck): the clock has moved anyway.
  bool Advance(std::chrono::nanoseconds step,
               std::chrono::milliseconds wait = std::chrono::milliseconds(20000));
  // Timers armed now (for tests of the clock itself).
  size_t armed() const;
  uint64_t fired() const;

 private:
  void Schedule(ClockTimer* timer, int64_t deadline_ns, uint64_t generation) override;
  void Unschedule(ClockTimer* timer) override;

  mutable Mutex mu_;
  std::condition_variable done_cv_;
  int64_t steady_ns_ CUPMON_GUARDED_BY(mu_);
  const int64_t wall_minus_steady_;
  struct Armed {
    int64_t deadline_ns;
    uint64_t generation;
  };
  std::map<ClockTimer*, Armed> armed_ CUPMON_GUARDED_BY(mu_);
  uint64_t fired_ CUPMON_GUARDED_BY(mu_) = 0;
  uint64_t handlers_running_ CUPMON_GUARDED_BY(mu_) = 0;
};

}  // namespace cupmon::testing

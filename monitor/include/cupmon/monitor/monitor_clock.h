// The monitor's clocks and its control-thread timers, injected: the process's clocks in production,
// a virtual clock in tests that drive days of the monitor's schedule in seconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

namespace cupmon {

class ClockTimer;

// Fires the timers of a virtual clock (ManualClock, monitor/testing/manual_clock.h). Threading:
// any thread; the clock serialises its own state.
class TimerService {
 public:
  virtual ~TimerService() = default;
  // Registers `timer` (generation `generation`) for `deadline_ns` on the clock's steady time,
  // replacing an earlier registration of the same timer. When the clock reaches the deadline it
  // calls timer->FireOnIoThread(generation), which runs on the timer's io_context.
  virtual void Schedule(ClockTimer* timer, int64_t deadline_ns, uint64_t generation) = 0;
  virtual void Unschedule(ClockTimer* timer) = 0;
};

// What the monitor reads time from: its timers' schedule (flush, stats and calibration, the
// trace window's duration, the takeover watch's reclaim, the automatic trigger's poll and gap, the
// rate limits) and the wall-clock stamps of its markers, stats and calibration samples. The CUPTI
// clock is CuptiApi::GetTimestamp (the test double reads it from the same clock). Records' own
// timestamps come from CUPTI, so the buffer-request path never reads this clock. The writer's
// I/O pacing (fdatasync at most every 10 s, the file listing at most once a second) stays on the
// process's clock: it bounds the disk's work per real second, whatever the schedule's clock.
//
// Threading: any thread.
class MonitorClock {
 public:
  virtual ~MonitorClock() = default;
  virtual int64_t SteadyNs() = 0;    // CLOCK_MONOTONIC's time line
  virtual int64_t RealtimeNs() = 0;  // CLOCK_REALTIME's
  // Null (the real clock): timers are asio steady_timers. Else the clock fires them itself.
  virtual TimerService* timers() { return nullptr; }
};

// The process's clocks (clock_gettime). Never destroyed; any thread.
MonitorClock& RealClock();

// A one-shot timer on a MonitorClock for an io_context, with steady_timer's contract: one wait at a
// time; a new wait or Cancel() completes the pending one with operation_aborted; the handler runs
// on the io_context. On the real clock it is a steady_timer and nothing more.
//
// Threading: ExpiresAfterWait and Cancel on the io_context's thread (or before it runs); the
// virtual clock's Advance calls FireOnIoThread through a post to that io_context.
class ClockTimer {
 public:
  using Handler = std::function<void(const boost::system::error_code&)>;

  ClockTimer(boost::asio::io_context& io, MonitorClock& clock);
  ~ClockTimer();
  ClockTimer(const ClockTimer&) = delete;
  ClockTimer& operator=(const ClockTimer&) = delete;

  void ExpiresAfterWait(std::chrono::nanoseconds after, Handler handler);
  void Cancel();
  MonitorClock& clock() const { return clock_; }
  boost::asio::io_context& io() const { return io_; }

  // The virtual clock, on the io_context's thread: runs the handler of wait `generation` when it
  // is still the pending one.
  void FireOnIoThread(uint64_t generation);

 private:
  boost::asio::io_context& io_;
  MonitorClock& clock_;
  TimerService* const service_;
  boost::asio::steady_timer real_;
  // Virtual clock only (io_context's thread).
  uint64_t generation_ = 0;
  Handler pending_;
};

}  // namespace cupmon

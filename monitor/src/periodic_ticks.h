// PeriodicTicks: the control thread's schedule: the flush tick (clock-domain check, a flush on the
// periodic flush thread, import rebinding), the stats tick (stats and calibration chunks), and
// what follows each flush (behind accounting, the takeover watch, a requested stats chunk).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>

#include "auto_window_trigger.h"
#include "behind_watch.h"
#include "clock_domain_watch.h"
#include "cupmon.pb.h"
#include "cupmon/base/thread_checker.h"
#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/fault_injection.h"
#include "cupmon/monitor/monitor_clock.h"
#include "import_rebind.h"
#include "monitor_counters.h"
#include "periodic_flush.h"
#include "repeating_timer.h"
#include "session_facts.h"
#include "takeover_watch.h"
#include "writer_queue.h"

namespace cupmon {

// The periodic and requested flushes run on PeriodicFlush's thread, so that a CUPTI behind its
// records, whose flush blocks for seconds, does not stall the control thread; their results come
// back to the control thread (AfterFlush).
//
// Threading: Start(), RequestFlush() and the ticks on the control thread (checked);
// RebindAllImports() and StartFlushThread() on the starting thread before the control thread
// runs; StopFlushThread() and flush_running_*() on any thread.
class PeriodicTicks {
 public:
  struct Parts {
    const SessionFacts& facts;
    CuptiApi& cupti;
    MonitorClock& clock;
    WriterQueue& queue;
    MonitorCounters& counters;
    // Adds every part's counters to a stats message (session; any thread).
    std::function<void(pb::Stats*)> fill_stats;
    FaultInjector faults;
    ImportRebinder* rebinder;  // null: no import rebinding
    ClockDomainWatch& clock_domain;
    BehindWatch& behind;
    TakeoverWatch& takeover;
    AutoWindowTrigger& auto_window;
  };
  // `control_thread`: the control thread's check (ControlLoop's).
  PeriodicTicks(Parts parts, boost::asio::io_context& io, const std::atomic<bool>& stopping,
                const ThreadChecker& control_thread);
  PeriodicTicks(const PeriodicTicks&) = delete;
  PeriodicTicks& operator=(const PeriodicTicks&) = delete;

  // Starting thread: points every loaded object's CUPTI imports at the multiplexer (injection
  // without the preload; import_rebind.h).
  void RebindAllImports();
  // Starting thread: creates and starts the periodic flush thread. Throws std::system_error when
  // it cannot be created.
  void StartFlushThread();
  // Control thread: arms the flush (CUPMON_FLUSH_MS) and stats (CUPMON_STATS_MS) timers.
  void Start();
  // Control thread (cupmonctl flush): a non-forced flush on the flush thread, then a stats chunk.
  // A flush already inside CUPTI serves the request: what it hands over is what a new one would.
  void RequestFlush();

  // Any thread, at stop: waits until `deadline` for the periodic flush thread. False when a flush
  // is still inside CUPTI (the thread ends when it returns).
  bool StopFlushThread(std::chrono::steady_clock::time_point deadline);
  // Any thread: the CUPTI time at which the periodic flush still running began (1 when CUPTI
  // gave no time), and how long ago (steady ns); 0 when none runs.
  uint64_t flush_running_since_cupti_ns() const;
  int64_t flush_running_for_ns() const;

 private:
  void OnFlushTick();
  void OnStatsTick();
  // Control thread, after each periodic or requested flush returned.
  void AfterFlush(PeriodicFlush::Done done);
  void RebindNewImports();

  Parts parts_;
  boost::asio::io_context& io_;
  const std::atomic<bool>& stopping_;
  RepeatingTimer flush_timer_;
  RepeatingTimer stats_timer_;
  std::unique_ptr<PeriodicFlush> flusher_;  // created by StartFlushThread()

  const ThreadChecker& thread_;  // the control thread (ControlLoop binds it)
  // A cupmonctl flush asked for a stats chunk after the flush it requested.
  std::atomic<bool> stats_after_flush_{false};
};

}  // namespace cupmon

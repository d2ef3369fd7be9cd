// ControlLoop: the control thread of a monitor: one Boost.Asio io_context, and the parts that
// live on it, each owning one concern: the trace window (TraceWindow), the schedule of flushes
// and stats (PeriodicTicks) with what follows a flush (BehindWatch, TakeoverWatch,
// ClockDomainWatch), the windows that open themselves (AutoWindowTrigger), the control plane's
// requests (ControlRequests), the metrics (MonitorMetrics) and the listeners (ControlEndpoints).
// This class starts and stops the thread and wires the parts together.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "auto_window.h"
#include "auto_window_trigger.h"
#include "behind_watch.h"
#include "clock_domain_watch.h"
#include "control_endpoints.h"
#include "control_requests.h"
#include "cupmon.pb.h"
#include "cupmon/base/thread_checker.h"
#include "cupmon/control/control_plane.h"
#include "cupmon/monitor/buffer_pool.h"
#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/fault_injection.h"
#include "cupmon/monitor/monitor_clock.h"
#include "cupmon/monitor/trace_window.h"
#include "import_rebind.h"
#include "monitor_counters.h"
#include "monitor_metrics.h"
#include "periodic_ticks.h"
#include "recording_pipeline.h"
#include "session_facts.h"
#include "takeover_watch.h"
#include "writer_queue.h"

namespace cupmon {

// Threading: the parts run on the control thread; other threads reach it through RunAndWait()
// (or the io_context's post). Its handlers read the writer's state only through
// RecordingPipeline::Snapshot() and never list directories or wait for I/O, so the window's
// duration timer is never held up. The periodic and requested flushes run on a thread of their
// own (periodic_flush.h); only a window's close flushes here (its END marker must follow its
// records). CUPTI is called (flush, enable, dropped records) holding no lock of the monitor.
//
// Exception boundary: the thread body restarts io_context::run() after an exception escapes a
// handler (counted as a control fault); the timers' handlers catch their own and re-arm.
class ControlLoop final {
 public:
  struct Parts {
    const SessionFacts& facts;
    CuptiApi& cupti;
    BufferPool& pool;
    WriterQueue& queue;
    RecordingPipeline& pipeline;
    MonitorCounters& counters;
    // Adds every part's counters to a stats message (session; any thread).
    std::function<void(pb::Stats*)> fill_stats;
    FaultInjector faults;
    // SIGTERM/SIGINT caught (termination_signals.h), on the control thread; must not block it.
    // Null: those signals are left alone.
    std::function<void(int)> on_termination_signal;
    // Slow steps from the writer (StepWatch); null: no automatic windows. Not owned.
    AutoWindowMailbox* auto_window = nullptr;
    // Injection without the preload: CUPTI imports of objects loaded later are rebound on the
    // flush timer. Null: none. Not owned.
    ImportRebinder* rebinder = nullptr;
    // The timers' schedule and the stamps of markers, stats and samples (monitor_clock.h).
    MonitorClock* clock = &RealClock();
  };

  explicit ControlLoop(Parts parts);
  ~ControlLoop();
  ControlLoop(const ControlLoop&) = delete;
  ControlLoop& operator=(const ControlLoop&) = delete;

  // Starting thread: creates the parts, starts the periodic flush thread and the control thread,
  // which then arms the timers and starts the listeners. Throws std::system_error when a thread
  // cannot be created (the session catches it).
  void Start();
  // Any thread but the control thread: closes an open window (note "stop"), the socket, the
  // signal trigger and the endpoint, then stops the io_context and waits up to `timeout` for the
  // thread. False when it did not end in time (it is left running; the caller must not free the
  // loop then).
  bool Stop(std::chrono::milliseconds timeout);
  bool joined() const { return !thread_.joinable(); }
  void Join();  // waits without a deadline (tests, destruction)

  // Runs `task` on the control thread and waits for it (at once when called on that thread);
  // false when the control thread is gone. Never from CUPTI's callbacks.
  bool RunAndWait(std::function<void()> task);

  // Any thread (the C API): a window opened or closed on the control thread.
  Expected<uint32_t> RequestWindow(uint32_t duration_ms, std::vector<uint32_t> kinds,
                                   pb::TriggerSource source);
  Expected<void> RequestCloseWindow();
  // Any thread, right after a cuptiActivityFlushAll returned (AutoWindowTrigger::MarkFlushed).
  void MarkFlushed();

  // The control plane's target (its calls on the control thread). After Start().
  control::ControlTarget& control_target() { return *requests_; }

  // Any thread.
  std::string control_socket_path() const;
  uint16_t metrics_port() const { return endpoints_ ? endpoints_->metrics_port() : 0; }
  uint64_t windows_opened() const { return window_ ? window_->windows_opened() : 0; }
  uint64_t windows_refused() const { return window_ ? window_->windows_refused() : 0; }
  uint64_t trigger_signals() const { return requests_ ? requests_->trigger_signals() : 0; }
  bool window_open() const { return window_ && window_->is_open(); }
  uint64_t auto_windows_opened() const { return auto_ ? auto_->opened() : 0; }
  // Any thread: the periodic flush still running (PeriodicTicks).
  uint64_t flush_running_since_cupti_ns() const;
  int64_t flush_running_for_ns() const;
  // Any thread, at stop after Stop(): waits until `deadline` for the periodic flush thread.
  // False when a flush is still inside CUPTI (the thread ends when it returns).
  bool StopFlushThread(std::chrono::steady_clock::time_point deadline);

  // At stop, after the thread joined: the takeover watch (a gap open at stop; the CUPTI time of
  // its last tick that saw cupmon's callbacks run, 0: none yet) and the "behind" intervals. Null
  // before Start().
  TakeoverWatch* takeover() { return takeover_.get(); }
  BehindWatch* behind() { return behind_.get(); }

 private:
  void Run() noexcept;
  // Control thread, at stop: the window closes with note "stop", then the listeners.
  void Shutdown() noexcept;
  // The window's non-forced flush (on the control thread).
  void FlushForWindow();

  Parts parts_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  MonitorClock& clock_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  // The control thread's check, bound by Run() before the io_context serves anything; the parts
  // below check against it.
  ThreadChecker control_thread_;

  // Created in Start() before the thread runs; used on the control thread (each part checks).
  std::unique_ptr<TraceWindow> window_;
  std::unique_ptr<TakeoverWatch> takeover_;
  std::unique_ptr<BehindWatch> behind_;
  std::unique_ptr<ClockDomainWatch> clock_domain_;
  std::unique_ptr<AutoWindowTrigger> auto_;
  std::unique_ptr<PeriodicTicks> ticks_;
  std::unique_ptr<MonitorMetrics> metrics_;
  std::unique_ptr<ControlRequests> requests_;
  std::unique_ptr<ControlEndpoints> endpoints_;
};

}  // namespace cupmon

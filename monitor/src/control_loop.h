// ControlLoop: the control thread's part of a monitor: one Boost.Asio io_context that owns the
// flush and stats timers, clock calibration, the takeover watch, the trace window, the control
// plane (socket, signal trigger) and the metrics endpoint.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "auto_window.h"
#include "callback_watch.h"
#include "import_rebind.h"
#include "cupmon.pb.h"
#include "cupmon/control/control_plane.h"
#include "cupmon/metrics/metrics_server.h"
#include "cupmon/monitor/buffer_pool.h"
#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/fault_injection.h"
#include "cupmon/monitor/monitor_clock.h"
#include "cupmon/monitor/trace_window.h"
#include "monitor_counters.h"
#include "recording_pipeline.h"
#include "session_facts.h"
#include "termination_signals.h"
#include "writer_queue.h"

namespace cupmon {

// Threading: everything runs on the control thread; other threads reach it through Post() or
// RunAndWait(). Its handlers read the writer's state only through RecordingPipeline::Snapshot()
// and never list directories or wait for I/O, so the window's duration timer is never held up.
// Flush and rotate requests are rate-limited for the same reason. CUPTI is called (flush, enable,
// dropped records) holding no lock of the monitor.
//
// Exception boundary: the thread body restarts io_context::run() after an exception escapes a
// handler (counted as a control fault); the timers' handlers catch their own and re-arm.
class ControlLoop final : public control::ControlTarget, public metrics::MetricsSource {
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
  // How often the control thread looks for a slow step while the trigger is on: every
  // kAutoPollMs, or every flush period (CUPMON_FLUSH_MS) when that is shorter, since a slow step
  // reaches the writer only with the flush that delivers the next step's first kernel; never more
  // often than every kMinAutoPollMs.
  static constexpr uint32_t kAutoPollMs = 100;
  static constexpr uint32_t kMinAutoPollMs = 5;
  static uint32_t AutoPollMs(uint32_t flush_ms) {
    if (flush_ms == 0 || flush_ms >= kAutoPollMs) return kAutoPollMs;
    return flush_ms < kMinAutoPollMs ? kMinAutoPollMs : flush_ms;
  }
  static constexpr auto kMinFlushInterval = std::chrono::milliseconds(100);
  static constexpr auto kMinRotateInterval = std::chrono::seconds(1);

  explicit ControlLoop(Parts parts);
  ~ControlLoop() override;
  ControlLoop(const ControlLoop&) = delete;
  ControlLoop& operator=(const ControlLoop&) = delete;

  // Starting thread: creates the trace window, arms the timers and starts the thread, which then
  // starts the control plane and the metrics endpoint. Throws std::system_error when the thread
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

  Expected<uint32_t> RequestWindow(uint32_t duration_ms, std::vector<uint32_t> kinds,
                                   pb::TriggerSource source);
  Expected<void> RequestCloseWindow();
  // Control thread (the control plane's --when-slower request): arms the one-shot trigger, which
  // opens one window of the configured kinds and duration at the first step slower than `factor`
  // times the median, then disarms. Not subject to CUPMON_AUTO_WINDOW_MIN_GAP; never while a
  // window is open. Errors: factor not above 1 or above 1000, no control of steps (layout).
  Expected<void> ArmWhenSlower(double factor);
  // Any thread, right after a cuptiActivityFlushAll returned: tells the writer's step watch that
  // the buffers queued so far are all those filled until then (auto_window.h).
  void MarkFlushed();
  uint64_t auto_windows_opened() const { return auto_opened_.load(std::memory_order_relaxed); }

  std::string control_socket_path() const;
  uint16_t metrics_port() const { return metrics_port_.load(); }
  uint64_t windows_opened() const { return window_ ? window_->windows_opened() : 0; }
  uint64_t windows_refused() const { return window_ ? window_->windows_refused() : 0; }
  // Trigger signals the control plane received (each opened a window or was refused).
  uint64_t trigger_signals() const { return trigger_signals_.load(std::memory_order_relaxed); }
  bool window_open() const { return window_ && window_->is_open(); }
  // Called once at stop, after the thread joined: the takeover gap still open, if any.
  void EndOpenGap();
  // After the thread joined: whether the takeover watch saw a gap open at stop, and the CUPTI
  // time of its last tick that saw cupmon's callbacks run (0: none yet).
  bool gap_open() const { return watch_ && watch_->in_gap(); }
  // A GAP_BEGIN or GAP_END marker of takeover gap `gap` at CUPTI time `cupti_ns` (any thread).
  static pb::WindowMarker GapMarker(bool begin, uint32_t gap, uint64_t cupti_ns, std::string note);
  uint64_t last_active_cupti_ns() const { return last_active_cupti_ns_; }
  // CUPTI behind its own records: a periodic cuptiActivityFlushAll(0) that took longer than
  // BehindThresholdNs() (CUPTI's worker thread cannot keep up; it may then lose records without
  // counting them), or records without timestamps since the last flush (its device buffers are
  // full). Marked BEHIND_BEGIN from the start of that flush and BEHIND_END at the first flush
  // that takes under half the threshold with no such record since the last; counted
  // (cupti_behind) and warned about once.
  static pb::WindowMarker BehindMarker(bool begin, uint32_t id, uint64_t cupti_ns, std::string note);
  static int64_t BehindThresholdNs(uint32_t flush_ms);
  // Called once at stop, after the thread joined: the "behind" interval still open, if any.
  void EndBehind();
  // Any thread, at stop when the control thread did not stop in time: the CUPTI time at which
  // the periodic flush still running began, and how long ago (steady ns); 0 when none runs.
  uint64_t flush_running_since_cupti_ns() const {
    return flush_began_cupti_ns_.load(std::memory_order_acquire);
  }
  int64_t flush_running_for_ns() const;

  // control::ControlTarget (control thread).
  pb::StatusReply Status() override;
  Expected<uint32_t> OpenWindow(const control::WindowRequest& request) override;
  Expected<void> CloseWindow() override;
  Expected<void> Flush() override;
  Expected<void> Rotate() override;
  // metrics::MetricsSource (control thread).
  metrics::MetricsSnapshot Snapshot() override;

  // Drop counts since the last poll (cuptiActivityGetNumDroppedRecords resets on read).
  void PollDropped();

 private:
  void Run() noexcept;
  void StartEndpoints();
  void ShutdownEndpoints() noexcept;
  // Arms `timer` to run `tick` every `period_ms` (0: never) on the control thread.
  void SchedulePeriodic(ClockTimer& timer, uint32_t period_ms,
                        void (ControlLoop::*tick)());
  void OnFlushTick();
  void OnStatsTick();
  void OnAutoTick();
  void StartAutoTimer();
  void CheckClockDomain();
  void NoteCalibrationWritten(const pb::CalibrationSample& s);
  void CheckCallbacks();
  void NoteFlushTime(int64_t took_ns, uint64_t began_cupti_ns);
  // Injection without the preload: points other objects' CUPTI imports at the multiplexer (all
  // objects at start, then those loaded since; import_rebind.h).
  void RebindImports(bool only_new);
  void WriteGapMarker(bool begin, uint32_t gap, uint64_t cupti_ns, const std::string& note);
  void Post(std::function<void(RecordingWriter&)> task);

  Parts parts_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  MonitorClock& clock_;
  ClockTimer flush_timer_{io_, clock_};
  ClockTimer stats_timer_{io_, clock_};
  ClockTimer auto_timer_{io_, clock_};
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  // Control thread only (created in Start before the thread runs).
  std::unique_ptr<TraceWindow> window_;
  std::unique_ptr<control::ControlPlane> control_;
  std::unique_ptr<metrics::MetricsServer> metrics_;
  std::unique_ptr<TerminationSignals> term_;
  std::unique_ptr<CallbackWatch> watch_;
  uint64_t last_active_cupti_ns_ = 0;  // CUPTI time of the last tick that saw callbacks run
  std::vector<size_t> fill_;            // per pool slot: bytes CUPTI had written at the last tick
  bool gap_warned_ = false;
  bool behind_ = false;        // a BEHIND_BEGIN written, its END not yet
  uint32_t behind_id_ = 0;
  uint64_t zero_ts_seen_ = 0;  // zero-timestamp records the writer had counted at the last flush
  // The periodic flush in progress (0: none): written on the control thread, read at stop.
  std::atomic<uint64_t> flush_began_cupti_ns_{0};
  std::atomic<int64_t> flush_began_steady_ns_{0};
  // The last two calibration samples written (start, stats timer, CheckClockDomain).
  pb::CalibrationSample cal_last_, cal_prev_;
  int cal_written_ = 0;
  // Steady times (clock_) of the last flush and rotation requests and of the last automatic
  // window.
  std::optional<int64_t> last_flush_ns_, last_rotate_ns_;
  bool auto_timer_running_ = false;
  std::optional<int64_t> last_auto_ns_;
  std::atomic<uint64_t> auto_opened_{0};
  std::optional<TraceWindow::Request> once_request_;  // armed by --when-slower

  // Written on the control thread while Start() waits for it; read by any thread after.
  std::string control_socket_;
  std::atomic<uint16_t> metrics_port_{0};
  std::atomic<uint64_t> trigger_signals_{0};  // written on the control thread
};

}  // namespace cupmon

// A trace window: extra CUPTI activity kinds (API, synchronization, ...) switched on for a while on
// top of the always-on kinds, framed by BEGIN/END WindowMarker chunks in the stream.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "cupmon.pb.h"
#include "cupmon/base/error.h"
#include "cupmon/base/thread_checker.h"
#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/monitor_clock.h"

namespace cupmon {

// Policy (monitor/README.md, docs/CONTROL.md): windows never overlap, and a request while one is
// open is REFUSED with a message naming the open window and its remaining time. Refusing keeps each
// window's markers a faithful record of one request (source, kinds, duration); extending would
// have to merge kinds and sources of different requests.
//
// Edge rule: BEGIN's cupti_ns is read just before the first extra kind is enabled and END's just
// after the last one is disabled, so every API record CUPTI delivers for the window starts inside
// [BEGIN, END]; the decoder keeps rows whose start lies in that range. Always-on kinds are never
// touched: the kernel/memcpy/memset stream runs on without a gap.
//
// Threading: Open(), Close() and Shutdown() run on the control thread (the io_context's), which
// serialises them with the duration timer (checked: thread_); they call CUPTI (enable, disable,
// flush) holding no lock of the monitor. is_open(), id() and windows_opened() may be read from
// any thread.
class TraceWindow {
 public:
  struct Options {
    std::vector<uint32_t> default_kinds;   // a request without kinds gets these
    std::vector<uint32_t> always_on;       // enabled for the whole run: never enabled/disabled here
    std::vector<uint32_t> runtime_filter;  // cbids switched off after RUNTIME is enabled
    std::vector<uint32_t> driver_filter;   // cbids switched off after DRIVER is enabled
  };
  struct Hooks {
    // Queues a marker on the writer thread, in order with the buffers queued before it.
    std::function<void(const pb::WindowMarker&)> write_marker;
    // Non-forced flush (cuptiActivityFlushAll(0)): hands over the window's completed records.
    std::function<void()> flush;
  };
  struct Request {
    uint32_t duration_ms = 0;
    std::vector<uint32_t> kinds;  // empty: Options::default_kinds
    pb::TriggerSource source = pb::TRIGGER_UNKNOWN;
    // CLOCK_REALTIME when the control thread took the request (signal or socket); 0: now.
    int64_t received_realtime_ns = 0;
    // TRIGGER_AUTO: the slow step that asked for the window (WindowMarker's trigger_* fields).
    uint64_t trigger_step = 0, trigger_step_ns = 0, trigger_median_ns = 0;
    double trigger_factor = 0;
    std::string trigger_by;  // empty: the step time; else CUPMON_AUTO_WINDOW_BY's name
  };

  // `clock` times the windows and stamps the markers' realtime_ns; it outlives the window.
  TraceWindow(boost::asio::io_context& io, CuptiApi& cupti, Options options, Hooks hooks,
              MonitorClock& clock = RealClock());
  ~TraceWindow();
  TraceWindow(const TraceWindow&) = delete;
  TraceWindow& operator=(const TraceWindow&) = delete;

  // The longest window (24 h), as the control plane's kMaxWindowMs.
  static constexpr uint32_t kMaxWindowMs = 24u * 60 * 60 * 1000;

  // Enables the window's extra kinds, then the per-cbid filters, writes BEGIN and arms the
  // duration timer. Returns the window id (1, 2, ...). Errors: a window is open (refused), the
  // monitor is stopping, a duration of 0 or above kMaxWindowMs, or CUPTI enabled none of the
  // kinds.
  Expected<uint32_t> Open(const Request& request);
  // Disables the extra kinds, flushes (non-forced) and writes END with `note` ("duration",
  // "closed", "stop"). Error when no window is open.
  Expected<void> Close(const std::string& note);
  // Closes an open window with note "stop" and refuses later opens. Idempotent.
  void Shutdown();

  bool is_open() const { return open_.load(std::memory_order_acquire); }
  uint32_t id() const { return id_.load(std::memory_order_acquire); }  // last opened, 0: none
  uint64_t windows_opened() const { return opened_.load(std::memory_order_relaxed); }
  // Requests refused because a window was open (a flood of trigger signals lands here).
  uint64_t windows_refused() const { return refused_.load(std::memory_order_relaxed); }
  // The control thread, before it serves anything: binds the thread check to it (else the first
  // Open, Close or Shutdown binds it).
  void BindToCurrentThread() { thread_.BindToCurrentThread(); }
  // Control thread only.
  const std::vector<uint32_t>& kinds() const { return kinds_; }
  int64_t remaining_ms() const;
  const Options& options() const { return options_; }

 private:
  void OnTimer(uint32_t id, const boost::system::error_code& ec) noexcept;

  boost::asio::io_context& io_;
  CuptiApi& cupti_;
  const Options options_;
  const Hooks hooks_;
  MonitorClock& clock_;
  ClockTimer timer_;

  // Control thread only.
  ThreadChecker thread_;
  std::vector<uint32_t> kinds_;     // requested kinds of the open window
  std::vector<uint32_t> enabled_;   // the extra kinds this window enabled (disabled at close)
  pb::TriggerSource source_ = pb::TRIGGER_UNKNOWN;
  uint32_t requested_ms_ = 0;
  int64_t ends_at_ns_ = 0;  // clock_'s steady time
  bool shut_down_ = false;

  std::atomic<bool> open_{false};
  std::atomic<uint32_t> id_{0};
  std::atomic<uint64_t> opened_{0};
  std::atomic<uint64_t> refused_{0};
};

// Resolves API names to cbids with cuptiGetCallbackName over every runtime and driver cbid of the
// toolkit's cbid headers. A name matches a callback name exactly or without its "_vNNNN" suffix;
// one name may match several cbids (all are returned). Names that match nothing go to `unknown`.
void ResolveApiFilter(CuptiApi& cupti, const std::vector<std::string>& names,
                      std::vector<uint32_t>* runtime_cbids, std::vector<uint32_t>* driver_cbids,
                      std::vector<std::string>* unknown);

const char* TriggerName(pb::TriggerSource source);

}  // namespace cupmon

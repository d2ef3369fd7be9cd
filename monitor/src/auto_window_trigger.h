// AutoWindowTrigger: the control thread's side of the windows that open themselves
// (CUPMON_AUTO_WINDOW, cupmonctl window --when-slower): polls the writer's slow steps
// (AutoWindowMailbox, auto_window.h) and opens the window; marks the end of each flush for the
// writer's step watch.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include <boost/asio/io_context.hpp>

#include "auto_window.h"
#include "cupmon/base/error.h"
#include "cupmon/base/thread_checker.h"
#include "cupmon/monitor/monitor_clock.h"
#include "cupmon/monitor/trace_window.h"
#include "monitor_counters.h"
#include "repeating_timer.h"
#include "session_facts.h"
#include "writer_queue.h"

namespace cupmon {

// Threading: Start(), ArmWhenSlower() and the poll on the control thread (checked); MarkFlushed()
// and opened() on any thread.
class AutoWindowTrigger {
 public:
  // How often the control thread looks for a slow step while the trigger is on: every kPollMs, or
  // every flush period (CUPMON_FLUSH_MS) when that is shorter, since a slow step reaches the
  // writer only with the flush that delivers the next step's first kernel; never more often than
  // every kMinPollMs.
  static constexpr uint32_t kPollMs = 100;
  static constexpr uint32_t kMinPollMs = 5;
  static uint32_t PollMs(uint32_t flush_ms) {
    if (flush_ms == 0 || flush_ms >= kPollMs) return kPollMs;
    return flush_ms < kMinPollMs ? kMinPollMs : flush_ms;
  }

  // `mailbox` null: the monitor has no step watch (no automatic windows). `window` is the one
  // the trigger opens; `stopping` ends the poll; `control_thread` is the control thread's check
  // (ControlLoop's).
  AutoWindowTrigger(const SessionFacts& facts, AutoWindowMailbox* mailbox, WriterQueue& queue,
                    TraceWindow& window, MonitorCounters& counters, boost::asio::io_context& io,
                    MonitorClock& clock, const std::atomic<bool>& stopping,
                    const ThreadChecker& control_thread)
      : facts_(facts),
        mailbox_(mailbox),
        queue_(queue),
        window_(window),
        counters_(counters),
        clock_(clock),
        timer_(io, clock, stopping, counters.control_faults),
        thread_(control_thread) {}
  AutoWindowTrigger(const AutoWindowTrigger&) = delete;
  AutoWindowTrigger& operator=(const AutoWindowTrigger&) = delete;

  // Control thread: starts the poll (CUPMON_AUTO_WINDOW, or the one-shot trigger armed). Once.
  void Start();
  // Control thread (the control plane's --when-slower request): arms the one-shot trigger, which
  // opens one window of `request`'s kinds and duration at the first step slower than `factor`
  // times the median, then disarms. Not subject to CUPMON_AUTO_WINDOW_MIN_GAP; never while a
  // window is open. Errors: factor not above 1 or above 1000, no control of steps (layout).
  Expected<void> ArmWhenSlower(double factor, const TraceWindow::Request& request);
  // Any thread, right after a cuptiActivityFlushAll returned: tells the writer's step watch that
  // the buffers queued so far are all those filled until then (auto_window.h).
  void MarkFlushed();
  // Any thread: windows this trigger opened.
  uint64_t opened() const { return opened_.load(std::memory_order_relaxed); }

 private:
  void OnPoll();

  const SessionFacts& facts_;
  AutoWindowMailbox* const mailbox_;
  WriterQueue& queue_;
  TraceWindow& window_;
  MonitorCounters& counters_;
  MonitorClock& clock_;
  RepeatingTimer timer_;

  const ThreadChecker& thread_;  // the control thread (ControlLoop binds it)
  bool running_ = false;
  std::optional<int64_t> last_auto_ns_;  // steady time (clock_) of the last automatic window
  std::optional<TraceWindow::Request> once_request_;  // armed by --when-slower
  std::atomic<uint64_t> opened_{0};
};

}  // namespace cupmon

// ControlRequests: what the control plane (socket and signal trigger) asks of a monitor: status,
// windows, flush, rotation. Control thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "auto_window_trigger.h"
#include "cupmon.pb.h"
#include "cupmon/base/thread_checker.h"
#include "cupmon/control/control_plane.h"
#include "cupmon/monitor/monitor_clock.h"
#include "cupmon/monitor/trace_window.h"
#include "monitor_counters.h"
#include "monitor_metrics.h"
#include "periodic_ticks.h"
#include "recording_pipeline.h"
#include "session_facts.h"
#include "writer_queue.h"

namespace cupmon {

// Flush and rotate requests are rate-limited (kMinFlushInterval, kMinRotateInterval), so that a
// flood of requests cannot hold up the window's timer or the writer.
//
// Threading: the control::ControlTarget calls on the control thread (checked);
// trigger_signals() on any thread.
class ControlRequests final : public control::ControlTarget {
 public:
  struct Parts {
    const SessionFacts& facts;
    RecordingPipeline& pipeline;
    WriterQueue& queue;
    MonitorCounters& counters;
    MonitorClock& clock;
    // Adds every part's counters to a stats message (the session's; any thread).
    std::function<void(pb::Stats*)> fill_stats;
    TraceWindow& window;
    AutoWindowTrigger& auto_window;
    PeriodicTicks& ticks;
    MonitorMetrics& metrics;
    const std::atomic<bool>& stopping;
    const ThreadChecker& control_thread;  // ControlLoop's
  };
  static constexpr auto kMinFlushInterval = std::chrono::milliseconds(100);
  static constexpr auto kMinRotateInterval = std::chrono::seconds(1);

  explicit ControlRequests(Parts parts)
      : parts_(std::move(parts)), thread_(parts_.control_thread) {}
  ControlRequests(const ControlRequests&) = delete;
  ControlRequests& operator=(const ControlRequests&) = delete;

  pb::StatusReply Status() override;
  Expected<uint32_t> OpenWindow(const control::WindowRequest& request) override;
  Expected<void> CloseWindow() override;
  Expected<void> Flush() override;
  Expected<void> Rotate() override;

  // Trigger signals the control plane received (each opened a window or was refused).
  uint64_t trigger_signals() const { return trigger_signals_.load(std::memory_order_relaxed); }

 private:
  Parts parts_;
  const ThreadChecker& thread_;  // the control thread (ControlLoop binds it)
  // Steady times (clock) of the last flush and rotation requests.
  std::optional<int64_t> last_flush_ns_, last_rotate_ns_;
  std::atomic<uint64_t> trigger_signals_{0};  // written on the control thread
};

}  // namespace cupmon

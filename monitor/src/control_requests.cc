// ControlRequests: the control plane's requests served on the control thread
// (control_requests.h).
#include "control_requests.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "cupmon/control/protocol.h"
#include "cupmon/format/recording_writer.h"

#ifndef CUPMON_VERSION_STRING
#define CUPMON_VERSION_STRING "0.0.0"
#endif

namespace cupmon {
namespace {

static_assert(TraceWindow::kMaxWindowMs == control::kMaxWindowMs);

std::string UpperKindName(uint32_t kind) {
  std::string s = KindName(kind);
  if (s == "unknown") return "KIND_" + std::to_string(kind);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

pb::StatusReply ControlRequests::Status() {
  CUPMON_DCHECK_THREAD(thread_);
  const SessionFacts& f = parts_.facts;
  const TraceWindow& window = parts_.window;
  pb::StatusReply s;
  s.set_version(CUPMON_VERSION_STRING);
  s.set_pid(static_cast<uint32_t>(getpid()));
  for (uint32_t k : f.enabled_kinds) s.add_enabled_kinds(UpperKindName(k));
  if (window.is_open()) {
    for (uint32_t k : window.kinds())
      if (std::find(f.enabled_kinds.begin(), f.enabled_kinds.end(), k) == f.enabled_kinds.end())
        s.add_enabled_kinds(UpperKindName(k));
  }
  s.set_window_open(window.is_open());
  s.set_window_id(window.is_open() ? window.id() : 0);
  const PipelineSnapshot snap = parts_.pipeline.Snapshot();
  *s.mutable_stats() = snap.stats;
  parts_.fill_stats(s.mutable_stats());
  s.set_buffers_free(s.stats().buffers_free());
  s.set_buffers_in_flight(s.stats().buffers_in_flight());
  s.set_bytes_written(snap.stats.compressed_bytes());
  s.set_dropped_records(s.stats().dropped_records());
  s.set_current_file(snap.current_file);
  s.set_output_dir(f.config.output_dir);
  for (std::string& arg : ProcessCommandLine()) s.add_command_line(std::move(arg));
  const LauncherIdentity& launcher = f.launcher;
  if (launcher.rank) s.set_rank(*launcher.rank);
  if (launcher.local_rank) s.set_local_rank(*launcher.local_rank);
  if (launcher.world_size) s.set_world_size(*launcher.world_size);
  s.set_job_id(launcher.job_id);
  // The same figures as this process's /metrics, for the node agent (cupmonctl serve).
  *s.mutable_metrics() = metrics::ToMetricsView(parts_.metrics.Snapshot());
  return s;
}

Expected<uint32_t> ControlRequests::OpenWindow(const control::WindowRequest& request) {
  CUPMON_DCHECK_THREAD(thread_);
  // Received on the control thread: the latency probe's first timestamp.
  const int64_t received = parts_.clock.RealtimeNs();
  if (request.source == pb::TRIGGER_SIGNAL)
    trigger_signals_.fetch_add(1, std::memory_order_relaxed);
  TraceWindow::Request r;
  r.duration_ms = request.duration_ms;
  r.source = request.source;
  r.received_realtime_ns = received;
  // Only the window kinds: ParseKinds alone would also take KERNEL (which serialises every
  // kernel) or a bare number from a caller that skipped the control plane's validation.
  auto names = control::NormalizeWindowKinds(request.kinds);
  if (!names) return std::unexpected(names.error());
  for (const std::string& name : *names) {
    std::string lower = name;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    std::vector<std::string> unknown;
    const std::vector<uint32_t> k = ParseKinds(lower, &unknown);
    if (k.empty()) return MakeError("unknown window kind '" + name + "'");
    r.kinds.push_back(k.front());
  }
  if (request.when_slower != 0) {
    // Armed, not opened: the duration and kinds wait for the slow step (AutoWindowTrigger).
    if (r.duration_ms == 0 || r.duration_ms > TraceWindow::kMaxWindowMs)
      return MakeError("window duration must be from 1 ms to 24 h");
    if (auto armed = parts_.auto_window.ArmWhenSlower(request.when_slower, r); !armed)
      return std::unexpected(armed.error());
    return 0u;
  }
  return parts_.window.Open(r);
}

Expected<void> ControlRequests::CloseWindow() {
  CUPMON_DCHECK_THREAD(thread_);
  return parts_.window.Close("closed");
}

Expected<void> ControlRequests::Flush() {
  CUPMON_DCHECK_THREAD(thread_);
  if (parts_.stopping.load()) return MakeError("the monitor is stopping");
  const int64_t now = parts_.clock.SteadyNs();
  if (last_flush_ns_ &&
      now - *last_flush_ns_ < std::chrono::nanoseconds(kMinFlushInterval).count()) {
    parts_.counters.control_requests_limited.fetch_add(1, std::memory_order_relaxed);
    return MakeError("a flush ran less than 100 ms ago; at most one flush per 100 ms");
  }
  last_flush_ns_ = now;
  parts_.ticks.RequestFlush();
  return {};
}

Expected<void> ControlRequests::Rotate() {
  CUPMON_DCHECK_THREAD(thread_);
  if (parts_.stopping.load()) return MakeError("the monitor is stopping");
  const int64_t now = parts_.clock.SteadyNs();
  if (last_rotate_ns_ &&
      now - *last_rotate_ns_ < std::chrono::nanoseconds(kMinRotateInterval).count()) {
    parts_.counters.control_requests_limited.fetch_add(1, std::memory_order_relaxed);
    return MakeError("a rotation ran less than 1 s ago; at most one rotation per second");
  }
  if (!PostToWriter(parts_.queue, [](RecordingWriter& w) { w.Rotate(); }))
    return MakeError("the writer has stopped or is full");
  last_rotate_ns_ = now;
  return {};
}

}  // namespace cupmon

// TraceWindow: enables the window kinds and cbid filters, writes the BEGIN/END markers and closes
// the window when its duration timer fires (see trace_window.h for the policy and the edge rule).
#include "cupmon/monitor/trace_window.h"

#include <cupti.h>
#include <time.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string_view>

#include "cupmon/monitor/config.h"

namespace cupmon {
namespace {

bool Contains(const std::vector<uint32_t>& v, uint32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// "cudaGetDevice_v3020" -> "cudaGetDevice"; names without a version suffix stay as they are.
std::string_view WithoutVersion(std::string_view name) {
  const size_t v = name.rfind("_v");
  if (v == std::string_view::npos || v + 2 >= name.size()) return name;
  for (size_t i = v + 2; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return name;
  return name.substr(0, v);
}

}  // namespace

const char* TriggerName(pb::TriggerSource source) {
  switch (source) {
    case pb::TRIGGER_SIGNAL: return "signal";
    case pb::TRIGGER_SOCKET: return "socket";
    case pb::TRIGGER_API: return "api";
    case pb::TRIGGER_ENV: return "env";
    case pb::TRIGGER_AUTO: return "auto";
    default: return "unknown";
  }
}

void ResolveApiFilter(CuptiApi& cupti, const std::vector<std::string>& names,
                      std::vector<uint32_t>* runtime_cbids, std::vector<uint32_t>* driver_cbids,
                      std::vector<std::string>* unknown) {
  std::vector<bool> matched(names.size(), false);
  auto scan = [&](CUpti_CallbackDomain domain, uint32_t size, std::vector<uint32_t>* out) {
    for (uint32_t cbid = 1; cbid < size; ++cbid) {
      const char* cb_name = nullptr;
      if (cupti.GetCallbackName(domain, cbid, &cb_name) != CUPTI_SUCCESS || !cb_name) continue;
      const std::string_view full(cb_name);
      const std::string_view bare = WithoutVersion(full);
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == full || names[i] == bare) {
          matched[i] = true;
          if (!Contains(*out, cbid)) out->push_back(cbid);
        }
      }
    }
  };
  if (!names.empty()) {
    scan(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, runtime_cbids);
    scan(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, driver_cbids);
  }
  for (size_t i = 0; i < names.size(); ++i)
    if (!matched[i]) unknown->push_back(names[i]);
}

TraceWindow::TraceWindow(boost::asio::io_context& io, CuptiApi& cupti, Options options,
                         Hooks hooks, MonitorClock& clock)
    : io_(io),
      cupti_(cupti),
      options_(std::move(options)),
      hooks_(std::move(hooks)),
      clock_(clock),
      timer_(io, clock) {}

TraceWindow::~TraceWindow() = default;

int64_t TraceWindow::remaining_ms() const {
  if (!is_open()) return 0;
  return std::max<int64_t>(0, (ends_at_ns_ - clock_.SteadyNs()) / 1'000'000);
}

Expected<uint32_t> TraceWindow::Open(const Request& request) {
  CUPMON_DCHECK_THREAD(thread_);
  const int64_t received_ns = request.received_realtime_ns ? request.received_realtime_ns
                                                           : clock_.RealtimeNs();
  if (shut_down_) return MakeError("the monitor is stopping; no new trace window");
  if (is_open()) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return MakeError("a trace window is already open (window " + std::to_string(id()) +
                     ", opened by " + TriggerName(source_) + ", ends in " +
                     std::to_string(remaining_ms()) +
                     " ms); requests while a window is open are refused: close it first "
                     "(cupmonctl close PID) or wait for it to end");
  }
  if (request.duration_ms == 0) return MakeError("window duration must be at least 1 ms");
  if (request.duration_ms > kMaxWindowMs)
    return MakeError("window duration " + std::to_string(request.duration_ms) +
                     " ms is longer than 24 h (" + std::to_string(kMaxWindowMs) + " ms)");
  const std::vector<uint32_t>& kinds =
      request.kinds.empty() ? options_.default_kinds : request.kinds;

  // BEGIN's timestamp precedes the first enable (the edge rule in the header).
  uint64_t begin_cupti = 0;
  cupti_.GetTimestamp(&begin_cupti);
  const int64_t begin_realtime = clock_.RealtimeNs();
  std::vector<uint32_t> enabled;
  std::string failed;
  for (uint32_t kind : kinds) {
    if (Contains(options_.always_on, kind)) continue;  // already on, and stays on
    const CUptiResult r = cupti_.ActivityEnable(static_cast<CUpti_ActivityKind>(kind));
    if (r == CUPTI_SUCCESS) {
      enabled.push_back(kind);
    } else {
      failed += std::string(failed.empty() ? "" : ", ") + KindName(kind) + " (" +
                cupti_.ResultString(r) + ")";
    }
  }
  const bool any_extra = std::any_of(kinds.begin(), kinds.end(),
                                     [&](uint32_t k) { return !Contains(options_.always_on, k); });
  if (enabled.empty() && any_extra)
    return MakeError("CUPTI enabled none of the window's kinds: " + failed);
  // Filters only after the kind is on: enabling RUNTIME/DRIVER afterwards would override them.
  std::string filter_failed;
  auto apply_filters = [&](uint32_t kind, const std::vector<uint32_t>& cbids, bool runtime) {
    if (!Contains(enabled, kind)) return;
    for (uint32_t cbid : cbids) {
      const CUptiResult r = runtime ? cupti_.ActivityEnableRuntimeApi(cbid, 0)
                                    : cupti_.ActivityEnableDriverApi(cbid, 0);
      if (r != CUPTI_SUCCESS && filter_failed.empty())
        filter_failed = std::string("API filter not applied (") + cupti_.ResultString(r) + ")";
    }
  };
  apply_filters(CUPTI_ACTIVITY_KIND_RUNTIME, options_.runtime_filter, true);
  apply_filters(CUPTI_ACTIVITY_KIND_DRIVER, options_.driver_filter, false);
  const int64_t enabled_ns = clock_.RealtimeNs();

  const uint32_t window_id = id() + 1;
  kinds_ = kinds;
  enabled_ = std::move(enabled);
  source_ = request.source;
  requested_ms_ = request.duration_ms;
  ends_at_ns_ = clock_.SteadyNs() + int64_t{request.duration_ms} * 1'000'000;
  id_.store(window_id, std::memory_order_release);
  open_.store(true, std::memory_order_release);
  opened_.fetch_add(1, std::memory_order_relaxed);

  pb::WindowMarker m;
  m.set_window_id(window_id);
  m.set_edge(pb::WindowMarker::BEGIN);
  m.set_source(request.source);
  for (uint32_t k : kinds) m.add_kinds(k);
  m.set_cupti_ns(begin_cupti);
  m.set_realtime_ns(begin_realtime);
  m.set_requested_ms(request.duration_ms);
  if (request.source == pb::TRIGGER_AUTO) {
    m.set_trigger_step(request.trigger_step);
    m.set_trigger_step_ns(request.trigger_step_ns);
    m.set_trigger_median_ns(request.trigger_median_ns);
    m.set_trigger_factor(request.trigger_factor);
    m.set_trigger_by(request.trigger_by);
  }
  // The latency probe: from the control thread taking the request to the kinds being enabled.
  std::string note = "received_realtime_ns=" + std::to_string(received_ns) +
                     " enabled_realtime_ns=" + std::to_string(enabled_ns) +
                     " request_to_enabled_us=" + std::to_string((enabled_ns - received_ns) / 1000);
  if (!failed.empty()) note += " not_enabled=" + failed;
  if (!filter_failed.empty()) note += " " + filter_failed;
  m.set_note(std::move(note));
  hooks_.write_marker(m);

  timer_.ExpiresAfterWait(std::chrono::milliseconds(request.duration_ms),
                          [this, window_id](const boost::system::error_code& ec) noexcept {
                            OnTimer(window_id, ec);
                          });
  return window_id;
}

void TraceWindow::OnTimer(uint32_t window_id, const boost::system::error_code& ec) noexcept {
  if (ec || !is_open() || id() != window_id) return;  // cancelled, or an older window's timer
  try {
    Close("duration");
  } catch (...) {
    // Close only fails on allocation; the kinds were disabled before anything could throw.
  }
}

Expected<void> TraceWindow::Close(const std::string& note) {
  CUPMON_DCHECK_THREAD(thread_);
  if (!is_open()) return MakeError("no trace window is open");
  timer_.Cancel();
  for (auto it = enabled_.rbegin(); it != enabled_.rend(); ++it)
    cupti_.ActivityDisable(static_cast<CUpti_ActivityKind>(*it));
  uint64_t end_cupti = 0;
  cupti_.GetTimestamp(&end_cupti);  // after the last disable (edge rule)
  const int64_t end_realtime = clock_.RealtimeNs();
  open_.store(false, std::memory_order_release);
  // Non-forced: the window's complete records are handed over and queued before END; a kernel
  // still running stays in CUPTI's buffer and arrives with a later flush.
  if (hooks_.flush) hooks_.flush();
  pb::WindowMarker m;
  m.set_window_id(id());
  m.set_edge(pb::WindowMarker::END);
  m.set_source(source_);
  for (uint32_t k : kinds_) m.add_kinds(k);
  m.set_cupti_ns(end_cupti);
  m.set_realtime_ns(end_realtime);
  m.set_requested_ms(requested_ms_);
  m.set_note(note);
  hooks_.write_marker(m);
  enabled_.clear();
  kinds_.clear();
  return {};
}

void TraceWindow::Shutdown() {
  CUPMON_DCHECK_THREAD(thread_);
  if (shut_down_) return;
  shut_down_ = true;
  if (is_open()) Close("stop");
  timer_.Cancel();
}

}  // namespace cupmon

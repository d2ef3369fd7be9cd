// ControlEndpoints: starting and stopping the control plane, the metrics endpoint and the
// termination signals (control_endpoints.h).
#include "control_endpoints.h"

#include <cstdio>

namespace cupmon {
namespace {

void Warn(const std::string& line) { std::fprintf(stderr, "cupmon: %s\n", line.c_str()); }

}  // namespace

void ControlEndpoints::Start() {
  CUPMON_DCHECK_THREAD(thread_);
  if (config_.term_flush && on_termination_signal_) {
    term_ = std::make_unique<TerminationSignals>(io_, on_termination_signal_);
    term_->Start();
  }
  if (config_.control) StartControlPlane();
  if (!config_.metrics_address.empty()) StartMetrics();
}

void ControlEndpoints::StartControlPlane() {
  control::ControlOptions co;
  co.control_dir = config_.control_dir;
  co.registry_dir = config_.registry_dir;
  co.signal_number = config_.signal_number;
  co.default_window_ms = config_.window_ms;
  control_ = std::make_unique<control::ControlPlane>(io_, std::move(co), target_);
  if (auto r = control_->Start(); !r) {
    Warn("control plane off: " + r.error().message +
         "; monitoring continues without the control socket and signal trigger");
    control_.reset();
    return;
  }
  control_socket_ = control_->socket_path();
  if (config_.signal_number != 0 && !control_->signal_trigger_active())
    Warn("signal " + std::to_string(config_.signal_number) +
         " already has a handler of the application; it does not open windows (use "
         "cupmonctl, or CUPMON_SIGNAL to pick another signal)");
}

void ControlEndpoints::StartMetrics() {
  metrics::MetricsOptions base;
  base.allow_non_loopback = config_.metrics_allow_remote;
  auto mo = metrics::ParseListenAddress(config_.metrics_address, base);
  if (!mo) {
    Warn("CUPMON_METRICS_ADDRESS='" + config_.metrics_address + "': " + mo.error().message +
         "; no metrics endpoint");
    return;
  }
  metrics_ = std::make_unique<metrics::MetricsServer>(io_, std::move(*mo), metrics_source_);
  if (auto r = metrics_->Start(); !r) {
    Warn("metrics endpoint off: " + r.error().message + "; monitoring continues");
    metrics_.reset();
    return;
  }
  metrics_port_ = metrics_->port();
}

void ControlEndpoints::Shutdown() noexcept {
  CUPMON_DCHECK_THREAD(thread_);
  try {
    if (term_) term_->Stop();
    if (control_) control_->Stop();
    if (metrics_) metrics_->Stop();
  } catch (...) {
    faults_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace cupmon

// ControlEndpoints: the monitor's listeners on the control thread: the control plane (socket and
// signal trigger), the metrics endpoint and the termination signals.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "cupmon/base/thread_checker.h"
#include "cupmon/control/control_plane.h"
#include "cupmon/metrics/metrics_server.h"
#include "cupmon/monitor/config.h"
#include "termination_signals.h"

namespace cupmon {

// A listener that cannot start is warned about and left off; monitoring goes on without it.
//
// Threading: Start() and Shutdown() on the control thread (checked); control_socket_path() and
// metrics_port() on any thread once Start() returned.
class ControlEndpoints {
 public:
  // `target` serves the control plane's requests, `metrics` the endpoint's scrapes.
  // `on_termination_signal`: SIGTERM/SIGINT caught, on the control thread; null: those signals are
  // left alone. `faults` counts exceptions of Shutdown(). `control_thread`: the control thread's
  // check (ControlLoop's).
  ControlEndpoints(boost::asio::io_context& io, const MonitorConfig& config,
                   control::ControlTarget& target, metrics::MetricsSource& metrics,
                   std::function<void(int)> on_termination_signal,
                   std::atomic<uint64_t>& faults, const ThreadChecker& control_thread)
      : io_(io),
        config_(config),
        target_(target),
        metrics_source_(metrics),
        on_termination_signal_(std::move(on_termination_signal)),
        faults_(faults),
        thread_(control_thread) {}
  ControlEndpoints(const ControlEndpoints&) = delete;
  ControlEndpoints& operator=(const ControlEndpoints&) = delete;

  // Starts the termination signals (CUPMON_TERM_FLUSH), the control plane (unless
  // CUPMON_CONTROL_DIR=off) and the metrics endpoint (CUPMON_METRICS_ADDRESS).
  void Start();
  // Stops them all. Idempotent.
  void Shutdown() noexcept;

  std::string control_socket_path() const { return control_socket_; }
  uint16_t metrics_port() const { return metrics_port_.load(); }

 private:
  void StartControlPlane();
  void StartMetrics();

  boost::asio::io_context& io_;
  const MonitorConfig& config_;
  control::ControlTarget& target_;
  metrics::MetricsSource& metrics_source_;
  const std::function<void(int)> on_termination_signal_;
  std::atomic<uint64_t>& faults_;

  const ThreadChecker& thread_;  // the control thread (ControlLoop binds it)
  std::unique_ptr<control::ControlPlane> control_;
  std::unique_ptr<metrics::MetricsServer> metrics_;
  std::unique_ptr<TerminationSignals> term_;

  // Written on the control thread while the starting thread waits for Start(); read by any thread
  // after.
  std::string control_socket_;
  std::atomic<uint16_t> metrics_port_{0};
};

}  // namespace cupmon

// The node agent behind `cupmonctl serve` and `cupmonctl window --job`: finds the node's monitored
// processes through the registry, serves one Prometheus endpoint for all of them, and opens a
// window in every process of a job at one instant. It holds no recording data.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "cupmon.pb.h"
#include "cupmon/base/error.h"
#include "cupmon/metrics/metrics_server.h"

namespace cupmon::agent {

struct NodeAgentOptions {
  std::string registry_dir;
  // Deadline of each process's status request: a process that accepts and never answers delays a
  // scrape by this much and is shown as down, the others are unaffected.
  std::chrono::milliseconds process_timeout{1000};
  // Between scrapes the registry is re-read this often: stale entries (exited pids, removed
  // sockets) are deleted and arrivals and departures are logged.
  std::chrono::milliseconds rescan_period{5000};
  // Processes asked per scrape, in pid order; the rest are counted (bounded memory and time).
  size_t max_processes = 256;
  std::string hostname;  // `Hostname` label; empty: gethostname()
  // Where arrivals, departures and registry errors are logged; null: nowhere.
  std::function<void(const std::string&)> log;
};

// Threading: everything on the io_context's one thread (construct, Start and Stop before run() or
// on it). RenderAsync is MetricsServer's call on that thread. Handlers still queued after Stop()
// do nothing harmful: they hold the state they need.
class NodeAgent final : public metrics::AsyncMetricsSource {
 public:
  NodeAgent(boost::asio::io_context& io, NodeAgentOptions options);

  void Start();  // the periodic rescan
  void Stop();

  // Lists the registry, asks every process for its status in parallel under process_timeout, and
  // renders the exposition: each process's series as its own /metrics shows them, with the labels
  // `pid`, `rank` and `job` first (empty when the process's launcher set none), plus the agent's
  // own families (cupmon_agent_*). An untrusted registry is an error (500 with its message).
  void RenderAsync(std::function<void(Expected<std::string>)> done) override;

 private:
  void Rescan();
  void ScheduleRescan();

  boost::asio::io_context& io_;
  NodeAgentOptions options_;
  boost::asio::steady_timer rescan_timer_;
  std::set<int> known_pids_;  // at most max_processes, for the arrival/departure log
  uint64_t unreachable_total_ = 0;
  bool stopped_ = false;
};

// The outcome of a job-wide window for one process of that job.
struct JobWindowResult {
  int pid = 0;
  std::optional<int32_t> rank;
  bool ok = false;
  std::string message;  // the monitor's reply or the error
};

struct JobWindowOutcome {
  int64_t at_unix_ms = 0;                // the instant sent to every process
  std::vector<JobWindowResult> results;  // the job's processes, in pid order
  std::set<std::string> other_jobs;      // jobs seen on the node that did not match (for messages)
  std::vector<std::string> unreachable;  // processes whose job could not be learnt, with why
};

// Opens `window` (duration and kinds) in every registered process whose status says job_id ==
// `job`, all with the same at_unix_ms: `at_unix_ms` when it is non-zero, else the next multiple of
// `align_ms` when that is non-zero, else 500 ms from now. The instant is chosen after the statuses
// arrived, so a slow process cannot make it late. Every request runs in parallel under `timeout`.
// Runs its own io_context; blocking. An untrusted registry is an error.
Expected<JobWindowOutcome> OpenJobWindow(const std::string& registry_dir, const std::string& job,
                                         const pb::OpenWindowRequest& window, int64_t at_unix_ms,
                                         int64_t align_ms, std::chrono::milliseconds timeout);

}  // namespace cupmon::agent

// NodeAgent and OpenJobWindow: registry walks and parallel control requests with per-process
// deadlines, on one asio thread.
#include "node_agent.h"

#include <unistd.h>

#include <array>
#include <memory>
#include <utility>

#include "cupmon/control/async_client.h"
#include "cupmon/control/control_client.h"
#include "cupmon/control/protocol.h"

namespace cupmon::agent {
namespace {

using control::ClientExpected;

pb::ControlRequest StatusRequest() {
  pb::ControlRequest request;
  request.mutable_status();
  return request;
}

std::string HostName() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return {};
  return name.data();
}

std::string Describe(const control::MonitoredProcess& p) {
  return "pid " + std::to_string(p.pid) + (p.command.empty() ? "" : " (" + p.command + ")");
}

// Asks each process for its status, in parallel, and calls `done` once all have answered or timed
// out, with the replies in the order of `processes`.
void StatusAll(boost::asio::io_context& io, const std::vector<control::MonitoredProcess>& processes,
               std::chrono::milliseconds timeout,
               std::function<void(std::vector<ClientExpected<pb::ControlReply>>)> done) {
  struct Gather {
    std::vector<ClientExpected<pb::ControlReply>> replies;
    size_t pending = 0;
    std::function<void(std::vector<ClientExpected<pb::ControlReply>>)> done;
  };
  auto gather = std::make_shared<Gather>();
  gather->replies.assign(processes.size(), std::unexpected(control::ClientError{
                                               control::ClientError::Code::kTimeout, ""}));
  gather->pending = processes.size();
  gather->done = std::move(done);
  if (processes.empty()) {
    gather->done({});
    return;
  }
  const pb::ControlRequest request = StatusRequest();
  for (size_t i = 0; i < processes.size(); ++i) {
    control::AsyncCall(io, processes[i].socket_path, request, timeout,
                       [gather, i](ClientExpected<pb::ControlReply> reply) {
                         gather->replies[i] = std::move(reply);
                         if (--gather->pending == 0) gather->done(std::move(gather->replies));
                       });
  }
}

}  // namespace

NodeAgent::NodeAgent(boost::asio::io_context& io, NodeAgentOptions options)
    : io_(io), options_(std::move(options)), rescan_timer_(io) {
  if (options_.hostname.empty()) options_.hostname = HostName();
}

void NodeAgent::Start() {
  Rescan();
  ScheduleRescan();
}

void NodeAgent::Stop() {
  stopped_ = true;
  rescan_timer_.cancel();
}

void NodeAgent::ScheduleRescan() {
  if (stopped_) return;
  rescan_timer_.expires_after(options_.rescan_period);
  rescan_timer_.async_wait([this](const boost::system::error_code& ec) noexcept {
    if (ec || stopped_) return;
    try {
      Rescan();
    } catch (...) {
      // Handler boundary: a failed rescan is retried at the next period.
    }
    ScheduleRescan();
  });
}

void NodeAgent::Rescan() {
  auto listed = control::ListMonitored(options_.registry_dir, /*remove_stale=*/true);
  if (!listed) {
    if (options_.log)
      options_.log("registry " + options_.registry_dir + ": " + listed.error().message);
    return;
  }
  std::set<int> now;
  for (const auto& p : *listed) {
    if (now.size() >= options_.max_processes) break;
    now.insert(p.pid);
    if (!known_pids_.contains(p.pid) && options_.log) options_.log("monitoring " + Describe(p));
  }
  for (const int pid : known_pids_) {
    if (!now.contains(pid) && options_.log) options_.log("pid " + std::to_string(pid) + " is gone");
  }
  known_pids_ = std::move(now);
}

void NodeAgent::RenderAsync(std::function<void(Expected<std::string>)> done) {
  auto listed = control::ListMonitored(options_.registry_dir, /*remove_stale=*/true);
  if (!listed) {
    return done(MakeError("registry " + options_.registry_dir + ": " + listed.error().message));
  }
  std::vector<control::MonitoredProcess> processes = std::move(*listed);
  const size_t found = processes.size();
  if (processes.size() > options_.max_processes) processes.resize(options_.max_processes);
  StatusAll(io_, processes, options_.process_timeout,
            [this, processes, found,
             done = std::move(done)](std::vector<ClientExpected<pb::ControlReply>> replies) {
              std::vector<metrics::LabelledSnapshot> up;
              std::string agent;
              agent +=
                  "# HELP cupmon_agent_processes Monitored processes in the node's registry.\n"
                  "# TYPE cupmon_agent_processes gauge\ncupmon_agent_processes " +
                  std::to_string(found) + "\n";
              agent +=
                  "# HELP cupmon_agent_processes_skipped Registered processes not asked "
                  "(over --max-processes).\n# TYPE cupmon_agent_processes_skipped gauge\n"
                  "cupmon_agent_processes_skipped " +
                  std::to_string(found - processes.size()) + "\n";
              agent +=
                  "# HELP cupmon_agent_process_up 1 when the process answered its status "
                  "request within the deadline, else 0.\n"
                  "# TYPE cupmon_agent_process_up gauge\n";
              for (size_t i = 0; i < processes.size(); ++i) {
                const auto& reply = replies[i];
                const bool answered = reply && reply->ok();
                agent += "cupmon_agent_process_up{pid=\"" + std::to_string(processes[i].pid) +
                         "\"} " + (answered ? "1" : "0") + "\n";
                if (!answered) {
                  ++unreachable_total_;
                  continue;
                }
                const pb::StatusReply& s = reply->status();
                // A monitor older than this agent sends no metrics: zeros would be wrong.
                if (!s.has_metrics()) continue;
                metrics::LabelledSnapshot p;
                p.labels = {{"pid", std::to_string(processes[i].pid)},
                            {"rank", s.has_rank() ? std::to_string(s.rank()) : ""},
                            {"job", s.job_id()}};
                p.snapshot = metrics::FromMetricsView(s.metrics());
                p.snapshot.version = s.version();
                p.snapshot.output_dir = s.output_dir();
                p.snapshot.hostname = options_.hostname;
                up.push_back(std::move(p));
              }
              agent +=
                  "# HELP cupmon_agent_unreachable_total Status requests that failed or "
                  "timed out, over all scrapes.\n# TYPE cupmon_agent_unreachable_total "
                  "counter\ncupmon_agent_unreachable_total " +
                  std::to_string(unreachable_total_) + "\n";
              done(metrics::RenderExposition(up) + agent);
            });
}

Expected<JobWindowOutcome> OpenJobWindow(const std::string& registry_dir, const std::string& job,
                                         const pb::OpenWindowRequest& window, int64_t at_unix_ms,
                                         int64_t align_ms, std::chrono::milliseconds timeout) {
  auto listed = control::ListMonitored(registry_dir, /*remove_stale=*/true);
  if (!listed) return MakeError("registry " + registry_dir + ": " + listed.error().message);
  const std::vector<control::MonitoredProcess> processes = std::move(*listed);
  boost::asio::io_context io;
  JobWindowOutcome outcome;
  StatusAll(io, processes, timeout, [&](std::vector<ClientExpected<pb::ControlReply>> replies) {
    std::vector<size_t> members;
    for (size_t i = 0; i < processes.size(); ++i) {
      if (!replies[i] || !replies[i]->ok()) {
        outcome.unreachable.push_back(
            Describe(processes[i]) + ": " +
            (replies[i] ? replies[i]->error() : replies[i].error().message));
        continue;
      }
      const pb::StatusReply& s = replies[i]->status();
      if (s.job_id() != job) {
        outcome.other_jobs.insert(s.job_id().empty() ? "(none)" : s.job_id());
        continue;
      }
      members.push_back(i);
      JobWindowResult r;
      r.pid = processes[i].pid;
      if (s.has_rank()) r.rank = s.rank();
      outcome.results.push_back(r);
    }
    // One instant for all, chosen now that every status is in.
    const int64_t now = control::NowUnixMs();
    outcome.at_unix_ms = at_unix_ms != 0 ? at_unix_ms
                         : align_ms != 0 ? control::NextAlignedUnixMs(now, align_ms)
                                         : now + 500;
    pb::ControlRequest open;
    *open.mutable_open_window() = window;
    open.mutable_open_window()->set_at_unix_ms(outcome.at_unix_ms);
    for (size_t k = 0; k < members.size(); ++k) {
      control::AsyncCall(io, processes[members[k]].socket_path, open, timeout,
                         [&outcome, k](ClientExpected<pb::ControlReply> reply) {
                           JobWindowResult& r = outcome.results[k];
                           r.ok = reply && reply->ok();
                           r.message = !reply        ? reply.error().message
                                       : reply->ok() ? reply->message()
                                                     : reply->error();
                         });
    }
  });
  io.run();
  return outcome;
}

}  // namespace cupmon::agent

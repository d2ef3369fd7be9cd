// cupmonctl: talks to monitored processes over their control sockets (list, status, window, close,
// flush, rotate), opens a window in every process of a job (window --job) and runs the node agent
// (serve). Exit codes: 0 ok, 1 the monitor replied with an error, 2 usage error,
// 3 pid not monitored or not reachable.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <google/protobuf/util/json_util.h>

#include "cupmon.pb.h"
#include "cupmon/control/control_client.h"
#include "cupmon/control/private_dir.h"
#include "cupmon/control/protocol.h"
#include "cupmon/format/build_info.h"
#include "cupmon/metrics/metrics_server.h"
#include "node_agent.h"

namespace {

using cupmon::control::ClientError;

constexpr int kExitOk = 0;
constexpr int kExitRefused = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

constexpr const char* kExamples = R"(Examples:
  cupmonctl list
  cupmonctl status 4242
  cupmonctl window 4242 --duration 5s
  cupmonctl window 4242 --duration 1500ms --kinds runtime,synchronization
  cupmonctl window 4242 --duration 2s --align 10s      # same instant on every host (NTP)
  cupmonctl window 4242 --duration 2s --at 1767225600000
  cupmonctl window 4242 --duration 5s --when-slower 1.5   # once, at the next step 1.5x the median
  cupmonctl close 4242
  cupmonctl --json status 4242
  cupmonctl window --job 81234 --duration 5s --align 10s   # every rank of job 81234 on this node
  cupmonctl serve --listen 127.0.0.1:9465                  # one /metrics for the whole node
  cupmonctl serve --listen 0.0.0.0:9465 --allow-remote     # scraped from another host (DaemonSet)

Exit codes: 0 ok, 1 the monitor refused or replied with an error, 2 usage error,
3 the pid is not monitored or cannot be reached.)";

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

struct Context {
  bool json = false;
  std::string registry_dir;
  std::string socket_path;  // overrides the registry lookup
  std::string timeout_text = "2s";
  std::chrono::milliseconds timeout{2000};
};

int UsageError(const std::string& message) {
  std::cerr << "cupmonctl: " << message << "\n";
  return kExitUsage;
}

int Unreachable(const Context& ctx, int pid, const ClientError& error) {
  if (ctx.json) {
    std::cout << "{\"ok\":false,\"pid\":" << pid << ",\"error\":\"" << JsonEscape(error.message)
              << "\"}\n";
  }
  std::cerr << "cupmonctl: " << error.message << "\n";
  return kExitUnreachable;
}

// Sends one request to `pid` and prints the reply. Returns the exit code.
int Request(const Context& ctx, int pid, const cupmon::pb::ControlRequest& request) {
  std::string socket = ctx.socket_path;
  if (socket.empty()) {
    auto found = cupmon::control::FindSocket(pid, ctx.registry_dir);
    if (!found) return Unreachable(ctx, pid, found.error());
    socket = *found;
  }
  auto reply = cupmon::control::Call(socket, request, ctx.timeout);
  if (!reply) return Unreachable(ctx, pid, reply.error());
  if (ctx.json) {
    std::cout << ToJson(*reply) << "\n";
  } else if (!reply->ok()) {
    std::cerr << "cupmonctl: pid " << pid << ": " << reply->error() << "\n";
  } else if (reply->has_status()) {
    const auto& s = reply->status();
    std::cout << "pid:             " << s.pid() << "\n"
              << "version:         " << s.version() << "\n"
              << "window:          "
              << (s.window_open() ? "open (id " + std::to_string(s.window_id()) + ")" : "closed") << "\n"
              << "enabled kinds:   ";
    for (int i = 0; i < s.enabled_kinds_size(); ++i) std::cout << (i ? "," : "") << s.enabled_kinds(i);
    std::cout << "\n"
              << "buffers:         " << s.buffers_free() << " free, " << s.buffers_in_flight()
              << " in flight\n"
              << "bytes written:   " << s.bytes_written() << "\n"
              << "dropped records: " << s.dropped_records() << "\n"
              << "current file:    " << s.current_file() << "\n"
              << "output dir:      " << s.output_dir() << "\n";
    if (s.has_rank() || !s.job_id().empty()) {
      std::cout << "job, rank:       " << (s.job_id().empty() ? "-" : s.job_id()) << ", "
                << (s.has_rank() ? std::to_string(s.rank()) : "-") << "\n";
    }
  } else {
    std::cout << reply->message() << "\n";
  }
  return reply->ok() ? kExitOk : kExitRefused;
}

int List(const Context& ctx) {
  const auto listed = cupmon::control::ListMonitored(ctx.registry_dir, /*remove_stale=*/true);
  if (!listed) return Unreachable(ctx, 0, listed.error());
  const auto& processes = *listed;
  cupmon::pb::ControlRequest request;
  request.mutable_status();
  if (!ctx.json) std::printf("%-8s %-14s %-40s %s\n", "PID", "STATE", "OUTPUT DIR", "COMMAND");
  std::string json = "[";
  for (const auto& p : processes) {
    // A short deadline: one hung process must not stall the listing of the others.
    auto reply = cupmon::control::Call(p.socket_path, request, std::min(ctx.timeout,
                                                                       std::chrono::milliseconds(500)));
    std::string state = "unreachable";
    std::string output_dir;
    if (reply && reply->ok()) {
      state = reply->status().window_open()
                  ? "window " + std::to_string(reply->status().window_id())
                  : "monitoring";
      output_dir = reply->status().output_dir();
    }
    if (ctx.json) {
      json += (json.size() > 1 ? "," : "");
      json += "{\"pid\":" + std::to_string(p.pid) + ",\"state\":\"" + JsonEscape(state) +
              "\",\"output_dir\":\"" + JsonEscape(output_dir) + "\",\"socket\":\"" +
              JsonEscape(p.socket_path) + "\",\"command\":\"" + JsonEscape(p.command) + "\"}";
    } else {
      std::printf("%-8d %-14s %-40s %s\n", p.pid, state.c_str(), output_dir.c_str(), p.command.c_str());
    }
  }
  if (ctx.json) std::cout << json << "]\n";
  return kExitOk;
}

// window --job: one instant for every process of the job on this host.
int JobWindow(const Context& ctx, const std::string& job,
              const cupmon::pb::OpenWindowRequest& window, int64_t at_ms, int64_t align_ms) {
  auto outcome =
      cupmon::agent::OpenJobWindow(ctx.registry_dir, job, window, at_ms, align_ms, ctx.timeout);
  if (!outcome) {
    std::cerr << "cupmonctl: " << outcome.error().message << "\n";
    return kExitUnreachable;
  }
  bool all_ok = !outcome->results.empty();
  std::string json = "{\"job\":\"" + JsonEscape(job) +
                     "\",\"at_unix_ms\":" + std::to_string(outcome->at_unix_ms) +
                     ",\"processes\":[";
  for (size_t i = 0; i < outcome->results.size(); ++i) {
    const auto& r = outcome->results[i];
    all_ok = all_ok && r.ok;
    const std::string rank = r.rank ? std::to_string(*r.rank) : "";
    json += (i ? "," : "");
    json += "{\"pid\":" + std::to_string(r.pid) + ",\"rank\":" + (r.rank ? rank : "null") +
            ",\"ok\":" + (r.ok ? "true" : "false") + ",\"message\":\"" + JsonEscape(r.message) +
            "\"}";
    if (!ctx.json) {
      (r.ok ? std::cout : std::cerr)
          << (r.ok ? "" : "cupmonctl: ") << "pid " << r.pid << (r.rank ? " rank " + rank : "")
          << ": " << r.message << "\n";
    }
  }
  json += "]}";
  if (ctx.json) std::cout << json << "\n";
  for (const std::string& u : outcome->unreachable) {
    std::cerr << "cupmonctl: could not ask " << u << "\n";
  }
  if (outcome->results.empty()) {
    std::string seen;
    for (const std::string& j : outcome->other_jobs) seen += (seen.empty() ? "" : ", ") + j;
    std::cerr << "cupmonctl: no monitored process of job " << job << " on this host (registry "
              << ctx.registry_dir << "; jobs seen: " << (seen.empty() ? "none" : seen) << ")\n";
    return kExitUnreachable;
  }
  return all_ok ? kExitOk : kExitRefused;
}

struct ServeOptions {
  std::string listen = "127.0.0.1:9465";
  bool allow_remote = false;
  std::string process_timeout = "1s";
  std::string rescan = "5s";
  size_t max_processes = 256;
};

// serve: the node agent, until SIGTERM or SIGINT.
int Serve(const Context& ctx, const ServeOptions& serve) {
  auto listen = cupmon::metrics::ParseListenAddress(serve.listen);
  if (!listen) return UsageError("--listen: " + listen.error().message);
  listen->allow_non_loopback = serve.allow_remote;
  cupmon::agent::NodeAgentOptions options;
  options.registry_dir = ctx.registry_dir;
  auto process_timeout = cupmon::control::ParseDurationMs(serve.process_timeout);
  if (!process_timeout || *process_timeout <= 0 || *process_timeout > 60'000) {
    return UsageError("--process-timeout must be a duration from 1ms to 60s (got '" +
                      serve.process_timeout + "')");
  }
  auto rescan = cupmon::control::ParseDurationMs(serve.rescan);
  if (!rescan || *rescan < 100 || *rescan > 3'600'000) {
    return UsageError("--rescan must be a duration from 100ms to 1h (got '" + serve.rescan + "')");
  }
  if (serve.max_processes == 0 || serve.max_processes > 4096) {
    return UsageError("--max-processes must be from 1 to 4096");
  }
  options.process_timeout = std::chrono::milliseconds(*process_timeout);
  options.rescan_period = std::chrono::milliseconds(*rescan);
  options.max_processes = serve.max_processes;
  options.log = [](const std::string& line) {
    std::cerr << "cupmonctl serve: " << line << std::endl;
  };
  // The scrape waits for the slowest process: let the response deadline cover it.
  listen->write_timeout_ms = static_cast<uint32_t>(*process_timeout + 5000);

  boost::asio::io_context io;
  cupmon::agent::NodeAgent agent(io, options);
  cupmon::metrics::MetricsServer server(io, *listen, agent);
  if (auto started = server.Start(); !started) {
    std::cerr << "cupmonctl serve: " << started.error().message << "\n";
    return kExitUsage;
  }
  agent.Start();
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) noexcept {
    if (ec) return;
    agent.Stop();
    server.Stop();
    io.stop();
  });
  std::cout << "cupmonctl serve: listening on " << listen->address << ":" << server.port()
            << " (GET /metrics), registry " << ctx.registry_dir << std::endl;
  io.run();
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cupmonctl: control cupmon-monitored CUDA processes on this host"};
  app.footer(kExamples);
  app.require_subcommand(1);
  app.set_version_flag("--version", cupmon::VersionText("cupmonctl"));
  Context ctx;
  ctx.registry_dir = cupmon::control::DefaultRegistryDir();
  app.add_flag("--json", ctx.json, "Machine-readable output");
  app.add_option("--registry", ctx.registry_dir,
                 "Registry directory of <pid>.sock links (default ${XDG_RUNTIME_DIR:-/tmp}/cupmon-<uid>)")
      ->envname("CUPMON_REGISTRY_DIR");
  app.add_option("--socket", ctx.socket_path, "Talk to this control socket instead of looking up the pid");
  app.add_option("--timeout", ctx.timeout_text, "Deadline per request (e.g. 500ms, 2s)");

  int pid = 0;
  std::string duration_text;
  std::vector<std::string> kinds;
  std::optional<int64_t> at_ms;
  std::string align_text;

  auto* list = app.add_subcommand("list", "Monitored processes on this host (removes stale entries)");
  auto* status = app.add_subcommand("status", "Status of a monitored process");
  status->add_option("pid", pid, "Process id")->required();
  std::string job;
  auto* window =
      app.add_subcommand("window", "Open a trace window (in one process, or a whole job)");
  auto* pid_opt = window->add_option("pid", pid, "Process id");
  auto* job_opt = window->add_option(
      "--job", job,
      "Every monitored process of this job on this host (SLURM_JOB_ID or TORCHELASTIC_RUN_ID), "
      "all at one instant: --at, the next --align multiple, else 500 ms after their statuses came");
  pid_opt->excludes(job_opt);
  window->add_option("--duration", duration_text, "Window length: 500ms, 5s, 2m")->required();
  window->add_option("--kinds", kinds,
                     "Comma-separated: runtime, driver, overhead, synchronization, cuda_event, "
                     "external_correlation, marker (default: the monitor's window kinds)")
      ->delimiter(',');
  auto* at_opt = window->add_option("--at", at_ms, "Open at this wall-clock instant (Unix epoch ms)");
  auto* align_opt = window->add_option("--align", align_text,
                                       "Open at the next wall-clock multiple of this period (e.g. 10s)");
  at_opt->excludes(align_opt);
  double when_slower = 0;
  auto* slower_opt = window->add_option(
      "--when-slower", when_slower,
      "Do not open now: arm the monitor's step trigger once; the window opens at the first step "
      "slower than this factor times the median step (above 1, e.g. 1.5)");
  slower_opt->excludes(at_opt);
  slower_opt->excludes(align_opt);
  slower_opt->excludes(job_opt);
  auto* close = app.add_subcommand("close", "Close the open window and cancel scheduled ones");
  close->add_option("pid", pid, "Process id")->required();
  auto* flush = app.add_subcommand("flush", "Flush completed activity buffers to disk");
  flush->add_option("pid", pid, "Process id")->required();
  auto* rotate = app.add_subcommand("rotate", "Start a new output file now");
  rotate->add_option("pid", pid, "Process id")->required();

  ServeOptions serve_options;
  auto* serve = app.add_subcommand(
      "serve", "Node agent: one Prometheus endpoint for every monitored process of this host");
  serve->add_option("--listen", serve_options.listen,
                    "ADDRESS:PORT of the endpoint (default 127.0.0.1:9465; port 0 picks one)");
  serve->add_flag(
      "--allow-remote", serve_options.allow_remote,
      "Allow a non-loopback --listen address (the counters become visible to the network)");
  serve->add_option("--process-timeout", serve_options.process_timeout,
                    "Deadline of each process's status request per scrape (default 1s)");
  serve->add_option("--rescan", serve_options.rescan,
                    "Re-read the registry this often between scrapes (default 5s)");
  serve->add_option("--max-processes", serve_options.max_processes,
                    "Processes asked per scrape (default 256)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  auto timeout = cupmon::control::ParseDurationMs(ctx.timeout_text);
  if (!timeout || *timeout <= 0) {
    return UsageError(timeout ? "--timeout must be positive" : timeout.error().message);
  }
  ctx.timeout = std::chrono::milliseconds(*timeout);

  if (list->parsed()) return List(ctx);
  if (serve->parsed()) return Serve(ctx, serve_options);
  if (window->parsed() && pid_opt->count() == 0 && job_opt->count() == 0) {
    return UsageError("window: give a pid or --job ID");
  }
  if (window->parsed() && job_opt->count() > 0 && job.empty()) {
    return UsageError("window: --job needs a job id");
  }

  cupmon::pb::ControlRequest request;
  if (status->parsed()) {
    request.mutable_status();
  } else if (close->parsed()) {
    request.mutable_close_window();
  } else if (flush->parsed()) {
    request.mutable_flush();
  } else if (rotate->parsed()) {
    request.mutable_rotate();
  } else if (window->parsed()) {
    // Checked here too so that a typo is a usage error (2), not a refusal by the monitor (1).
    auto duration = cupmon::control::ParseDurationMs(duration_text);
    if (!duration) return UsageError(duration.error().message);
    if (auto valid = cupmon::control::ValidateWindowDurationMs(*duration); !valid) {
      return UsageError(valid.error().message);
    }
    auto normalized = cupmon::control::NormalizeWindowKinds(kinds);
    if (!normalized) return UsageError(normalized.error().message);
    auto* open = request.mutable_open_window();
    open->set_duration_ms(static_cast<uint32_t>(*duration));
    for (const auto& kind : *normalized) open->add_kinds(kind);
    if (slower_opt->count() > 0) {
      if (auto valid = cupmon::control::ValidateSlowerFactor(when_slower); !valid)
        return UsageError(valid.error().message);
      open->set_when_slower(when_slower);
    }
    const int64_t now = cupmon::control::NowUnixMs();
    if (at_ms) {
      if (*at_ms <= 0) return UsageError("--at must be a positive Unix time in milliseconds");
      if (auto delay = cupmon::control::ScheduleDelayMs(*at_ms, now); !delay) {
        return UsageError(delay.error().message);
      }
      open->set_at_unix_ms(*at_ms);
    } else if (!align_text.empty()) {
      auto period = cupmon::control::ParseDurationMs(align_text);
      if (!period) return UsageError("--align: " + period.error().message);
      if (*period <= 0 || *period > cupmon::control::kMaxScheduleAheadMs) {
        return UsageError("--align period must be between 1 ms and 24 h");
      }
      if (job_opt->count() > 0) return JobWindow(ctx, job, *open, 0, *period);
      open->set_at_unix_ms(cupmon::control::NextAlignedUnixMs(now, *period));
    }
    if (job_opt->count() > 0) return JobWindow(ctx, job, *open, open->at_unix_ms(), 0);
  }
  if (pid <= 0) return UsageError("pid must be positive");
  return Request(ctx, pid, request);
}

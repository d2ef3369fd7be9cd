// cupmonctl: talks to monitored processes over their control sockets (list, status, window, close,
// flush, rotate). Exit codes: 0 ok, 1 the monitor replied with an error, 2 usage error,
// 3 pid not monitored or not reachable.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <google/protobuf/util/json_util.h>

#include "cupmon.pb.h"
#include "cupmon/control/control_client.h"
#include "cupmon/control/private_dir.h"
#include "cupmon/control/protocol.h"

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
  cupmonctl close 4242
  cupmonctl --json status 4242

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cupmonctl: control cupmon-monitored CUDA processes on this host"};
  app.footer(kExamples);
  app.require_subcommand(1);
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
  auto* window = app.add_subcommand("window", "Open a trace window");
  window->add_option("pid", pid, "Process id")->required();
  window->add_option("--duration", duration_text, "Window length: 500ms, 5s, 2m")->required();
  window->add_option("--kinds", kinds,
                     "Comma-separated: runtime, driver, overhead, synchronization, cuda_event, "
                     "external_correlation, marker (default: the monitor's window kinds)")
      ->delimiter(',');
  auto* at_opt = window->add_option("--at", at_ms, "Open at this wall-clock instant (Unix epoch ms)");
  auto* align_opt = window->add_option("--align", align_text,
                                       "Open at the next wall-clock multiple of this period (e.g. 10s)");
  at_opt->excludes(align_opt);
  auto* close = app.add_subcommand("close", "Close the open window and cancel scheduled ones");
  close->add_option("pid", pid, "Process id")->required();
  auto* flush = app.add_subcommand("flush", "Flush completed activity buffers to disk");
  flush->add_option("pid", pid, "Process id")->required();
  auto* rotate = app.add_subcommand("rotate", "Start a new output file now");
  rotate->add_option("pid", pid, "Process id")->required();

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
      open->set_at_unix_ms(cupmon::control::NextAlignedUnixMs(now, *period));
    }
  }
  if (pid <= 0) return UsageError("pid must be positive");
  return Request(ctx, pid, request);
}

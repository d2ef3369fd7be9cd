// The monitor's control plane: a signal trigger, a Unix control socket and scheduled-window timers,
// all on one Boost.Asio io_context (the control thread). It knows nothing of CUPTI: it validates
// requests and forwards them to a ControlTarget, which the monitor implements.
#pragma once

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "cupmon.pb.h"
#include "cupmon/base/error.h"

namespace cupmon::control {

// A validated request to open a trace window.
struct WindowRequest {
  uint32_t duration_ms = 0;        // 1 .. kMaxWindowMs
  std::vector<std::string> kinds;  // upper-case names from kWindowKindNames; empty: configured kinds
  int64_t at_unix_ms = 0;          // the instant that was asked for (0: now); informational
  pb::TriggerSource source = pb::TRIGGER_UNKNOWN;
  // Above 1: arm the monitor's step trigger once instead of opening now (OpenWindowRequest's
  // when_slower); the target answers window id 0 when it armed it.
  double when_slower = 0;
};

// Implemented by the monitor. Every method is called on the control (io_context) thread only, never
// from signal context, and never after ControlPlane::Stop() returned. A method may throw: the control
// plane catches everything and answers with an error reply. Methods must not block for long: they
// run on the thread that also serves the socket and the timers.
class ControlTarget {
 public:
  virtual ~ControlTarget() = default;
  virtual pb::StatusReply Status() = 0;
  // Returns the new window's id. Whether a request while a window is open extends it or is refused
  // is the target's decision (an error here becomes the reply's error text).
  virtual Expected<uint32_t> OpenWindow(const WindowRequest& request) = 0;
  virtual Expected<void> CloseWindow() = 0;
  virtual Expected<void> Flush() = 0;
  virtual Expected<void> Rotate() = 0;
};

struct ControlOptions {
  // Where `<pid>.sock` is created. Required. Created 0700; an existing directory must be ours and
  // closed to group and others.
  std::string control_dir;
  // Signal that opens a window of default_window_ms; 0 disables the signal trigger.
  int signal_number = SIGUSR2;
  // When the application already has a handler for signal_number at Start(), the control plane
  // leaves it alone and the signal trigger stays off, unless this is set (then the application's
  // handler stops being called). See docs/CONTROL.md.
  bool take_over_app_signal_handler = false;
  uint32_t default_window_ms = 5000;
  size_t max_request_bytes = 64 * 1024;
  // A connection must deliver each complete request within this time (from accept or from the
  // previous reply), or it is closed and counted in `timeouts`.
  uint32_t read_timeout_ms = 2000;
  size_t max_connections = 16;
  size_t max_scheduled_windows = 16;
  // Discovery registry for `<pid>.sock` symlinks; empty: DefaultRegistryDir(). When it equals
  // control_dir no symlink is made.
  std::string registry_dir;
};

// Cumulative since Start(). Readable from any thread.
struct ControlCounters {
  uint64_t connections = 0;       // accepted and allowed
  uint64_t requests = 0;          // well-formed requests answered
  uint64_t error_replies = 0;     // requests answered with ok=false (validation or target errors)
  uint64_t refused_peers = 0;     // SO_PEERCRED uid neither ours nor root
  uint64_t rejected_connections = 0;  // over max_connections
  uint64_t malformed = 0;         // unparsable or empty requests
  uint64_t oversized = 0;         // length prefix above max_request_bytes
  uint64_t timeouts = 0;          // closed by the read timeout
  uint64_t signals = 0;           // signal triggers received
  uint64_t window_errors = 0;     // OpenWindow failures of signal and scheduled triggers (no reply)
  uint64_t windows_scheduled = 0;
  uint64_t handler_exceptions = 0;  // exceptions caught at the boundary (target or internal)
  uint64_t accept_errors = 0;  // accept failed (out of descriptors or memory): retried after 100 ms
};

// The answer to one request frame, and whether the connection ends after it.
struct RequestOutcome {
  pb::ControlReply reply;
  bool close_after = false;
};

// Threading: construct anywhere; Start(), Stop(), socket_path() and signal_trigger_active() are called
// on the control thread (the one running io.run()) or before io.run() starts. counters() may be called
// from any thread. The io_context must outlive the ControlPlane; the ControlTarget must outlive Stop().
// Handlers still queued in the io_context after Stop() (or after destruction) do nothing.
class ControlPlane {
 public:
  ControlPlane(boost::asio::io_context& io, ControlOptions options, ControlTarget& target);
  ~ControlPlane();  // calls Stop() if needed
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // Creates the directories, the socket (0600, close-on-exec), the registry symlink and the signal
  // trigger, and starts accepting. Errors leave nothing behind. Call once.
  Expected<void> Start();

  // Closes the listener, every connection, the signal trigger and pending scheduled windows; removes
  // the socket and the registry entry; restores the signal disposition that was there before Start()
  // (or the application's own handler if it replaced ours meanwhile). Idempotent.
  void Stop();

  ControlCounters counters() const;
  const std::string& socket_path() const;
  // True while our handler is still the installed one for the signal (the application may replace it).
  bool signal_trigger_active() const;

  // A connection's request handling without the socket: what each connection runs for a length
  // prefix and for the body that follows it. Public so that the control-protocol fuzzer
  // (tests/fuzz/control_fuzz.cc) and the tests drive exactly this code with arbitrary bytes. Control
  // thread only; works before Start() (no socket needed) and after Stop() (requests are refused).
  // CheckRequestLength: the error reply that ends the connection when `length` is above
  // max_request_bytes (counted in `oversized`), else nullopt.
  std::optional<pb::ControlReply> CheckRequestLength(uint32_t length);
  // HandleRequestBody: parses `body` as a ControlRequest, validates it and calls the target. Bytes
  // that do not parse, or a request with nothing set (also an unknown request type), are answered
  // with `malformed request ...` and end the connection. Never throws.
  RequestOutcome HandleRequestBody(std::string_view body);

  class Core;

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace cupmon::control

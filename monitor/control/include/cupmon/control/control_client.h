// Client side of the control socket, used by cupmonctl and the tests: find a monitored process by
// pid, send one request with a deadline, list the processes registered on this host.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/base/error.h"  // std::expected, or its fallback under clang 14

namespace cupmon::control {

struct ClientError {
  enum class Code {
    kNotMonitored,  // no registry entry / socket for that pid
    kConnect,       // the socket exists but connect() failed (monitor gone, permissions)
    kTimeout,       // no complete reply before the deadline
    kProtocol,      // connection closed early, bad length or unparsable reply
    kUntrusted,     // the socket is served by another user, or the registry is not safe to use
  };
  Code code;
  std::string message;
};

template <typename T>
using ClientExpected = std::expected<T, ClientError>;

// Resolves the socket of `pid` through `<registry_dir>/<pid>.sock`. The registry must be a
// directory of our effective uid that nobody else can enter, as the monitor makes it (kUntrusted
// otherwise); a missing registry means nothing is monitored.
ClientExpected<std::string> FindSocket(int pid, const std::string& registry_dir);

// Connects to `socket_path`, sends `request` and waits for the reply, all within `timeout`. Blocking;
// opens one connection per call (close-on-exec). Before sending anything it checks who serves the
// socket (SO_PEERCRED): our effective uid or root, else kUntrusted, so that a socket someone else
// planted where we look never receives our request nor answers it.
ClientExpected<pb::ControlReply> Call(const std::string& socket_path, const pb::ControlRequest& request,
                                      std::chrono::milliseconds timeout);

struct MonitoredProcess {
  int pid = 0;
  std::string socket_path;
  std::string command;  // /proc/<pid>/cmdline, spaces between arguments; empty if unreadable
};

// Lists `<registry_dir>/<pid>.sock` entries whose process is alive and whose socket exists. With
// `remove_stale`, entries of dead processes or vanished sockets are deleted (best effort), relative
// to the vetted registry directory. A registry that fails FindSocket's checks is kUntrusted; a
// missing one gives an empty list.
ClientExpected<std::vector<MonitoredProcess>> ListMonitored(const std::string& registry_dir,
                                                            bool remove_stale);

}  // namespace cupmon::control

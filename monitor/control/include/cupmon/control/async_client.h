// Asynchronous control-socket client on a Boost.Asio io_context, for the node agent (cupmonctl
// serve, cupmonctl window --job): many processes asked at once, each under its own deadline.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <boost/asio/io_context.hpp>

#include "cupmon.pb.h"
#include "cupmon/control/control_client.h"

namespace cupmon::control {

using CallDone = std::function<void(ClientExpected<pb::ControlReply>)>;

// Sends `request` to `socket_path` and calls `done` exactly once, on the io_context's thread, with
// the reply or an error, at the latest `timeout` after this call (kTimeout): a process whose socket
// accepts and never answers costs its deadline, never more. The same rules as Call(): the socket's
// server must run as our effective uid or root (SO_PEERCRED, checked before anything is sent),
// replies over 16 MiB are refused, descriptors are close-on-exec. Call on the io thread (or before
// run()). `done` is never called from inside AsyncCall itself (errors found at once are posted).
void AsyncCall(boost::asio::io_context& io, const std::string& socket_path,
               const pb::ControlRequest& request, std::chrono::milliseconds timeout, CallDone done);

}  // namespace cupmon::control

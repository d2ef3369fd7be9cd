// AsyncCall: one control request over a non-blocking Unix socket with asio, a deadline timer and
// the peer-credential check of the blocking client.
#include "cupmon/control/async_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "cupmon/control/protocol.h"

namespace cupmon::control {
namespace {

namespace asio = boost::asio;
using Local = asio::local::stream_protocol;

constexpr uint32_t kMaxReplyBytes = 16u << 20;

std::unexpected<ClientError> Error(ClientError::Code code, std::string message) {
  return std::unexpected(ClientError{code, std::move(message)});
}

// One request in flight. Handlers hold a shared_ptr; Finish() runs `done_` once and closes.
class CallState : public std::enable_shared_from_this<CallState> {
 public:
  CallState(asio::io_context& io, std::string path, CallDone done)
      : io_(io), socket_(io), timer_(io), path_(std::move(path)), done_(std::move(done)) {}

  void Start(const pb::ControlRequest& request, std::chrono::milliseconds timeout) {
    auto self = shared_from_this();
    timer_.expires_after(timeout);
    timer_.async_wait([self](const boost::system::error_code& ec) noexcept {
      if (ec) return;  // cancelled: the call finished first
      self->Finish(Error(ClientError::Code::kTimeout,
                         "no reply from " + self->path_ + " within the deadline"));
    });
    if (auto connected = Connect(); !connected) {
      // Posted, so that `done` never runs inside AsyncCall (callers may hold state being built).
      asio::post(io_, [self, error = connected.error()]() noexcept {
        self->Finish(std::unexpected(error));
      });
      return;
    }
    out_ = EncodeFrame(request);
    asio::async_write(
        socket_, asio::buffer(out_), [self](const boost::system::error_code& ec, size_t) noexcept {
          if (ec)
            return self->Finish(Error(ClientError::Code::kProtocol,
                                      "send to " + self->path_ + ": " + ec.message()));
          self->ReadPrefix();
        });
  }

 private:
  ClientExpected<void> Connect() {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.size() >= sizeof(addr.sun_path)) {
      return (Error(ClientError::Code::kConnect, "socket path too long: " + path_));
    }
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      return (Error(ClientError::Code::kConnect, std::string("socket: ") + std::strerror(errno)));
    }
    boost::system::error_code ec;
    socket_.assign(Local(), fd, ec);
    if (ec) {
      ::close(fd);
      return (Error(ClientError::Code::kConnect, "socket: " + ec.message()));
    }
    // Unix sockets connect at once or fail (EAGAIN: the listener's backlog is full).
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      return (Error(ClientError::Code::kConnect,
                    "cannot connect to " + path_ + ": " + std::strerror(errno)));
    }
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      return (Error(ClientError::Code::kUntrusted,
                    "cannot read who serves " + path_ + ": " + std::strerror(errno)));
    }
    if (!PeerAllowed(cred.uid, ::geteuid())) {
      return (Error(ClientError::Code::kUntrusted,
                    "refusing " + path_ + ": it is served by uid " + std::to_string(cred.uid) +
                        " (pid " + std::to_string(cred.pid) + "), not by uid " +
                        std::to_string(::geteuid()) + " or root; nothing was sent"));
    }
    return {};
  }

  void ReadPrefix() {
    auto self = shared_from_this();
    asio::async_read(socket_, asio::buffer(prefix_),
                     [self](const boost::system::error_code& ec, size_t) noexcept {
                       if (ec) return self->Finish(self->ReadError(ec));
                       const uint32_t length = DecodeLengthPrefix(self->prefix_);
                       if (length > kMaxReplyBytes) {
                         return self->Finish(Error(ClientError::Code::kProtocol,
                                                   "reply from " + self->path_ + " too large (" +
                                                       std::to_string(length) + " bytes)"));
                       }
                       self->ReadBody(length);
                     });
  }

  void ReadBody(uint32_t length) {
    body_.resize(length);
    auto self = shared_from_this();
    asio::async_read(
        socket_, asio::buffer(body_), [self](const boost::system::error_code& ec, size_t) noexcept {
          if (ec) return self->Finish(self->ReadError(ec));
          pb::ControlReply reply;
          if (!reply.ParseFromString(self->body_)) {
            return self->Finish(
                Error(ClientError::Code::kProtocol, "unparsable reply from " + self->path_));
          }
          self->Finish(std::move(reply));
        });
  }

  std::unexpected<ClientError> ReadError(const boost::system::error_code& ec) const {
    if (ec == asio::error::eof) {
      return Error(ClientError::Code::kProtocol, path_ + ": the monitor closed the connection");
    }
    return Error(ClientError::Code::kProtocol, "reading from " + path_ + ": " + ec.message());
  }

  void Finish(ClientExpected<pb::ControlReply> result) noexcept {
    if (finished_) return;
    finished_ = true;
    boost::system::error_code ec;
    timer_.cancel();
    socket_.close(ec);
    try {
      CallDone done = std::move(done_);
      done(std::move(result));
    } catch (...) {
      // The caller's handler boundary: nothing escapes into io.run().
    }
  }

  asio::io_context& io_;
  Local::socket socket_;
  asio::steady_timer timer_;
  const std::string path_;
  CallDone done_;
  std::string out_;
  unsigned char prefix_[kLengthPrefixBytes] = {};
  std::string body_;
  bool finished_ = false;
};

}  // namespace

void AsyncCall(asio::io_context& io, const std::string& socket_path,
               const pb::ControlRequest& request, std::chrono::milliseconds timeout,
               CallDone done) {
  std::make_shared<CallState>(io, socket_path, std::move(done))->Start(request, timeout);
}

}  // namespace cupmon::control

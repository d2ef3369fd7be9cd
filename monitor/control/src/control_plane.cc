// ControlPlane: accepts control connections with accept4(SOCK_CLOEXEC), checks SO_PEERCRED, reads
// length-prefixed requests under a deadline, and turns signals and scheduled requests into windows.
#include "cupmon/control/control_plane.h"

#include "cupmon/base/accept_waiting.h"
#include "cupmon/base/fork_child_cleanup.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <climits>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_timer.hpp>
#include <boost/asio/write.hpp>

#include "cupmon/base/check.h"
#include "cupmon/control/private_dir.h"
#include "cupmon/control/protocol.h"

#ifndef CUPMON_VERSION_STRING
#define CUPMON_VERSION_STRING "unknown"
#endif

namespace cupmon::control {
namespace {

namespace asio = boost::asio;
using Stream = asio::local::stream_protocol;

// `reply` with every string field made UTF-8 (ToValidUtf8): the status carries the process's
// command line, paths and job id as they are, and an error may quote a path.
pb::ControlReply WithUtf8Text(const pb::ControlReply& reply) {
  pb::ControlReply out = reply;
  auto fix = [](std::string* text) {
    if (!IsValidUtf8(*text)) *text = ToValidUtf8(*text);
  };
  fix(out.mutable_error());
  fix(out.mutable_message());
  if (out.has_status()) {
    pb::StatusReply* s = out.mutable_status();
    fix(s->mutable_version());
    fix(s->mutable_current_file());
    fix(s->mutable_output_dir());
    fix(s->mutable_job_id());
    for (std::string& kind : *s->mutable_enabled_kinds()) fix(&kind);
    for (std::string& arg : *s->mutable_command_line()) fix(&arg);
  }
  return out;
}

pb::ControlReply ErrorReply(std::string message) {
  pb::ControlReply reply;
  reply.set_ok(false);
  reply.set_error(std::move(message));
  return reply;
}

std::string FormatUnixMs(int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char ms[8];
  std::snprintf(ms, sizeof(ms), ".%03dZ", static_cast<int>(unix_ms % 1000));
  return std::string(buf, n) + ms;
}

bool SameHandler(const struct sigaction& a, const struct sigaction& b) {
  if ((a.sa_flags & SA_SIGINFO) != (b.sa_flags & SA_SIGINFO)) return false;
  if ((a.sa_flags & SA_SIGINFO) != 0) return a.sa_sigaction == b.sa_sigaction;
  return a.sa_handler == b.sa_handler;
}

// Left behind by Stop() where SIG_DFL was, so that a stray trigger signal after stop does not end
// the process. Not the application's: a later Start() takes the signal again.
void QuietAfterStop(int) {}

bool IsRealHandler(const struct sigaction& action) {
  if ((action.sa_flags & SA_SIGINFO) != 0) return action.sa_sigaction != nullptr;
  return action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN &&
         action.sa_handler != QuietAfterStop;
}

std::string Errno(const std::string& what, int err) { return what + ": " + std::strerror(err); }

}  // namespace

class Session;

// Everything the asynchronous handlers touch. Handlers hold a shared_ptr to it, so a handler that is
// still queued after Stop() or after ~ControlPlane finds `stopped_` and returns.
// Threading: all members are used on the control thread only, except `counters_` (relaxed atomics,
// read by counters() from any thread).
class ControlPlane::Core : public std::enable_shared_from_this<ControlPlane::Core> {
 public:
  Core(asio::io_context& io, ControlOptions options, ControlTarget& target)
      : io_(io), options_(std::move(options)), target_(target), acceptor_(io), signals_(io),
        accept_retry_(io) {}

  Expected<void> Start();
  void Stop();
  bool SignalTriggerActive() const;
  ControlCounters Snapshot() const;
  pb::ControlReply Dispatch(const pb::ControlRequest& request) noexcept;
  std::optional<pb::ControlReply> CheckRequestLength(uint32_t length);
  RequestOutcome HandleRequestBody(std::string_view body) noexcept;

  const ControlOptions& options() const { return options_; }
  bool stopped() const { return stopped_; }
  const std::string& socket_path() const { return socket_path_; }

  struct AtomicCounters {
    std::atomic<uint64_t> connections{0}, requests{0}, error_replies{0}, refused_peers{0},
        rejected_connections{0}, malformed{0}, oversized{0}, timeouts{0}, signals{0},
        window_errors{0}, windows_scheduled{0}, handler_exceptions{0}, accept_errors{0};
  };
  static void Bump(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }
  AtomicCounters counters_;

 private:
  Expected<void> InstallSignal();
  void RemoveSignal();
  void WaitSignal();
  void OnSignal(const boost::system::error_code& ec) noexcept;
  void AcceptNext();
  void OnAcceptReady(const boost::system::error_code& ec) noexcept;
  void OnConnection(int fd);
  pb::ControlReply OpenWindow(const pb::OpenWindowRequest& request);
  pb::ControlReply CloseWindow();
  void OnScheduled(const boost::system::error_code& ec, uint64_t key,
                   const WindowRequest& request) noexcept;
  void RemoveFiles();

  asio::io_context& io_;
  const ControlOptions options_;
  ControlTarget& target_;
  Stream::acceptor acceptor_;
  asio::signal_set signals_;
  asio::steady_timer accept_retry_;
  std::string socket_path_;
  std::string registry_link_;
  int control_dir_fd_ = -1;   // vetted control_dir, from Start() to Stop()
  int registry_dir_fd_ = -1;  // vetted registry_dir, when a registry entry is made
  bool started_ = false;
  bool stopped_ = false;
  bool socket_bound_ = false;
  bool signal_installed_ = false;
  struct sigaction previous_action_ {};
  struct sigaction our_action_ {};
  std::vector<std::weak_ptr<Session>> sessions_;
  std::map<uint64_t, std::shared_ptr<asio::system_timer>> scheduled_;
  uint64_t next_schedule_key_ = 0;
};

// One accepted connection: reads requests one after another until the peer closes, an error reply
// that ends the connection is sent, the deadline passes or the plane stops.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(std::shared_ptr<ControlPlane::Core> core, Stream::socket socket)
      : core_(std::move(core)), socket_(std::move(socket)), deadline_(socket_.get_executor()) {}

  void Start() { ReadHeader(); }
  void Refuse(std::string message) { Send(ErrorReply(std::move(message)), /*close_after=*/true); }

  void Close() noexcept {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ec;
    deadline_.cancel();
    socket_.shutdown(Stream::socket::shutdown_both, ec);
    socket_.close(ec);
  }

 private:
  void ArmDeadline() {
    deadline_.expires_after(std::chrono::milliseconds(core_->options().read_timeout_ms));
    deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) noexcept {
      if (ec || self->closed_) return;  // cancelled or re-armed
      ControlPlane::Core::Bump(self->core_->counters_.timeouts);
      self->Close();
    });
  }

  void ReadHeader() {
    if (closed_ || core_->stopped()) return Close();
    ArmDeadline();
    asio::async_read(socket_, asio::buffer(header_),
                     [self = shared_from_this()](const boost::system::error_code& ec, size_t) noexcept {
                       self->Guard([&] { self->OnHeader(ec); });
                     });
  }

  void OnHeader(const boost::system::error_code& ec) {
    if (ec || closed_ || core_->stopped()) return Close();  // EOF, timeout or stop
    const uint32_t length = DecodeLengthPrefix(header_);
    if (auto refused = core_->CheckRequestLength(length)) {
      return Send(*refused, /*close_after=*/true);
    }
    body_.assign(length, '\0');
    asio::async_read(socket_, asio::buffer(body_),
                     [self = shared_from_this()](const boost::system::error_code& body_ec,
                                                 size_t) noexcept {
                       self->Guard([&] { self->OnBody(body_ec); });
                     });
  }

  void OnBody(const boost::system::error_code& ec) {
    if (ec || closed_ || core_->stopped()) return Close();
    const RequestOutcome outcome = core_->HandleRequestBody(body_);
    Send(outcome.reply, outcome.close_after);
  }

  void Send(const pb::ControlReply& reply, bool close_after) {
    out_ = EncodeFrame(WithUtf8Text(reply));
    ArmDeadline();  // a peer that never reads cannot hold the connection forever either
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this(), close_after](const boost::system::error_code& ec,
                                                               size_t) noexcept {
                        self->Guard([&] {
                          if (ec || close_after) return self->Close();
                          self->ReadHeader();
                        });
                      });
  }

  // Asio handler boundary: nothing escapes into io.run().
  template <typename F>
  void Guard(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      ControlPlane::Core::Bump(core_->counters_.handler_exceptions);
      Close();
    }
  }

  std::shared_ptr<ControlPlane::Core> core_;
  Stream::socket socket_;
  asio::steady_timer deadline_;
  unsigned char header_[kLengthPrefixBytes] = {};
  std::string body_;
  std::string out_;
  bool closed_ = false;
};

Expected<void> ControlPlane::Core::Start() {
  CUPMON_CHECK(!started_ && !stopped_);
  if (options_.control_dir.empty()) return MakeError("control_dir is not set");
  if (auto valid = ValidateWindowDurationMs(options_.default_window_ms); !valid) {
    return MakeError("default window: " + valid.error().message);
  }
  std::string dir = options_.control_dir;
  if (dir.front() != '/') {  // the registry symlink must hold an absolute path
    char cwd[4096];
    if (::getcwd(cwd, sizeof(cwd)) == nullptr) return MakeError(Errno("getcwd", errno), errno);
    dir = std::string(cwd) + "/" + dir;
  }
  socket_path_ = SocketFileName(dir, ::getpid());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof(addr.sun_path)) {
    return MakeError("control socket path " + socket_path_ + " is longer than " +
                     std::to_string(sizeof(addr.sun_path) - 1) + " bytes; choose a shorter control_dir");
  }
  // Held open until Stop(): the socket and the registry entry are made and removed relative to the
  // directories that were vetted, whatever happens to their paths meanwhile.
  // A forked child keeps neither (fork_child_cleanup.h).
  auto control_fd = OpenPrivateDir(options_.control_dir);
  if (!control_fd) return cupmon::unexpected(control_fd.error());
  control_dir_fd_ = *control_fd;
  CloseInForkedChild(control_dir_fd_);

  const auto close_dirs = [this] {
    for (int* fd : {&control_dir_fd_, &registry_dir_fd_}) {
      ForgetForkedChildFd(*fd);
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
  };
  std::string registry_dir = options_.registry_dir.empty() ? DefaultRegistryDir() : options_.registry_dir;
  if (registry_dir != options_.control_dir && registry_dir != dir) {
    auto registry_fd = OpenPrivateDir(registry_dir);
    if (!registry_fd) {
      close_dirs();
      return MakeError("registry: " + registry_fd.error().message, registry_fd.error().sys_errno);
    }
    registry_dir_fd_ = *registry_fd;
    CloseInForkedChild(registry_dir_fd_);
    registry_link_ = SocketFileName(registry_dir, ::getpid());
  }
  const std::string entry = SocketBaseName(::getpid());
  // bind() takes a path, not a directory descriptor: name the vetted directory through
  // /proc/self/fd so the socket lands in it even if its path was swapped for a symlink since.
  // Without /proc, the path itself (then only the 0700 check guards it).
  const std::string via_fd = "/proc/self/fd/" + std::to_string(control_dir_fd_) + "/" + entry;
  const std::string& bind_path = ::access(("/proc/self/fd/" + std::to_string(control_dir_fd_)).c_str(),
                                          X_OK) == 0 && via_fd.size() < sizeof(addr.sun_path)
                                     ? via_fd
                                     : socket_path_;
  std::memcpy(addr.sun_path, bind_path.c_str(), bind_path.size() + 1);

  // Created close-on-exec and non-blocking in one call: asio's acceptor would use plain socket().
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    const int err = errno;
    close_dirs();
    return MakeError(Errno("socket(AF_UNIX)", err), err);
  }
  boost::system::error_code ec;
  acceptor_.assign(Stream(), fd, ec);
  if (ec) {
    ::close(fd);
    close_dirs();
    return MakeError("cannot register the control socket: " + ec.message());
  }
  CloseInForkedChild(fd);  // a forked child must not keep listening on the parent's socket
  const auto fail = [this](std::string message, int err) {
    boost::system::error_code ignored;
    ForgetForkedChildFd(acceptor_.native_handle());
    acceptor_.close(ignored);
    RemoveFiles();
    return MakeError(std::move(message), err);
  };
  // Our pid owns this name: a file there is left over from an earlier process with the same pid.
  ::unlinkat(control_dir_fd_, entry.c_str(), 0);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return fail(Errno("bind " + socket_path_, errno), errno);
  }
  socket_bound_ = true;
  // The directory is 0700, so nobody can reach the socket between bind() and this chmod.
  if (::fchmodat(control_dir_fd_, entry.c_str(), 0600, 0) != 0) {
    return fail(Errno("chmod " + socket_path_, errno), errno);
  }
  if (::listen(fd, 16) != 0) return fail(Errno("listen " + socket_path_, errno), errno);
  if (!registry_link_.empty()) {
    ::unlinkat(registry_dir_fd_, entry.c_str(), 0);
    if (::symlinkat(socket_path_.c_str(), registry_dir_fd_, entry.c_str()) != 0) {
      const int err = errno;
      const std::string message = Errno("registry symlink " + registry_link_, err);
      registry_link_.clear();
      return fail(message, err);
    }
  }
  if (auto installed = InstallSignal(); !installed) {
    return fail(installed.error().message, installed.error().sys_errno);
  }
  started_ = true;
  AcceptNext();
  return {};
}

Expected<void> ControlPlane::Core::InstallSignal() {
  const int sig = options_.signal_number;
  if (sig == 0) return {};
  struct sigaction previous {};
  if (::sigaction(sig, nullptr, &previous) != 0) {
    return MakeError(Errno("signal " + std::to_string(sig), errno), errno);
  }
  if (IsRealHandler(previous) && !options_.take_over_app_signal_handler) {
    return {};  // the application's handler keeps the signal; the trigger stays off (documented)
  }
  boost::system::error_code ec;
  signals_.add(sig, ec);
  if (ec) return MakeError("cannot handle signal " + std::to_string(sig) + ": " + ec.message());
  // Asio installs its handler without SA_RESTART. Add it, so that the application's blocking calls
  // interrupted by a trigger signal resume instead of failing with EINTR.
  struct sigaction ours {};
  ::sigaction(sig, nullptr, &ours);
  ours.sa_flags |= SA_RESTART;
  ::sigaction(sig, &ours, nullptr);
  previous_action_ = previous;
  // A forked child gets the application's disposition back: our handler there would feed a pipe
  // that no thread reads.
  RestoreInForkedChild(sig, previous);
  our_action_ = ours;
  signal_installed_ = true;
  WaitSignal();
  return {};
}

void ControlPlane::Core::RemoveSignal() {
  if (!signal_installed_) return;
  signal_installed_ = false;
  const int sig = options_.signal_number;
  struct sigaction now {};
  ::sigaction(sig, nullptr, &now);
  const bool still_ours = SameHandler(now, our_action_);
  boost::system::error_code ec;
  signals_.cancel(ec);
  signals_.clear(ec);  // leaves SIG_DFL behind: put back what belongs there
  ForgetForkedChildSignal(sig);
  if (still_ours && (previous_action_.sa_flags & SA_SIGINFO) == 0 &&
      (previous_action_.sa_handler == SIG_DFL || previous_action_.sa_handler == QuietAfterStop)) {
    // A stray trigger signal after stop must not end the process (SIGUSR2's default action):
    // leave a handler that does nothing. Handlers are reset at exec, so children are unaffected.
    struct sigaction quiet {};
    quiet.sa_handler = QuietAfterStop;
    sigemptyset(&quiet.sa_mask);
    quiet.sa_flags = SA_RESTART;
    ::sigaction(sig, &quiet, nullptr);
    return;
  }
  ::sigaction(sig, still_ours ? &previous_action_ : &now, nullptr);
}

bool ControlPlane::Core::SignalTriggerActive() const {
  if (!signal_installed_) return false;
  struct sigaction now {};
  ::sigaction(options_.signal_number, nullptr, &now);
  return SameHandler(now, our_action_);
}

void ControlPlane::Core::WaitSignal() {
  signals_.async_wait([self = shared_from_this()](const boost::system::error_code& ec, int) noexcept {
    self->OnSignal(ec);
  });
}

void ControlPlane::Core::OnSignal(const boost::system::error_code& ec) noexcept {
  if (ec || stopped_) return;
  Bump(counters_.signals);
  try {
    WindowRequest request;
    request.duration_ms = options_.default_window_ms;
    request.source = pb::TRIGGER_SIGNAL;
    if (!target_.OpenWindow(request)) Bump(counters_.window_errors);
  } catch (...) {
    Bump(counters_.handler_exceptions);
    Bump(counters_.window_errors);
  }
  try {
    WaitSignal();
  } catch (...) {
    Bump(counters_.handler_exceptions);
  }
}

void ControlPlane::Core::AcceptNext() {
  acceptor_.async_wait(Stream::acceptor::wait_read,
                       [self = shared_from_this()](const boost::system::error_code& ec) noexcept {
                         self->OnAcceptReady(ec);
                       });
}

void ControlPlane::Core::OnAcceptReady(const boost::system::error_code& ec) noexcept {
  if (stopped_ || ec == asio::error::operation_aborted) return;
  try {
    const auto take = [this](int fd) { OnConnection(fd); };
    if (AcceptWaiting(acceptor_.native_handle(), take) == AcceptOutcome::kDrained)
      return AcceptNext();
    Bump(counters_.accept_errors);
  } catch (...) {
    Bump(counters_.handler_exceptions);
  }
  // Out of descriptors, or an exception: accepting resumes after a pause, neither spinning on a
  // listener that stays readable nor stopping for good.
  const auto resume = [self = shared_from_this()] { self->OnAcceptReady({}); };
  if (!ResumeAcceptingLater(accept_retry_, resume)) Bump(counters_.handler_exceptions);
}

void ControlPlane::Core::OnConnection(int fd) {
  std::erase_if(sessions_, [](const std::weak_ptr<Session>& s) { return s.expired(); });
  if (sessions_.size() >= options_.max_connections) {
    Bump(counters_.rejected_connections);
    ::close(fd);
    return;
  }
  ucred cred{};
  socklen_t cred_len = sizeof(cred);
  const bool have_cred = ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0;
  Stream::socket socket(io_);
  boost::system::error_code ec;
  socket.assign(Stream(), fd, ec);
  if (ec) {
    ::close(fd);
    return;
  }
  auto session = std::make_shared<Session>(shared_from_this(), std::move(socket));
  sessions_.push_back(session);
  const uid_t own = ::geteuid();
  if (!have_cred || !PeerAllowed(cred.uid, own)) {
    Bump(counters_.refused_peers);
    session->Refuse(have_cred ? "permission denied: peer uid " + std::to_string(cred.uid) +
                                    " is neither the monitored process's uid " + std::to_string(own) +
                                    " nor root"
                              : "permission denied: cannot read peer credentials");
    return;
  }
  Bump(counters_.connections);
  session->Start();
}

std::optional<pb::ControlReply> ControlPlane::Core::CheckRequestLength(uint32_t length) {
  if (length <= options_.max_request_bytes) return std::nullopt;
  Bump(counters_.oversized);
  return ErrorReply("request of " + std::to_string(length) + " bytes exceeds the limit of " +
                    std::to_string(options_.max_request_bytes) + " bytes");
}

RequestOutcome ControlPlane::Core::HandleRequestBody(std::string_view body) noexcept {
  RequestOutcome outcome;
  try {
    pb::ControlRequest request;
    // An unknown request type (a newer client's oneof field) parses as an unknown field with
    // nothing set: it is malformed to this server, not an empty status request.
    if (body.size() > static_cast<size_t>(INT32_MAX) || !ControlRequestParsesQuietly(body) ||
        !request.ParseFromArray(body.data(), static_cast<int>(body.size())) ||
        request.request_case() == pb::ControlRequest::REQUEST_NOT_SET) {
      Bump(counters_.malformed);
      outcome.reply = ErrorReply("malformed request: " + std::to_string(body.size()) +
                                 " bytes that are not a ControlRequest with a known request set");
      outcome.close_after = true;
      return outcome;
    }
    outcome.reply = Dispatch(request);
  } catch (...) {  // allocation failure: answer if possible, and end the connection
    Bump(counters_.handler_exceptions);
    outcome.close_after = true;
    try {
      outcome.reply = ErrorReply("internal error");
    } catch (...) {
      outcome.reply.Clear();
    }
  }
  return outcome;
}

pb::ControlReply ControlPlane::Core::Dispatch(const pb::ControlRequest& request) noexcept {
  pb::ControlReply reply;
  try {
    if (stopped_) {
      reply = ErrorReply("the monitor is stopping");
    } else {
      switch (request.request_case()) {
        case pb::ControlRequest::kStatus: {
          *reply.mutable_status() = target_.Status();
          if (reply.status().pid() == 0) reply.mutable_status()->set_pid(static_cast<uint32_t>(::getpid()));
          if (reply.status().version().empty()) reply.mutable_status()->set_version(CUPMON_VERSION_STRING);
          reply.set_ok(true);
          break;
        }
        case pb::ControlRequest::kOpenWindow:
          reply = OpenWindow(request.open_window());
          break;
        case pb::ControlRequest::kCloseWindow:
          reply = CloseWindow();
          break;
        case pb::ControlRequest::kFlush:
        case pb::ControlRequest::kRotate: {
          const bool flush = request.request_case() == pb::ControlRequest::kFlush;
          const Expected<void> done = flush ? target_.Flush() : target_.Rotate();
          reply = done ? pb::ControlReply() : ErrorReply(done.error().message);
          reply.set_ok(done.has_value());
          if (done) reply.set_message(flush ? "flushed" : "rotated");
          break;
        }
        case pb::ControlRequest::REQUEST_NOT_SET:
          reply = ErrorReply("empty request");
          break;
      }
    }
  } catch (const std::exception& e) {
    Bump(counters_.handler_exceptions);
    reply = ErrorReply(std::string("internal error: ") + e.what());
  } catch (...) {
    Bump(counters_.handler_exceptions);
    reply = ErrorReply("internal error");
  }
  Bump(counters_.requests);
  if (!reply.ok()) Bump(counters_.error_replies);
  return reply;
}

pb::ControlReply ControlPlane::Core::OpenWindow(const pb::OpenWindowRequest& request) {
  if (auto valid = ValidateWindowDurationMs(request.duration_ms()); !valid) {
    return ErrorReply(valid.error().message);
  }
  auto kinds = NormalizeWindowKinds({request.kinds().begin(), request.kinds().end()});
  if (!kinds) return ErrorReply(kinds.error().message);
  if (request.when_slower() != 0) {
    if (auto valid = ValidateSlowerFactor(request.when_slower()); !valid)
      return ErrorReply(valid.error().message);
    if (request.at_unix_ms() != 0)
      return ErrorReply("--when-slower and --at/--align exclude each other");
    WindowRequest armed;
    armed.duration_ms = request.duration_ms();
    armed.kinds = std::move(*kinds);
    armed.source = pb::TRIGGER_AUTO;
    armed.when_slower = request.when_slower();
    const Expected<uint32_t> id = target_.OpenWindow(armed);
    if (!id) return ErrorReply(id.error().message);
    char factor[32];
    std::snprintf(factor, sizeof(factor), "%g", armed.when_slower);
    pb::ControlReply reply;
    reply.set_ok(true);
    reply.set_message(std::string("armed: a window of ") + std::to_string(armed.duration_ms) +
                      " ms opens at the first step slower than " + factor +
                      " x the median step (once)");
    return reply;
  }
  const int64_t now = NowUnixMs();
  const auto delay = ScheduleDelayMs(request.at_unix_ms(), now);
  if (!delay) return ErrorReply(delay.error().message);

  WindowRequest window;
  window.duration_ms = request.duration_ms();
  window.kinds = std::move(*kinds);
  window.at_unix_ms = request.at_unix_ms();
  window.source = pb::TRIGGER_SOCKET;
  pb::ControlReply reply;
  if (*delay == 0) {
    const Expected<uint32_t> id = target_.OpenWindow(window);
    if (!id) return ErrorReply(id.error().message);
    reply.set_ok(true);
    reply.set_window_id(*id);
    reply.set_message("window " + std::to_string(*id) + " open for " +
                      std::to_string(window.duration_ms) + " ms");
    return reply;
  }
  if (scheduled_.size() >= options_.max_scheduled_windows) {
    return ErrorReply("too many scheduled windows (" + std::to_string(scheduled_.size()) +
                      "); close cancels them");
  }
  // A system_timer waits for the wall-clock instant itself, which is what aligns windows across hosts.
  auto timer = std::make_shared<asio::system_timer>(
      io_, std::chrono::system_clock::time_point(std::chrono::milliseconds(request.at_unix_ms())));
  const uint64_t key = next_schedule_key_++;
  scheduled_.emplace(key, timer);
  timer->async_wait([self = shared_from_this(), key, window](const boost::system::error_code& ec) noexcept {
    self->OnScheduled(ec, key, window);
  });
  Bump(counters_.windows_scheduled);
  reply.set_ok(true);
  reply.set_message("window scheduled for " + FormatUnixMs(request.at_unix_ms()) + " (in " +
                    std::to_string(*delay) + " ms) for " + std::to_string(window.duration_ms) + " ms");
  return reply;
}

void ControlPlane::Core::OnScheduled(const boost::system::error_code& ec, uint64_t key,
                                     const WindowRequest& request) noexcept {
  if (stopped_ || ec == asio::error::operation_aborted) return;
  scheduled_.erase(key);
  try {
    if (!target_.OpenWindow(request)) Bump(counters_.window_errors);
  } catch (...) {
    Bump(counters_.handler_exceptions);
    Bump(counters_.window_errors);
  }
}

pb::ControlReply ControlPlane::Core::CloseWindow() {
  // Close also cancels windows that were scheduled and have not opened: it is the one way to take
  // back a mistaken --at.
  const size_t cancelled = scheduled_.size();
  for (auto& [key, timer] : scheduled_) timer->cancel();
  scheduled_.clear();
  const Expected<void> closed = target_.CloseWindow();
  if (!closed && cancelled == 0) return ErrorReply(closed.error().message);
  pb::ControlReply reply;
  reply.set_ok(true);
  std::string message = closed ? "window closed" : closed.error().message;
  if (cancelled > 0) message += "; cancelled " + std::to_string(cancelled) + " scheduled window(s)";
  reply.set_message(std::move(message));
  return reply;
}

void ControlPlane::Core::RemoveFiles() {
  const std::string entry = SocketBaseName(::getpid());
  if (!registry_link_.empty() && registry_dir_fd_ >= 0) {
    // Only remove the entry if it is still ours (a later process with our pid may have replaced it).
    char target[4096];
    const ssize_t n = ::readlinkat(registry_dir_fd_, entry.c_str(), target, sizeof(target));
    if (n > 0 && std::string(target, static_cast<size_t>(n)) == socket_path_) {
      ::unlinkat(registry_dir_fd_, entry.c_str(), 0);
    }
  }
  if (socket_bound_ && control_dir_fd_ >= 0) ::unlinkat(control_dir_fd_, entry.c_str(), 0);
  socket_bound_ = false;
  for (int* fd : {&control_dir_fd_, &registry_dir_fd_}) {
    ForgetForkedChildFd(*fd);
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void ControlPlane::Core::Stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ec;
  if (acceptor_.is_open()) ForgetForkedChildFd(acceptor_.native_handle());
  acceptor_.close(ec);
  accept_retry_.cancel();
  for (auto& weak : sessions_) {
    if (auto session = weak.lock()) session->Close();
  }
  sessions_.clear();
  for (auto& [key, timer] : scheduled_) timer->cancel();
  scheduled_.clear();
  RemoveSignal();
  RemoveFiles();
}

ControlCounters ControlPlane::Core::Snapshot() const {
  const auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  ControlCounters out;
  out.connections = get(counters_.connections);
  out.requests = get(counters_.requests);
  out.error_replies = get(counters_.error_replies);
  out.refused_peers = get(counters_.refused_peers);
  out.rejected_connections = get(counters_.rejected_connections);
  out.malformed = get(counters_.malformed);
  out.oversized = get(counters_.oversized);
  out.timeouts = get(counters_.timeouts);
  out.signals = get(counters_.signals);
  out.window_errors = get(counters_.window_errors);
  out.windows_scheduled = get(counters_.windows_scheduled);
  out.handler_exceptions = get(counters_.handler_exceptions);
  out.accept_errors = get(counters_.accept_errors);
  return out;
}

ControlPlane::ControlPlane(boost::asio::io_context& io, ControlOptions options, ControlTarget& target)
    : core_(std::make_shared<Core>(io, std::move(options), target)) {}

ControlPlane::~ControlPlane() { core_->Stop(); }

Expected<void> ControlPlane::Start() { return core_->Start(); }
void ControlPlane::Stop() { core_->Stop(); }
ControlCounters ControlPlane::counters() const { return core_->Snapshot(); }
const std::string& ControlPlane::socket_path() const { return core_->socket_path(); }
bool ControlPlane::signal_trigger_active() const { return core_->SignalTriggerActive(); }
std::optional<pb::ControlReply> ControlPlane::CheckRequestLength(uint32_t length) {
  return core_->CheckRequestLength(length);
}
RequestOutcome ControlPlane::HandleRequestBody(std::string_view body) {
  return core_->HandleRequestBody(body);
}

}  // namespace cupmon::control

// MetricsServer: a minimal HTTP/1.1 server for GET /metrics on the control io_context. Connections
// are accepted with accept4(SOCK_CLOEXEC), read under one deadline and closed after one response.
#include "cupmon/metrics/metrics_server.h"

#include "cupmon/base/accept_waiting.h"
#include "cupmon/base/fork_child_cleanup.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "cupmon/base/check.h"

namespace cupmon::metrics {
namespace {

namespace asio = boost::asio;
using Tcp = asio::ip::tcp;

std::string Errno(const std::string& what, int err) { return what + ": " + std::strerror(err); }

std::string EndpointText(const asio::ip::address& address, uint16_t port) {
  const std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(port);
}

struct Response {
  int status = 200;
  const char* reason = "OK";
  std::string body;
  bool allow_get = false;  // 405 carries "Allow: GET"
};

std::string Serialize(const Response& r) {
  const bool metrics = r.status == 200;
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + r.reason + "\r\n";
  out += metrics ? "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                 : "Content-Type: text/plain; charset=utf-8\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  if (r.allow_get) out += "Allow: GET\r\n";
  out += "Cache-Control: no-store\r\nConnection: close\r\n\r\n";
  out += r.body;
  return out;
}

Response Status(int status, const char* reason, std::string body) {
  Response r;
  r.status = status;
  r.reason = reason;
  r.body = std::move(body);
  return r;
}

bool IsTokenChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Where the header block ends (index just past the blank line), or npos while it is incomplete.
size_t HeaderEnd(std::string_view data) {
  const size_t crlf = data.find("\r\n\r\n");
  const size_t lf = data.find("\n\n");
  if (crlf == std::string_view::npos && lf == std::string_view::npos) return std::string_view::npos;
  if (crlf != std::string_view::npos && (lf == std::string_view::npos || crlf + 2 <= lf)) return crlf + 4;
  return lf + 2;
}

}  // namespace

class Session;

// State shared by the asynchronous handlers. Handlers hold a shared_ptr, so one still queued after
// Stop() or after ~MetricsServer finds `stopped_` and returns.
// Threading: everything on the io thread, except `counters_` (relaxed atomics, read from any thread).
class MetricsServer::Core : public std::enable_shared_from_this<MetricsServer::Core> {
 public:
  Core(asio::io_context& io, MetricsOptions options, MetricsSource* source,
       AsyncMetricsSource* async_source)
      : io_(io),
        options_(std::move(options)),
        source_(source),
        async_source_(async_source),
        acceptor_(io),
        accept_retry_(io) {}

  Expected<void> Start();
  void Stop();
  MetricsCounters Snapshot() const;
  // The response to a request head; nullopt for a valid scrape of an asynchronous source, which
  // the session then asks with Scrape().
  std::optional<Response> Handle(std::string_view request);
  void Scrape(std::function<void(Response)> reply);

  const MetricsOptions& options() const { return options_; }
  bool stopped() const { return stopped_; }
  uint16_t port() const { return port_; }

  struct AtomicCounters {
    std::atomic<uint64_t> connections{0}, scrapes{0}, not_found{0}, method_not_allowed{0},
        bad_requests{0}, oversized{0}, timeouts{0}, rejected_connections{0}, source_errors{0},
        handler_exceptions{0}, accept_errors{0};
  };
  static void Bump(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }
  AtomicCounters counters_;

 private:
  void AcceptNext();
  void OnAcceptReady(const boost::system::error_code& ec) noexcept;
  void OnConnection(int fd);

  asio::io_context& io_;
  const MetricsOptions options_;
  MetricsSource* const source_;  // one of these two is set
  AsyncMetricsSource* const async_source_;
  Tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_;
  uint16_t port_ = 0;
  std::string hostname_;  // gethostname() at Start(): the default `Hostname` label
  bool started_ = false;
  bool stopped_ = false;
  std::vector<std::weak_ptr<Session>> sessions_;
};

// One connection: read the request head under the read deadline, answer once, close.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(std::shared_ptr<MetricsServer::Core> core, Tcp::socket socket)
      : core_(std::move(core)), socket_(std::move(socket)), deadline_(socket_.get_executor()) {}

  void Start() {
    ArmDeadline(core_->options().read_timeout_ms);
    Read();
  }

  void Close() noexcept {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ec;
    deadline_.cancel();
    socket_.shutdown(Tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

 private:
  // One deadline per phase (not per read), so a client dripping a byte at a time cannot keep the
  // connection, nor a client that never reads its response.
  void ArmDeadline(uint32_t ms) {
    deadline_.expires_after(std::chrono::milliseconds(ms));
    deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) noexcept {
      if (ec || self->closed_) return;  // cancelled or re-armed
      MetricsServer::Core::Bump(self->core_->counters_.timeouts);
      self->Close();
    });
  }

  void Read() {
    if (closed_ || core_->stopped()) return Close();
    socket_.async_read_some(asio::buffer(chunk_),
                            [self = shared_from_this()](const boost::system::error_code& ec,
                                                        size_t n) noexcept {
                              self->Guard([&] { self->OnRead(ec, n); });
                            });
  }

  void OnRead(const boost::system::error_code& ec, size_t n) {
    if (ec || closed_ || core_->stopped()) return Close();  // EOF, reset, timeout or stop
    request_.append(chunk_.data(), n);
    const size_t end = HeaderEnd(request_);
    const size_t limit = core_->options().max_request_bytes;
    if (end == std::string::npos ? request_.size() > limit : end > limit) {
      MetricsServer::Core::Bump(core_->counters_.oversized);
      return Send(Status(431, "Request Header Fields Too Large",
                         "request head exceeds " + std::to_string(limit) + " bytes\n"));
    }
    if (end == std::string::npos) return Read();
    if (auto response = core_->Handle(std::string_view(request_).substr(0, end)))
      return Send(*response);
    // The asynchronous source answers later; the write deadline covers the wait as well.
    ArmDeadline(core_->options().write_timeout_ms);
    core_->Scrape([self = shared_from_this()](Response response) {
      self->Guard([&] {
        if (!self->closed_) self->Send(response);
      });
    });
  }

  void Send(const Response& response) {
    out_ = Serialize(response);
    ArmDeadline(core_->options().write_timeout_ms);
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this()](const boost::system::error_code&, size_t) noexcept {
                        self->Close();
                      });
  }

  // Asio handler boundary: nothing escapes into io.run().
  template <typename F>
  void Guard(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      MetricsServer::Core::Bump(core_->counters_.handler_exceptions);
      Close();
    }
  }

  std::shared_ptr<MetricsServer::Core> core_;
  Tcp::socket socket_;
  asio::steady_timer deadline_;
  std::array<char, 2048> chunk_{};
  std::string request_;
  std::string out_;
  bool closed_ = false;
};

std::optional<Response> MetricsServer::Core::Handle(std::string_view head) {
  // Request line: METHOD SP TARGET SP HTTP/1.x (RFC 9112 section 3). Headers are not needed.
  size_t eol = head.find('\n');
  std::string_view line = head.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  const auto bad = [this](std::string why) {
    Bump(counters_.bad_requests);
    return Status(400, "Bad Request", std::move(why) + "\n");
  };
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      line.find(' ', sp2 + 1) != std::string_view::npos) {
    return bad("malformed request line");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), IsTokenChar)) {
    return bad("malformed method");
  }
  if (version != "HTTP/1.0" && version != "HTTP/1.1") return bad("unsupported HTTP version");
  if (target.empty() || target.front() != '/') return bad("request target must be an absolute path");

  const std::string_view path = target.substr(0, target.find('?'));
  if (path != "/metrics") {
    Bump(counters_.not_found);
    return Status(404, "Not Found", "only /metrics is served here\n");
  }
  if (method != "GET") {
    Bump(counters_.method_not_allowed);
    Response r = Status(405, "Method Not Allowed", "only GET is allowed\n");
    r.allow_get = true;
    return r;
  }
  if (async_source_ != nullptr) return std::nullopt;
  MetricsSnapshot snapshot;
  try {
    snapshot = source_->Snapshot();
  } catch (const std::exception& e) {
    Bump(counters_.source_errors);
    return Status(500, "Internal Server Error", std::string("metrics source failed: ") + e.what() + "\n");
  } catch (...) {
    Bump(counters_.source_errors);
    return Status(500, "Internal Server Error", "metrics source failed\n");
  }
  if (snapshot.hostname.empty()) snapshot.hostname = hostname_;
  Bump(counters_.scrapes);
  return Status(200, "OK", RenderExposition(snapshot));
}

void MetricsServer::Core::Scrape(std::function<void(Response)> reply) {
  auto finish = [self = shared_from_this(), reply](Expected<std::string> body) {
    if (self->stopped_) return;
    if (!body) {
      Bump(self->counters_.source_errors);
      return reply(Status(500, "Internal Server Error",
                          "metrics source failed: " + body.error().message + "\n"));
    }
    Bump(self->counters_.scrapes);
    reply(Status(200, "OK", std::move(*body)));
  };
  try {
    async_source_->RenderAsync(finish);
  } catch (const std::exception& e) {
    finish(MakeError(e.what()));
  } catch (...) {
    finish(MakeError("unknown exception"));
  }
}

Expected<void> MetricsServer::Core::Start() {
  CUPMON_CHECK(!started_ && !stopped_);
  // Read once: dcgm-exporter's `Hostname` label, for joins with DCGM's series. A host whose name
  // cannot be read gets no Hostname label (Prometheus' `instance` still identifies the target).
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) == 0) hostname_ = name.data();
  const std::string host = options_.address == "localhost" ? "127.0.0.1" : options_.address;
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  if (ec) {
    return MakeError("metrics address '" + options_.address +
                     "' is not a numeric IPv4 or IPv6 address (host names are not resolved)");
  }
  const std::string where = EndpointText(address, options_.port);
  if (!address.is_loopback() && !options_.allow_non_loopback) {
    return MakeError("metrics address " + where +
                     " is not a loopback address: the endpoint would be reachable from the network. "
                     "Use 127.0.0.1 or ::1, or allow it explicitly (CUPMON_METRICS_ALLOW_REMOTE=1)");
  }
  const Tcp::endpoint endpoint(address, options_.port);
  // Created close-on-exec and non-blocking in one call: asio's acceptor would use plain socket().
  const int fd = ::socket(address.is_v6() ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return MakeError(Errno("metrics: socket", errno), errno);
  const auto fail = [fd](std::string message, int err) {
    ::close(fd);
    return MakeError(std::move(message), err);
  };
  const int one = 1;
  // SO_REUSEADDR lets a restarted service bind again while old connections sit in TIME_WAIT; on
  // Linux it does not let two listeners share the port, so "address in use" is still reported.
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (address.is_v6()) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (::bind(fd, endpoint.data(), static_cast<socklen_t>(endpoint.size())) != 0) {
    const int err = errno;
    std::string message = Errno("metrics: cannot listen on " + where, err);
    if (err == EADDRINUSE) message += " (another process uses this port: choose another one)";
    return fail(message, err);
  }
  if (::listen(fd, 64) != 0) return fail(Errno("metrics: listen on " + where, errno), errno);
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    return fail(Errno("metrics: getsockname", errno), errno);
  }
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  acceptor_.assign(endpoint.protocol(), fd, ec);
  if (ec) return fail("metrics: cannot register the listener: " + ec.message(), 0);
  CloseInForkedChild(fd);  // a forked child must not keep the parent's port
  started_ = true;
  AcceptNext();
  return {};
}

void MetricsServer::Core::AcceptNext() {
  acceptor_.async_wait(Tcp::acceptor::wait_read,
                       [self = shared_from_this()](const boost::system::error_code& ec) noexcept {
                         self->OnAcceptReady(ec);
                       });
}

void MetricsServer::Core::OnAcceptReady(const boost::system::error_code& ec) noexcept {
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

void MetricsServer::Core::OnConnection(int fd) {
  std::erase_if(sessions_, [](const std::weak_ptr<Session>& s) { return s.expired(); });
  if (sessions_.size() >= options_.max_connections) {
    Bump(counters_.rejected_connections);
    ::close(fd);
    return;
  }
  Tcp::socket socket(io_);
  boost::system::error_code ec;
  socket.assign(acceptor_.local_endpoint(ec).protocol(), fd, ec);
  if (ec) {
    ::close(fd);
    return;
  }
  Bump(counters_.connections);
  auto session = std::make_shared<Session>(shared_from_this(), std::move(socket));
  sessions_.push_back(session);
  session->Start();
}

void MetricsServer::Core::Stop() {
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
}

MetricsCounters MetricsServer::Core::Snapshot() const {
  const auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  MetricsCounters out;
  out.connections = get(counters_.connections);
  out.scrapes = get(counters_.scrapes);
  out.not_found = get(counters_.not_found);
  out.method_not_allowed = get(counters_.method_not_allowed);
  out.bad_requests = get(counters_.bad_requests);
  out.oversized = get(counters_.oversized);
  out.timeouts = get(counters_.timeouts);
  out.rejected_connections = get(counters_.rejected_connections);
  out.source_errors = get(counters_.source_errors);
  out.handler_exceptions = get(counters_.handler_exceptions);
  out.accept_errors = get(counters_.accept_errors);
  return out;
}

Expected<MetricsOptions> ParseListenAddress(std::string_view text, MetricsOptions base) {
  const auto bad = [&](const std::string& why) {
    return MakeError("metrics address '" + std::string(text) + "': " + why +
                     " (expected ADDRESS:PORT, [IPV6]:PORT or :PORT)");
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 2 || host.back() != ']') return bad("unbalanced brackets");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 address must be written in brackets");
  }
  unsigned port = 0;
  const auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || ptr != port_text.data() + port_text.size() || port > 65535) {
    return bad("port must be a number from 0 to 65535");
  }
  base.address = host.empty() ? "127.0.0.1" : std::string(host);
  base.port = static_cast<uint16_t>(port);
  return base;
}

MetricsServer::MetricsServer(boost::asio::io_context& io, MetricsOptions options, MetricsSource& source)
    : core_(std::make_shared<Core>(io, std::move(options), &source, nullptr)) {}

MetricsServer::MetricsServer(boost::asio::io_context& io, MetricsOptions options,
                             AsyncMetricsSource& source)
    : core_(std::make_shared<Core>(io, std::move(options), nullptr, &source)) {}

MetricsServer::~MetricsServer() { core_->Stop(); }

Expected<void> MetricsServer::Start() { return core_->Start(); }
void MetricsServer::Stop() { core_->Stop(); }
uint16_t MetricsServer::port() const { return core_->port(); }
MetricsCounters MetricsServer::counters() const { return core_->Snapshot(); }

}  // namespace cupmon::metrics

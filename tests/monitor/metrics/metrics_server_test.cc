// Tests MetricsServer (monitor/metrics/src/metrics_server.cc) over real TCP on 127.0.0.1 with a fake
// MetricsSource: scrapes by a raw client and by curl, bad requests, slow clients, limits, fds.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "cupmon/metrics/metrics_server.h"
#include "descriptors_used_up.h"
#include "exposition_parser.h"

namespace cupmon::metrics {
namespace {

// Returns a fixed snapshot and records which thread asked. Called on the io thread.
class FakeSource : public MetricsSource {
 public:
  MetricsSnapshot Snapshot() override {
    std::lock_guard lock(mu);
    ++calls;
    caller = std::this_thread::get_id();
    if (throw_error) throw std::runtime_error("writer stats unavailable");
    return snapshot;
  }
  std::mutex mu;
  MetricsSnapshot snapshot;
  int calls = 0;
  std::thread::id caller;
  bool throw_error = false;
};

struct HttpResponse {
  int status = 0;
  std::string head;
  std::string body;
};

class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_.snapshot.version = "test";
    source_.snapshot.output_dir = "/tmp/out \"quoted\"";
    source_.snapshot.kernel_records = 42;
    source_.snapshot.device_busy = {{0, 1'250'000'000}};
    source_.snapshot.stream_busy = {{0, 7, 1'000'000'000}};
    options_.port = 0;
    options_.read_timeout_ms = 300;
    io_thread_ = std::thread([this] {
      io_thread_id_ = std::this_thread::get_id();
      io_.run();
    });
  }

  void TearDown() override {
    if (server_) RunOnIo([&] { server_->Stop(); });
    guard_.reset();
    io_.stop();
    io_thread_.join();
    server_.reset();
  }

  template <typename F>
  auto RunOnIo(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    boost::asio::post(io_, [&task] { task(); });
    return result.get();
  }

  Expected<void> StartServer(MetricsOptions options) {
    server_ = std::make_unique<MetricsServer>(io_, options, source_);
    return RunOnIo([&] { return server_->Start(); });
  }
  void StartOrDie() {
    auto started = StartServer(options_);
    ASSERT_TRUE(started.has_value()) << started.error().message;
    port_ = RunOnIo([&] { return server_->port(); });
    ASSERT_NE(port_, 0);
  }
  MetricsCounters Counters() { return server_->counters(); }

  // A blocking client with a receive timeout so that a broken test cannot hang.
  int Connect() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port_);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd);
      return -1;
    }
    timeval tv{20, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
  }

  static bool WriteAll(int fd, const std::string& bytes) {
    return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }

  // Everything until the server closes; nullopt on the 20 s receive timeout.
  static std::optional<std::string> ReadToEof(int fd) {
    std::string out;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n == 0) return out;
      if (n < 0) {
        if (errno == ECONNRESET) return out;
        return std::nullopt;
      }
      out.append(buf, static_cast<size_t>(n));
    }
  }

  static std::optional<HttpResponse> ParseResponse(const std::string& raw) {
    const size_t end = raw.find("\r\n\r\n");
    if (end == std::string::npos || !raw.starts_with("HTTP/1.1 ")) return std::nullopt;
    HttpResponse r;
    r.head = raw.substr(0, end + 2);
    r.body = raw.substr(end + 4);
    r.status = std::stoi(raw.substr(9, 3));
    const size_t cl = r.head.find("Content-Length: ");
    if (cl == std::string::npos) return std::nullopt;
    if (std::stoul(r.head.substr(cl + 16)) != r.body.size()) return std::nullopt;
    return r;
  }

  std::optional<HttpResponse> Request(const std::string& bytes) {
    const int fd = Connect();
    if (fd < 0) return std::nullopt;
    WriteAll(fd, bytes);
    auto raw = ReadToEof(fd);
    ::close(fd);
    if (!raw) return std::nullopt;
    return ParseResponse(*raw);
  }

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_{
      boost::asio::make_work_guard(io_)};
  std::thread io_thread_;
  std::thread::id io_thread_id_;
  FakeSource source_;
  MetricsOptions options_;
  std::unique_ptr<MetricsServer> server_;
  uint16_t port_ = 0;
};

TEST_F(MetricsServerTest, ScrapeReturnsExpositionFromTheSourceOnTheIoThread) {
  StartOrDie();
  auto r = Request("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n\r\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->head.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << r->head;
  EXPECT_NE(r->head.find("Connection: close"), std::string::npos);
  auto parsed = testing::ParseExposition(r->body);
  ASSERT_TRUE(parsed.has_value()) << parsed.error();
  EXPECT_EQ(parsed->at("cupmon_kernel_records_total").samples.at(0).value_text, "42");
  EXPECT_EQ(parsed->at("cupmon_gpu_busy_seconds_total").samples.at(0).value_text, "1.250000000");
  EXPECT_EQ(parsed->at("cupmon_info").samples.at(0).labels.at("output_dir"), "/tmp/out \"quoted\"");
  {
    std::lock_guard lock(source_.mu);
    EXPECT_EQ(source_.calls, 1);
    EXPECT_EQ(source_.caller, io_thread_id_);
  }
  EXPECT_EQ(Counters().scrapes, 1u);

  // A query string is ignored; HTTP/1.0 and bare-LF line ends are accepted.
  auto q = Request("GET /metrics?name[]=x HTTP/1.0\n\n");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->status, 200);
}

// dcgm-exporter's Hostname label: the host's name by default, the source's when it gives one.
TEST_F(MetricsServerTest, HostnameLabelIsTheHostsUnlessTheSourceGivesOne) {
  StartOrDie();
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  for (const std::string& given : {std::string(), std::string("node-\"07\"")}) {
    {
      std::lock_guard lock(source_.mu);
      source_.snapshot.hostname = given;
    }
    auto r = Request("GET /metrics HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(r.has_value());
    auto parsed = testing::ParseExposition(r->body);
    ASSERT_TRUE(parsed.has_value()) << parsed.error();
    const std::string expected = given.empty() ? std::string(host) : given;
    EXPECT_EQ(parsed->at("cupmon_gpu_busy_seconds_total").samples.at(0).labels.at("Hostname"), expected);
    EXPECT_EQ(parsed->at("cupmon_stream_busy_seconds_total").samples.at(0).labels.at("Hostname"), expected);
    EXPECT_EQ(parsed->at("cupmon_info").samples.at(0).labels.at("Hostname"), expected);
  }
}

TEST_F(MetricsServerTest, CurlScrapePassesTheStrictParser) {
  if (std::system("command -v curl >/dev/null 2>&1") != 0) GTEST_SKIP() << "curl is not installed";
  StartOrDie();
  const std::string cmd = "curl -sS --fail --max-time 20 http://127.0.0.1:" + std::to_string(port_) + "/metrics";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string body;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) body.append(buf, n);
  const int rc = ::pclose(pipe);
  ASSERT_EQ(rc, 0) << body;
  auto parsed = testing::ParseExposition(body);
  ASSERT_TRUE(parsed.has_value()) << parsed.error() << "\n" << body;
  EXPECT_EQ(parsed->at("cupmon_stream_busy_seconds_total").samples.at(0).labels.at("stream"), "7");

  // curl --fail turns the 404 into exit code 22.
  const std::string missing = "curl -sS --fail --max-time 20 -o /dev/null http://127.0.0.1:" +
                              std::to_string(port_) + "/other 2>/dev/null";
  const int status = std::system(missing.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 22);
}

TEST_F(MetricsServerTest, OtherPathsAre404AndOtherMethods405) {
  StartOrDie();
  auto nf = Request("GET / HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(nf.has_value());
  EXPECT_EQ(nf->status, 404);
  auto nf2 = Request("GET /metricsx HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(nf2.has_value());
  EXPECT_EQ(nf2->status, 404);
  for (const char* method : {"POST", "HEAD", "PUT", "DELETE", "get"}) {
    SCOPED_TRACE(method);
    auto r = Request(std::string(method) + " /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 405);
    EXPECT_NE(r->head.find("Allow: GET"), std::string::npos);
  }
  const MetricsCounters c = Counters();
  EXPECT_EQ(c.not_found, 2u);
  EXPECT_EQ(c.method_not_allowed, 5u);
  EXPECT_EQ(c.scrapes, 0u);
  std::lock_guard lock(source_.mu);
  EXPECT_EQ(source_.calls, 0);
}

TEST_F(MetricsServerTest, MalformedRequestLinesAre400) {
  StartOrDie();
  for (const char* bad : {"garbage\r\n\r\n", "GET /metrics\r\n\r\n", "GET /metrics HTTP/2.0\r\n\r\n",
                          "GET  /metrics HTTP/1.1\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n",
                          "G(T /metrics HTTP/1.1\r\n\r\n", "\r\n\r\n"}) {
    SCOPED_TRACE(bad);
    auto r = Request(bad);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 400);
  }
  EXPECT_EQ(Counters().bad_requests, 7u);
}

TEST_F(MetricsServerTest, OversizedRequestHeadIs431) {
  options_.max_request_bytes = 1024;
  StartOrDie();
  auto r = Request("GET /metrics HTTP/1.1\r\nX-Pad: " + std::string(4000, 'a') + "\r\n\r\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 431);
  EXPECT_EQ(Counters().oversized, 1u);
  // A head that never ends is cut off at the limit too, not buffered forever.
  const int fd = Connect();
  ASSERT_GE(fd, 0);
  WriteAll(fd, "GET /metrics HTTP/1.1\r\n" + std::string(2000, 'b'));
  auto raw = ReadToEof(fd);
  ::close(fd);
  ASSERT_TRUE(raw.has_value());
  EXPECT_TRUE(raw->starts_with("HTTP/1.1 431")) << *raw;
  EXPECT_EQ(Counters().oversized, 2u);
}

TEST_F(MetricsServerTest, RequestSplitAcrossWritesIsServed) {
  StartOrDie();
  const int fd = Connect();
  ASSERT_GE(fd, 0);
  for (const char* part : {"GE", "T /met", "rics HTTP/1.1\r\n", "Host: x\r\n", "\r\n"}) {
    ASSERT_TRUE(WriteAll(fd, part));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto raw = ReadToEof(fd);
  ::close(fd);
  ASSERT_TRUE(raw.has_value());
  auto r = ParseResponse(*raw);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
}

TEST_F(MetricsServerTest, SlowClientIsClosedAndDoesNotBlockOtherScrapes) {
  StartOrDie();
  // A client that sends half a request and stalls.
  const int stalled = Connect();
  ASSERT_GE(stalled, 0);
  ASSERT_TRUE(WriteAll(stalled, "GET /metr"));
  // While it stalls, another scrape is answered.
  auto r = Request("GET /metrics HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  // The stalled client is closed by the read deadline, with no response.
  auto rest = ReadToEof(stalled);
  ::close(stalled);
  ASSERT_TRUE(rest.has_value()) << "server did not close the stalled connection";
  EXPECT_EQ(*rest, "");
  EXPECT_EQ(Counters().timeouts, 1u);
}

TEST_F(MetricsServerTest, DrippingClientCannotExtendTheDeadline) {
  StartOrDie();
  const int fd = Connect();
  ASSERT_GE(fd, 0);
  // One byte every 50 ms of a header that never ends: the deadline counts from accept, not from the
  // last byte, so the server closes the connection long before 400 bytes have been sent.
  bool closed_by_server = false;
  for (int i = 0; i < 400 && !closed_by_server; ++i) {
    if (!WriteAll(fd, i == 0 ? "GET /metrics HTTP/1.1\r\nX: " : "a")) closed_by_server = true;
    char c;
    if (::recv(fd, &c, 1, MSG_DONTWAIT) == 0) closed_by_server = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::close(fd);
  EXPECT_TRUE(closed_by_server);
  EXPECT_EQ(Counters().timeouts, 1u);
}

TEST_F(MetricsServerTest, OutOfDescriptorsTheListenerWaitsThenServes) {
  // A scrape connects while the process has no descriptor left, so accept fails with EMFILE. The
  // listener neither spins on that nor stops: it tries again every 100 ms, and answers the scrape
  // once descriptors are free.
  options_.read_timeout_ms = 20000;
  StartOrDie();
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);  // while it still can be made
  ASSERT_GE(fd, 0);
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port_);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::cupmon::testing::ConnectWhileDescriptorsAreUsedUp(
      [&] {
        return ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0 &&
               WriteAll(fd, "GET /metrics HTTP/1.1\r\n\r\n");
      },
      [&] {
        const MetricsCounters c = Counters();
        return std::make_pair(c.accept_errors, c.connections);
      });
  const auto raw = ReadToEof(fd);  // accepted at the next try, and answered
  ::close(fd);
  ASSERT_TRUE(raw.has_value());
  const auto r = ParseResponse(*raw);
  ASSERT_TRUE(r.has_value()) << *raw;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Counters().scrapes, 1u);
}

TEST_F(MetricsServerTest, ConnectionsOverTheLimitAreClosedAtOnce) {
  options_.max_connections = 2;
  options_.read_timeout_ms = 20000;
  StartOrDie();
  const int a = Connect();
  const int b = Connect();
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  // Make sure both are accepted before the third arrives.
  for (int i = 0; i < 200 && Counters().connections < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(Counters().connections, 2u);
  const int c = Connect();
  ASSERT_GE(c, 0);
  auto rest = ReadToEof(c);
  ::close(c);
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(*rest, "");
  EXPECT_EQ(Counters().rejected_connections, 1u);
  ::close(a);
  ::close(b);
  // Once the idle ones are gone, scraping works again.
  std::optional<HttpResponse> r;
  for (int i = 0; i < 200; ++i) {
    r = Request("GET /metrics HTTP/1.1\r\n\r\n");
    if (r && r->status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
}

TEST_F(MetricsServerTest, SourceExceptionIs500AndTheServerKeepsServing) {
  StartOrDie();
  {
    std::lock_guard lock(source_.mu);
    source_.throw_error = true;
  }
  auto r = Request("GET /metrics HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(r->body.find("writer stats unavailable"), std::string::npos);
  EXPECT_EQ(Counters().source_errors, 1u);
  {
    std::lock_guard lock(source_.mu);
    source_.throw_error = false;
  }
  auto ok = Request("GET /metrics HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status, 200);
}

TEST_F(MetricsServerTest, NonLoopbackAddressIsRefusedUnlessAllowed) {
  options_.address = "0.0.0.0";
  auto refused = StartServer(options_);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("not a loopback address"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("CUPMON_METRICS_ALLOW_REMOTE"), std::string::npos);
  RunOnIo([&] { server_->Stop(); });

  options_.allow_non_loopback = true;
  auto allowed = StartServer(options_);
  ASSERT_TRUE(allowed.has_value()) << allowed.error().message;
  port_ = server_->port();
  auto r = Request("GET /metrics HTTP/1.1\r\n\r\n");  // reachable on 127.0.0.1 through 0.0.0.0
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
}

TEST_F(MetricsServerTest, HostNamesAndGarbageAddressesAreRefused) {
  for (const char* address : {"example.com", "127.0.0.256", ""}) {
    SCOPED_TRACE(address);
    options_.address = address;
    auto r = StartServer(options_);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("not a numeric"), std::string::npos) << r.error().message;
  }
  options_.address = "localhost";
  auto ok = StartServer(options_);
  EXPECT_TRUE(ok.has_value()) << ok.error().message;
}

TEST_F(MetricsServerTest, Ipv6LoopbackWorksWhereAvailable) {
  const int probe = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) GTEST_SKIP() << "no IPv6 sockets here";
  ::close(probe);
  options_.address = "::1";
  auto r = StartServer(options_);
  if (!r && r.error().sys_errno == EADDRNOTAVAIL) GTEST_SKIP() << "::1 is not configured";
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_NE(server_->port(), 0);
}

TEST_F(MetricsServerTest, PortInUseIsAClearErrorAndTheFirstServerStillServes) {
  StartOrDie();
  FakeSource other;
  MetricsOptions same = options_;
  same.port = port_;
  MetricsServer second(io_, same, other);
  auto r = RunOnIo([&] { return second.Start(); });
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().sys_errno, EADDRINUSE);
  EXPECT_NE(r.error().message.find("127.0.0.1:" + std::to_string(port_)), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("in use"), std::string::npos) << r.error().message;
  RunOnIo([&] { second.Stop(); });
  auto ok = Request("GET /metrics HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status, 200);
}

std::set<int> OpenFds() {
  std::set<int> fds;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    fds.insert(std::stoi(entry.path().filename().string()));
  }
  return fds;
}

TEST_F(MetricsServerTest, EveryDescriptorIsCloseOnExec) {
  const std::set<int> before = OpenFds();
  options_.read_timeout_ms = 20000;
  StartOrDie();
  const int client = Connect();  // held open so that the accepted socket exists
  ASSERT_GE(client, 0);
  for (int i = 0; i < 200 && Counters().connections < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(Counters().connections, 1u);
  int checked = 0;
  for (const int fd : OpenFds()) {
    if (before.contains(fd) || fd == client) continue;
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags < 0) continue;  // the directory iterator's own fd, already closed
    EXPECT_TRUE(flags & FD_CLOEXEC) << "fd " << fd;
    ++checked;
  }
  EXPECT_GE(checked, 2);  // the listener and the accepted connection
  ::close(client);
}

TEST_F(MetricsServerTest, StopClosesConnectionsAndTheListener) {
  options_.read_timeout_ms = 20000;
  StartOrDie();
  const int fd = Connect();
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 200 && Counters().connections < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  RunOnIo([&] { server_->Stop(); });
  auto rest = ReadToEof(fd);
  ::close(fd);
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(*rest, "");
  EXPECT_EQ(Connect(), -1);
  RunOnIo([&] { server_->Stop(); });  // idempotent
}

// The node agent's kind of source: it answers later, from another handler on the io thread.
class LaterSource : public AsyncMetricsSource {
 public:
  explicit LaterSource(boost::asio::io_context& io) : io_(io) {}
  void RenderAsync(std::function<void(Expected<std::string>)> done) override {
    ++calls;
    if (mode == kNever) {
      held = std::move(done);  // never answered: the write deadline must close the connection
      return;
    }
    boost::asio::post(io_, [this, done = std::move(done)] {
      if (mode == kFail) return done(MakeError("registry /x: group or others have access"));
      done(std::string("cupmon_agent_processes 3\n"));
    });
  }
  enum Mode { kOk, kFail, kNever } mode = kOk;
  int calls = 0;
  std::function<void(Expected<std::string>)> held;

 private:
  boost::asio::io_context& io_;
};

TEST_F(MetricsServerTest, AsyncSourceAnswersLaterErrorsAre500AndSilenceCostsTheDeadline) {
  LaterSource later(io_);
  options_.write_timeout_ms = 300;
  server_ = std::make_unique<MetricsServer>(io_, options_, later);
  ASSERT_TRUE(RunOnIo([&] { return server_->Start(); }).has_value());
  port_ = RunOnIo([&] { return server_->port(); });
  auto ok = Request("GET /metrics HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "cupmon_agent_processes 3\n");
  EXPECT_NE(ok->head.find("version=0.0.4"), std::string::npos);
  // Validation still comes first: the source is not asked for a 404 or a 405.
  EXPECT_EQ(Request("GET /other HTTP/1.1\r\n\r\n")->status, 404);
  EXPECT_EQ(Request("POST /metrics HTTP/1.1\r\n\r\n")->status, 405);
  EXPECT_EQ(RunOnIo([&] { return later.calls; }), 1);

  RunOnIo([&] { later.mode = LaterSource::kFail; });
  auto failed = Request("GET /metrics HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->status, 500);
  EXPECT_NE(failed->body.find("group or others have access"), std::string::npos) << failed->body;
  EXPECT_EQ(Counters().source_errors, 1u);

  RunOnIo([&] { later.mode = LaterSource::kNever; });
  const int fd = Connect();
  ASSERT_GE(fd, 0);
  WriteAll(fd, "GET /metrics HTTP/1.1\r\n\r\n");
  auto raw = ReadToEof(fd);  // closed by the deadline, not by the 20 s receive timeout
  ::close(fd);
  ASSERT_TRUE(raw.has_value());
  EXPECT_EQ(*raw, "");
  EXPECT_EQ(Counters().timeouts, 1u);
  // A late answer after the close is dropped; the server keeps serving.
  RunOnIo([&] {
    later.mode = LaterSource::kOk;
    later.held(std::string("late\n"));
  });
  auto after = Request("GET /metrics HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->status, 200);
  RunOnIo([&] { server_->Stop(); });
  server_.reset();
}

}  // namespace
}  // namespace cupmon::metrics

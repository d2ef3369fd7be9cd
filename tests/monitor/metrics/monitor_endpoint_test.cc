// The metrics endpoint of a running Monitor (fake CUPTI, a test double): scraped by curl and checked
// with the strict exposition parser, and hit by malformed and slow requests while the application
// keeps launching work, which must not disturb recording, windows or later scrapes.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "cupmon/monitor/monitor.h"
#include "exposition_parser.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor_fixture.h"
#include "test_dir.h"

namespace cupmon {
namespace {

using testing::FakeCupti;

std::string TempDir(const std::string& name) {
  return testing::FreshTestDir("cupmon-metrics-endpoint-test", name);
}

MonitorOptions FakeOptions(FakeCupti* fake, const std::string& dir) {
  MonitorOptions o = testing::TestDoubleOptions(fake, dir);
  o.config.metrics_address = "127.0.0.1:0";
  return o;
}

bool HaveCurl() { return std::system("command -v curl >/dev/null 2>&1") == 0; }

// GET http://127.0.0.1:port/metrics with curl; the body, and curl's exit status in *rc.
std::string CurlScrape(uint16_t port, int* rc) {
  const std::string cmd = "curl -sS --fail --max-time 20 http://127.0.0.1:" + std::to_string(port) +
                          "/metrics";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    *rc = -1;
    return "";
  }
  std::string body;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), pipe)) > 0;) body.append(buf, n);
  const int status = ::pclose(pipe);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return body;
}

// A raw client with a receive timeout, for requests curl would not send.
int Connect(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

std::string ReadUntilClosed(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

const metrics::testing::ParsedSample* Find(const metrics::testing::Exposition& e,
                                           const std::string& family) {
  auto it = e.find(family);
  if (it == e.end() || it->second.samples.empty()) return nullptr;
  return &it->second.samples.front();
}

TEST(MonitorMetricsEndpointTest, CurlScrapeOfTheRunningMonitorPassesTheStrictParser) {
  if (!HaveCurl()) GTEST_SKIP() << "curl is not installed (tools/install-deps installs it)";
  FakeCupti fake;
  const std::string dir = TempDir("curl");
  const uint32_t k = fake.AddKernelName("k");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  const uint16_t port = (*m)->metrics_port();
  ASSERT_NE(port, 0);
  FakeCupti::Producer* p = fake.NewProducer();
  ASSERT_TRUE(p->Kernel(k, 1000, 2000));
  ASSERT_TRUE(p->Kernel(k, 3000, 3500));
  ASSERT_TRUE(p->Memset(16, 0, 4000, 4100));
  (*m)->FlushAndWait();

  int rc = 0;
  const std::string body = CurlScrape(port, &rc);
  ASSERT_EQ(rc, 0) << body;
  auto parsed = metrics::testing::ParseExposition(body);
  ASSERT_TRUE(parsed.has_value()) << parsed.error() << "\n" << body;
  // Every family the issue lists is served, typed, with the monitor's numbers.
  for (const char* family :
       {"cupmon_kernel_records_total", "cupmon_memcpy_records_total", "cupmon_memset_records_total",
        "cupmon_gpu_busy_seconds_total", "cupmon_stream_busy_seconds_total", "cupmon_raw_bytes_total",
        "cupmon_compressed_bytes_total", "cupmon_dropped_records_total",
        "cupmon_pool_exhausted_total", "cupmon_windows_opened_total", "cupmon_write_errors_total",
        "cupmon_cupti_gaps_total", "cupmon_stranded_buffers_total", "cupmon_lost_records_total",
        "cupmon_lost_buffers_total", "cupmon_zero_timestamp_records_total",
        "cupmon_truncated_buffers_total"}) {
    SCOPED_TRACE(family);
    ASSERT_TRUE(parsed->contains(family));
    EXPECT_FALSE(parsed->at(family).type.empty());
    EXPECT_FALSE(parsed->at(family).help.empty());
  }
  EXPECT_EQ(Find(*parsed, "cupmon_kernel_records_total")->value_text, "2");
  EXPECT_EQ(Find(*parsed, "cupmon_memset_records_total")->value_text, "1");
  EXPECT_EQ(Find(*parsed, "cupmon_memcpy_records_total")->value_text, "0");
  EXPECT_EQ(parsed->at("cupmon_kernel_records_total").type, "counter");
  EXPECT_GT(Find(*parsed, "cupmon_raw_bytes_total")->value, 0);
  EXPECT_EQ(Find(*parsed, "cupmon_gpu_busy_seconds_total")->labels.at("gpu"), "0");
  // The server fills in the host's name: dcgm-exporter's Hostname label, for joins with DCGM.
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(Find(*parsed, "cupmon_gpu_busy_seconds_total")->labels.at("Hostname"), host);
  EXPECT_EQ(Find(*parsed, "cupmon_info")->labels.at("Hostname"), host);
  (*m)->Stop();
  std::filesystem::remove_all(dir);
}

TEST(MonitorMetricsEndpointTest, MalformedAndSlowRequestsDoNotDisturbTheMonitor) {
  FakeCupti fake;
  const std::string dir = TempDir("bad-requests");
  const uint32_t k = fake.AddKernelName("k");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  const uint16_t port = (*m)->metrics_port();
  ASSERT_NE(port, 0);

  // The application keeps launching while the endpoint is abused.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> launched{0};
  std::thread app([&] {
    FakeCupti::Producer* p = fake.NewProducer();
    for (uint64_t t = 1000; !stop.load(); t += 1000) {
      if (p->Kernel(k, t, t + 500)) launched.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });

  // A slow client: half a request line, then nothing. It holds its connection open meanwhile.
  const int slow = Connect(port);
  ASSERT_GE(slow, 0);
  ASSERT_EQ(::send(slow, "GET /metr", 9, MSG_NOSIGNAL), 9);

  // Malformed requests: binary garbage (a TLS hello), a bad request line, a NUL in the path.
  const std::string tls("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15);
  const std::string nul("GET /met\0rics HTTP/1.1\r\n\r\n", 26);
  for (const std::string& request : {tls, std::string("GARBAGE\r\n\r\n"), nul}) {
    const int fd = Connect(port);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    const std::string reply = ReadUntilClosed(fd);
    ::close(fd);
    EXPECT_TRUE(reply.empty() || reply.starts_with("HTTP/1.1 400") || reply.starts_with("HTTP/1.1 404"))
        << reply.substr(0, 200);
  }

  // While the slow client still holds its connection: the control thread opens a window, the
  // writer writes, and a well-formed scrape is answered with the current numbers.
  auto window = (*m)->RequestWindow(60'000, {CUPTI_ACTIVITY_KIND_RUNTIME}, pb::TRIGGER_API);
  ASSERT_TRUE(window) << window.error().message;
  // The application thread may not have launched yet on a loaded machine (CI): wait for its first
  // kernel, so that the flush below has one to write (no timing assumption, only an order).
  for (int i = 0; i < 10'000 && launched.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_GT(launched.load(), 0u);
  (*m)->FlushAndWait();
  if (HaveCurl()) {
    int rc = 0;
    const std::string body = CurlScrape(port, &rc);
    ASSERT_EQ(rc, 0) << body;
    auto parsed = metrics::testing::ParseExposition(body);
    ASSERT_TRUE(parsed.has_value()) << parsed.error() << "\n" << body;
    EXPECT_EQ(Find(*parsed, "cupmon_windows_opened_total")->value_text, "1");
    EXPECT_GT(Find(*parsed, "cupmon_kernel_records_total")->value, 0);
  }

  // The slow client gets no reply: the server closes it after its read deadline.
  EXPECT_EQ(ReadUntilClosed(slow), "");
  ::close(slow);

  stop.store(true);
  app.join();
  (*m)->FlushAndWait();
  const MonitorStats stats = (*m)->GetStats();
  EXPECT_GT(launched.load(), 0u);
  EXPECT_EQ(stats.records, fake.produced());  // every record the application made was written
  EXPECT_EQ(stats.write_errors, 0u);
  EXPECT_EQ(stats.dropped_records, 0u);
  EXPECT_EQ(stats.windows_opened, 1u);
  (*m)->Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cupmon

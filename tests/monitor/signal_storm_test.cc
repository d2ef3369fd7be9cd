// A storm of trigger signals (SIGUSR2 at 1000/s for 10 s) at this process, which runs a monitor on
// the CUPTI test double (synthetic records, no GPU): one window at a time, the rest refused and
// counted in stats and metrics, and no thread or memory growth.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/format/chunk.h"
#include "cupmon/format/chunk_scanner.h"
#include "cupmon/format/raw_codec.h"
#include "cupmon/monitor/monitor.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor_fixture.h"
#include "process_probe.h"
#include "test_dir.h"

namespace cupmon::testing {
namespace {

// Sanitizer builds keep the rate (1000/s) for 3 s instead of 10.
constexpr int kStormMs = kSanitized ? 3000 : 10000;


uint64_t MetricValue(const std::string& body, const std::string& name) {
  const size_t at = body.find("\n" + name + " ");
  if (at == std::string::npos) return UINT64_MAX;
  return std::strtoull(body.c_str() + at + name.size() + 2, nullptr, 10);
}

// The window markers of a recording, in stream order.
std::vector<pb::WindowMarker> Markers(const std::string& dir) {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".cupmon") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  std::vector<pb::WindowMarker> out;
  RawBufferDecoder codec;
  std::vector<uint8_t> raw;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    ChunkScanner scanner(bytes);
    std::vector<Damage> damage;
    while (auto chunk = scanner.Next(&damage)) {
      if (static_cast<ChunkType>(chunk->header.type) != ChunkType::kWindowMarker) continue;
      pb::WindowMarker m;
      const bool ok =
          chunk->header.encoding == static_cast<uint8_t>(Encoding::kStored)
              ? m.ParseFromArray(chunk->payload.data(), static_cast<int>(chunk->payload.size()))
              : codec.Decode(chunk->header.encoding, chunk->payload,
                             chunk->header.uncompressed_length, &raw) &&
                    m.ParseFromArray(raw.data(), static_cast<int>(raw.size()));
      if (ok && (m.edge() == pb::WindowMarker::BEGIN || m.edge() == pb::WindowMarker::END))
        out.push_back(m);
    }
  }
  return out;
}

TEST(SignalStormTest, OneWindowAtATimeTheRestRefusedAndCountedNoGrowth) {
  const std::string dir = FreshTestDir("cupmon-storm", "storm");
  FakeCupti fake;
  MonitorOptions o = TestDoubleOptions(&fake, dir);
  o.config.flush_ms = 100;
  o.config.window_ms = 200;  // many windows in the storm, each one at a time
  // A small pool that the warm-up cycles through entirely: the baseline RSS holds its pages.
  o.config.buffer_bytes = 1 << 20;
  o.config.pool_bytes = 4 << 20;
  o.config.signal_number = SIGUSR2;
  o.config.metrics_address = "127.0.0.1:0";
  auto started = Monitor::Start(o);
  ASSERT_TRUE(started.has_value()) << started.error().message;
  Monitor& m = **started;
  ASSERT_FALSE(m.control_socket_path().empty());

  // The job: launches on its own thread the whole time (API records inside windows). It is ended
  // and joined however the test body returns.
  std::atomic<bool> run{true};
  std::thread job;
  struct JobEnd {
    std::atomic<bool>& run;
    std::thread& job;
    ~JobEnd() {
      run = false;
      if (job.joinable()) job.join();
    }
  } job_end{run, job};
  job = std::thread([&] {
    FakeCupti::Producer* p = fake.NewProducer();
    const uint32_t name = fake.AddKernelName("storm_step");
    uint32_t correlation = 0;
    while (run.load()) {
      for (int i = 0; i < 100; ++i) {
        uint64_t t = 0;
        fake.GetTimestamp(&t);
        p->Launch(name, ++correlation, t, t + 1000);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });

  // Warm-up: three signals, each opening a window that closes on its own, while the job fills
  // every buffer of the pool more than once; then the baseline.
  for (uint64_t w = 1; w <= 3; ++w) {
    ASSERT_EQ(::kill(::getpid(), SIGUSR2), 0);
    ASSERT_TRUE(WaitFor([&] { return m.GetStats().windows_opened == w; }));
    ASSERT_TRUE(WaitFor([&] { return !m.GetStats().window_open; }));
  }
  (void)Scrape(m.metrics_port());
  m.FlushAndWait();
  const int64_t rss_before = RssBytes();
  const size_t threads_before = ThreadCount();

  // The storm: SIGUSR2 every millisecond on an absolute schedule.
  uint64_t sent = 0;
  size_t max_threads = threads_before;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto next = t0; next < t0 + std::chrono::milliseconds(kStormMs);
       next += std::chrono::milliseconds(1)) {
    std::this_thread::sleep_until(next);
    ASSERT_EQ(::kill(::getpid(), SIGUSR2), 0);
    ++sent;
    if (sent % 100 == 0) max_threads = std::max(max_threads, ThreadCount());
  }
  const double storm_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The last window closes by itself within its 200 ms.
  ASSERT_TRUE(WaitFor([&] { return !m.GetStats().window_open; }));
  ASSERT_TRUE(WaitFor([&] {
    const MonitorStats s = m.GetStats();
    return s.windows_opened + s.windows_refused == s.trigger_signals;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // signals still in the pipe
  const int64_t rss_after = RssBytes();
  const size_t threads_after = ThreadCount();
  m.FlushAndWait();
  const std::string metrics = Scrape(m.metrics_port());
  const MonitorStats s = m.GetStats();
  run = false;
  job.join();
  ASSERT_TRUE(m.Stop());
  const std::vector<pb::WindowMarker> markers = Markers(dir);

  std::printf("storm: %llu SIGUSR2 in %.2f s; received %llu, windows opened %llu, refused %llu; "
              "threads %zu before, at most %zu during, %zu after; RSS %.2f -> %.2f MiB\n",
              static_cast<unsigned long long>(sent), storm_s,
              static_cast<unsigned long long>(s.trigger_signals),
              static_cast<unsigned long long>(s.windows_opened),
              static_cast<unsigned long long>(s.windows_refused), threads_before, max_threads,
              threads_after, static_cast<double>(rss_before) / 1048576.0,
              static_cast<double>(rss_after) / 1048576.0);

  // Every signal the trigger received opened a window or was refused and counted; the count
  // reaches the stats and /metrics.
  EXPECT_EQ(s.windows_opened + s.windows_refused, s.trigger_signals);
  EXPECT_LE(s.trigger_signals, sent + 3);  // the warm-up's three
  EXPECT_GT(s.windows_opened, 2u);
  EXPECT_GT(s.windows_refused, s.windows_opened);
  EXPECT_EQ(MetricValue(metrics, "cupmon_windows_refused_total"), s.windows_refused);
  EXPECT_EQ(MetricValue(metrics, "cupmon_windows_opened_total"), s.windows_opened);
  // One window at a time: BEGIN and END alternate, each END closing the BEGIN before it, ids
  // 1, 2, 3, ...
  ASSERT_EQ(markers.size(), 2 * s.windows_opened);
  for (size_t i = 0; i < markers.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(markers[i].edge(), i % 2 == 0 ? pb::WindowMarker::BEGIN : pb::WindowMarker::END);
    EXPECT_EQ(markers[i].window_id(), i / 2 + 1);
  }
  // No thread or memory growth.
  EXPECT_EQ(max_threads, threads_before);
  EXPECT_EQ(threads_after, threads_before);
  // Under a sanitizer RSS says nothing about cupmon (ASan's quarantine, TSan's shadow).
  if (!kSanitized) {
    EXPECT_LE(rss_after - rss_before, 2 << 20);
  }
}

}  // namespace
}  // namespace cupmon::testing

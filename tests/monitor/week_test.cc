// A week of the monitor in minutes: the CUPTI test double (synthetic records, no GPU) and the
// monitor's timers on a virtual clock (ManualClock), one record per second for 7 days with a window
// every hour, windows that open themselves, rotation, retention, calibration and metrics scrapes on
// schedule, then a burst of 100M records at the writer's top rate. What must hold afterwards:
// every record accounted for, disk within retention, memory flat, no 32-bit counter, and the
// decoder's clock map within 1 us of a CUPTI clock that runs 50 ppm fast.
#include <arpa/inet.h>
#include <cupti.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/decoder/clock_map.h"
#include "cupmon/format/chunk.h"
#include "cupmon/format/chunk_scanner.h"
#include "cupmon/format/raw_codec.h"
#include "cupmon/format/record_sizes.h"
#include "cupmon/monitor/monitor.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor/testing/manual_clock.h"
#include "monitor_fixture.h"
#include "process_probe.h"
#include "test_dir.h"

namespace cupmon::testing {
namespace {

// Sanitizer builds run a tenth of the schedule so that the CI's TSan and ASan jobs stay within
// minutes; the checks are the same.
constexpr int64_t kDays = kSanitized ? 1 : 7;
constexpr uint64_t kBurstRecords = kSanitized ? 2'000'000 : 100'000'000;
constexpr int64_t kDriftPpb = 50'000;  // the test double's CUPTI clock: 50 ppm fast
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kHour = 3600 * kSecond;

uint64_t MetricValue(const std::string& body, const std::string& name) {
  const size_t at = body.find("\n" + name + " ");
  if (at == std::string::npos) return UINT64_MAX;
  return std::strtoull(body.c_str() + at + name.size() + 2, nullptr, 10);
}

// What the files left on disk hold, read with the format library and the decoder's ClockMap.
struct Decoded {
  uint64_t files = 0, disk_bytes = 0, damage = 0, records = 0, begins = 0, ends = 0;
  std::vector<uint64_t> kernel_starts;  // CUPTI ns
  decoder::ClockMap clock;
  uint64_t last_sample_cupti = 0;
  pb::Stats last_stats;
  bool ended = false;
};

Decoded ReadDirectory(const std::string& dir) {
  Decoded out;
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".cupmon") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  RawBufferDecoder codec;
  std::vector<uint8_t> raw;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    ++out.files;
    out.disk_bytes += bytes.size();
    ChunkScanner scanner(bytes);
    std::vector<Damage> damage;
    RecordSizeTable sizes;
    while (auto chunk = scanner.Next(&damage)) {
      const auto type = static_cast<ChunkType>(chunk->header.type);
      std::span<const uint8_t> payload = chunk->payload;
      auto message = [&](google::protobuf::MessageLite* m) {
        if (chunk->header.encoding == static_cast<uint8_t>(Encoding::kStored))
          return m->ParseFromArray(payload.data(), static_cast<int>(payload.size()));
        return codec.Decode(chunk->header.encoding, payload, chunk->header.uncompressed_length,
                            &raw) &&
               m->ParseFromArray(raw.data(), static_cast<int>(raw.size()));
      };
      if (type == ChunkType::kMetadata) {
        pb::RecordingHeader h;
        if (!message(&h)) ++out.damage;
        for (const auto& rs : h.record_sizes()) sizes.Set(rs.kind(), rs.size());
      } else if (type == ChunkType::kCalibration) {
        pb::Calibration c;
        if (!message(&c)) ++out.damage;
        out.clock.Add(c);
        for (const auto& sample : c.samples())
          out.last_sample_cupti = std::max<uint64_t>(out.last_sample_cupti, sample.cupti_ns());
      } else if (type == ChunkType::kStats) {
        if (!message(&out.last_stats)) ++out.damage;
      } else if (type == ChunkType::kFooter) {
        pb::Footer f;
        if (!message(&f)) ++out.damage;
        out.last_stats = f.stats();
        out.ended |= f.recording_ended();
      } else if (type == ChunkType::kWindowMarker) {
        pb::WindowMarker m;
        if (!message(&m)) ++out.damage;
        if (m.edge() == pb::WindowMarker::BEGIN) ++out.begins;
        if (m.edge() == pb::WindowMarker::END) ++out.ends;
      } else if (type == ChunkType::kRawBuffer) {
        if (payload.size() < kRawBufferPrefixSize ||
            !codec.Decode(chunk->header.encoding, payload.subspan(kRawBufferPrefixSize),
                          chunk->header.uncompressed_length, &raw)) {
          ++out.damage;
          continue;
        }
        const WalkResult walk =
            WalkRecords(raw, sizes, [&](uint32_t kind, std::span<const uint8_t> r) {
              ++out.records;
              if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                out.kernel_starts.push_back(
                    GetLe64(r.data() + offsetof(CUpti_ActivityKernel10, start)));
            });
        if (!walk.complete) ++out.damage;
      }
    }
    out.damage += damage.size();
  }
  return out;
}

// The largest |ClockMap(start) - true wall time| over the kernels of `d` that lie within its
// calibration samples (a recording still being written has none after its last stats tick yet).
// Marks in `seen` the virtual second (since `wall0_ns`) of each kernel checked.
int64_t WorstClockError(const Decoded& d, const FakeCupti& fake, int64_t wall0_ns,
                        std::vector<bool>* seen) {
  int64_t worst = 0;
  for (uint64_t start : d.kernel_starts) {
    if (start > d.last_sample_cupti) continue;
    const int64_t wall = fake.RealtimeNsAt(start);
    const int64_t error = d.clock.ToWall(start) - wall;
    worst = std::max(worst, error < 0 ? -error : error);
    const int64_t second = (wall - wall0_ns) / kSecond;
    if (second >= 0 && static_cast<size_t>(second) < seen->size()) (*seen)[second] = true;
  }
  return worst;
}

// WorstClockError over the files in `dir`, decoded in a child process: the decoding's memory
// (several MiB, which glibc may keep in the main thread's heap once freed) would otherwise count in
// the resident size that the week holds flat for the monitor. The child marks `seen` in its copy
// and sends back the seconds it marked; a child that fails is a test failure.
int64_t WorstClockErrorInChild(const std::string& dir, const FakeCupti& fake, int64_t wall0_ns,
                               std::vector<bool>* seen) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2: " << std::strerror(errno);
    return INT64_MAX;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return INT64_MAX;
  }
  if (pid == 0) {
    // The child runs only this thread; the monitor is off in it (its fork handler).
    ::close(fds[0]);
    std::vector<bool> marked = *seen;
    std::vector<int64_t> reply{WorstClockError(ReadDirectory(dir), fake, wall0_ns, &marked)};
    for (size_t i = 0; i < marked.size(); ++i)
      if (marked[i] && !(*seen)[i]) reply.push_back(static_cast<int64_t>(i));
    const auto* bytes = reinterpret_cast<const char*>(reply.data());
    size_t left = reply.size() * sizeof(int64_t);
    while (left > 0) {
      const ssize_t n = ::write(fds[1], bytes, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ::_exit(1);
      bytes += n;
      left -= static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::vector<int64_t> reply;
  int64_t value = 0;
  size_t have = 0;
  for (;;) {
    const ssize_t n = ::read(fds[0], reinterpret_cast<char*>(&value) + have, sizeof(value) - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    have += static_cast<size_t>(n);
    if (have == sizeof(value)) reply.push_back(value), have = 0;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty() || have != 0) {
    ADD_FAILURE() << "the clock check's child failed (status " << status << ", " << reply.size()
                  << " values)";
    return INT64_MAX;
  }
  for (size_t i = 1; i < reply.size(); ++i) (*seen)[static_cast<size_t>(reply[i])] = true;
  return reply[0];
}

// Every Stats field is a 64-bit counter (or a list of them): none wraps in a week at 1M records/s
// (6e11 records; a 32-bit counter wraps after 4.3e9, 72 minutes).
TEST(WeekTest, EveryStatsCounterIs64Bit) {
  const google::protobuf::Descriptor* d = pb::Stats::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    SCOPED_TRACE(f->name());
    if (f->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
      for (int j = 0; j < f->message_type()->field_count(); ++j) {
        const auto* g = f->message_type()->field(j);
        if (g->name() == "kind") continue;  // a CUpti_ActivityKind value, not a count
        EXPECT_TRUE(g->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT64)
            << g->name();
      }
      continue;
    }
    EXPECT_TRUE(f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT64 ||
                f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_INT64);
  }
}

TEST(WeekTest, SevenDaysOfVirtualTimeThenABurstAccountForEveryRecord) {
  const std::string dir = FreshTestDir("cupmon-week", "week");
  // The wall clock starts at a fixed date; the CUPTI clock drifts from there.
  ManualClock clock(/*realtime_start_ns=*/1'800'000'000 * kSecond);
  FakeCupti fake(clock, kDriftPpb);
  MonitorOptions o = TestDoubleOptions(&fake, dir);
  o.clock = &clock;
  MonitorConfig& c = o.config;
  c.flush_ms = 10'000;
  c.stats_ms = 10'000;  // the default: one calibration sample per 10 s
  c.buffer_bytes = 64 << 10;
  c.pool_bytes = 16 * c.buffer_bytes;
  c.file_bytes = 1 << 20;
  // Sanitized builds write one day and a smaller burst, about 4.1 MB in all: retention must still
  // delete files there, whatever chunk boundaries the writer's timing gives.
  c.retention_bytes = kSanitized ? 3 << 20 : 4 << 20;
  c.window_ms = 600'000;
  c.control = false;
  c.metrics_address = "127.0.0.1:0";
  c.auto_window = true;
  c.auto_window_anchor_kernel = "train_step";
  c.auto_window_min_gap_ms = 3'600'000;
  auto started = Monitor::Start(o);
  ASSERT_TRUE(started.has_value()) << started.error().message;
  Monitor& m = **started;
  FakeCupti::Producer* p = fake.NewProducer();
  const uint32_t step_kernel = fake.AddKernelName("train_step");
  const uint32_t burst_kernel = fake.AddKernelName("burst_kernel");
  const uint16_t port = m.metrics_port();
  ASSERT_NE(port, 0);

  // A step a second (a launch: its runtime API record appears inside windows); a window from
  // cupmonctl every hour for 10 minutes; at hh:30 every 6 hours a step of 20 s, which opens a
  // window itself; a scrape every 5 minutes.
  const int64_t seconds = kDays * 24 * 3600;
  uint32_t correlation = 0;
  uint64_t windows_asked = 0, slow_steps = 0, scrapes = 0, scrape_failures = 0;
  int64_t rss_after_first_hour = 0, worst_error_ns = 0;
  std::map<std::string, int64_t> mappings_after_first_hour;
  const int64_t wall0 = clock.RealtimeNs();
  // Virtual seconds of the week (slow steps included) whose kernel was mapped and checked.
  std::vector<bool> checked(static_cast<size_t>(2 * seconds));
  size_t threads_after_first_hour = 0;
  const auto wall_start = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < seconds; ++s) {
    if (s % 3600 == 0) {
      auto w = m.RequestWindow(0, {}, pb::TRIGGER_API);
      ASSERT_TRUE(w.has_value()) << "hour " << s / 3600 << ": " << w.error().message;
      ++windows_asked;
    }
    if (s % (6 * 3600) == 1800 && s > 6 * 3600) {
      ASSERT_TRUE(clock.Advance(std::chrono::seconds(19)));
      ++slow_steps;
    }
    // Virtual time runs far ahead of the writer (a virtual week in about a minute): the job waits
    // for it each flush period, so that the pool is never exhausted and the week loses nothing.
    while (s % 10 == 0 && m.buffers_in_flight() > 2)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    const uint64_t start = fake.CuptiNow();
    p->Launch(step_kernel, ++correlation, start, start + 1'000'000);
    ASSERT_TRUE(clock.Advance(std::chrono::seconds(1))) << "a timer handler hung at s=" << s;
    if (s % 300 == 0) {
      const std::string body = Scrape(port);
      ++scrapes;
      if (MetricValue(body, "cupmon_windows_opened_total") == UINT64_MAX) ++scrape_failures;
    }
    if (s % (6 * 3600) == 0 && s > 0) {
      // Every kernel of the week is checked while retention still keeps it (the count of
      // seconds checked below fails when retention kept less than 6 hours).
      m.FlushAndWait();
      worst_error_ns = std::max(worst_error_ns, WorstClockErrorInChild(dir, fake, wall0, &checked));
    }
    if (s == 3600) {
      rss_after_first_hour = RssBytes();
      mappings_after_first_hour = RssByMapping();
      threads_after_first_hour = ThreadCount();
    }
  }
  const double week_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  // The week's last kernels, once a stats tick has written a sample after them.
  ASSERT_TRUE(clock.Advance(std::chrono::milliseconds(c.stats_ms)));
  m.FlushAndWait();
  worst_error_ns = std::max(worst_error_ns, WorstClockErrorInChild(dir, fake, wall0, &checked));
  const auto week_end_second = static_cast<ptrdiff_t>((clock.RealtimeNs() - wall0) / kSecond);
  const int64_t rss_after_week = RssBytes();
  const auto mappings_after_week = RssByMapping();
  const size_t threads_after_week = ThreadCount();
  const MonitorStats week = m.GetStats();

  // The burst: records as fast as the writer takes them (the producer waits while the pool is
  // nearly empty, so that the writer, not the pool, sets the rate), 1M records per virtual second.
  const auto burst_start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < kBurstRecords; ++i) {
    if (i % 1000 == 0) {
      ASSERT_TRUE(clock.Advance(std::chrono::milliseconds(1)));
    }
    // A buffer holds 303 kernel records: looked at about once a buffer.
    while (i % 256 == 0 && m.buffers_in_flight() + 3 > 16)
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    const uint64_t start = fake.CuptiNow() - 1000 + i % 1000;  // never ahead of the clock
    p->Kernel(burst_kernel, start, start + 500);
  }
  m.FlushAndWait();
  const double burst_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - burst_start).count();
  const int64_t rss_after_burst = RssBytes();
  const auto mappings_after_burst = RssByMapping();
  const size_t threads_after_burst = ThreadCount();
  const std::string last_scrape = Scrape(port);
  const MonitorStats before_stop = m.GetStats();
  ASSERT_TRUE(m.Stop());
  const MonitorStats stats = m.GetStats();
  const Decoded d = ReadDirectory(dir);

  // Clock map: every kernel on disk at the end too, mapped with the recording's own samples (the
  // last one written at stop, after the last record).
  worst_error_ns = std::max(worst_error_ns, WorstClockError(d, fake, wall0, &checked));
  const uint64_t seconds_checked =
      static_cast<uint64_t>(std::count(checked.begin(), checked.begin() + week_end_second, true));
  const uint64_t produced = fake.produced();
  std::printf(
      "week: %lld virtual days in %.1f s (%llu timer handlers); burst: %llu records in %.1f s "
      "(%.2f M records/s through the writer)\n"
      "records: produced %llu (dropped by the pool %llu) = decoded %llu + lost %llu + deleted by "
      "retention %llu (%llu files)\n"
      "disk: %llu files, %llu bytes (retention %llu); windows: %llu opened (%llu asked, %llu "
      "automatic of %llu slow steps, %llu refused); scrapes %llu (%llu failed)\n"
      "RSS: %.1f MiB after the first hour, %.1f after the week, %.1f after the burst; threads "
      "%zu, %zu, %zu\n"
      "clock map: %llu samples and %zu kernels in the final files; the kernels of %llu virtual "
      "seconds of the week checked, worst error %lld ns (CUPTI clock %lld ppb fast)\n",
      static_cast<long long>(kDays), week_wall_s, static_cast<unsigned long long>(clock.fired()),
      static_cast<unsigned long long>(kBurstRecords), burst_wall_s,
      kBurstRecords / burst_wall_s / 1e6, static_cast<unsigned long long>(produced),
      static_cast<unsigned long long>(fake.dropped_total()),
      static_cast<unsigned long long>(d.records),
      static_cast<unsigned long long>(d.last_stats.lost_records()),
      static_cast<unsigned long long>(d.last_stats.records_deleted()),
      static_cast<unsigned long long>(d.last_stats.files_deleted()),
      static_cast<unsigned long long>(d.files), static_cast<unsigned long long>(d.disk_bytes),
      static_cast<unsigned long long>(c.retention_bytes),
      static_cast<unsigned long long>(stats.windows_opened),
      static_cast<unsigned long long>(windows_asked),
      static_cast<unsigned long long>(stats.auto_windows_opened),
      static_cast<unsigned long long>(slow_steps),
      static_cast<unsigned long long>(stats.windows_refused),
      static_cast<unsigned long long>(scrapes), static_cast<unsigned long long>(scrape_failures),
      static_cast<double>(rss_after_first_hour) / 1048576.0,
      static_cast<double>(rss_after_week) / 1048576.0,
      static_cast<double>(rss_after_burst) / 1048576.0, threads_after_first_hour,
      threads_after_week, threads_after_burst, static_cast<unsigned long long>(d.clock.samples()),
      d.kernel_starts.size(), static_cast<unsigned long long>(seconds_checked),
      static_cast<long long>(worst_error_ns), static_cast<long long>(kDriftPpb));

  // The week lost nothing and saw no takeover; the burst was held to the writer's pace.
  EXPECT_EQ(week.pool_exhausted, 0u);
  EXPECT_EQ(week.cupti_gaps, 0u) << week.stranded_buffers << " stranded, tasks dropped "
                                 << week.tasks_dropped;
  EXPECT_EQ(stats.cupti_gaps, 0u);
  // Records in = decoded + counted losses + deleted by retention, and nothing was dropped
  // uncounted.
  EXPECT_EQ(d.damage, 0u);
  EXPECT_TRUE(d.ended);
  EXPECT_EQ(d.last_stats.records(), produced);
  EXPECT_EQ(d.records + d.last_stats.lost_records() + d.last_stats.records_deleted(), produced);
  EXPECT_EQ(d.last_stats.dropped_records(), fake.dropped_total());
  EXPECT_GT(d.last_stats.files_deleted(), 0u);  // retention ran
  // Disk within retention.
  EXPECT_LE(d.disk_bytes, c.retention_bytes);
  // Windows on schedule: one each hour, one per slow step, none refused, one at a time.
  EXPECT_EQ(stats.windows_opened, windows_asked + slow_steps);
  EXPECT_EQ(stats.auto_windows_opened, slow_steps);
  EXPECT_EQ(stats.windows_refused, 0u);
  EXPECT_GE(d.begins + 1, d.ends);
  EXPECT_LE(d.begins, d.ends + 1);
  EXPECT_EQ(week.windows_opened, windows_asked + slow_steps);
  // Metrics scraped on schedule, and the last scrape agrees with the stats.
  EXPECT_EQ(scrape_failures, 0u);
  EXPECT_EQ(MetricValue(last_scrape, "cupmon_windows_opened_total"), before_stop.windows_opened);
  EXPECT_EQ(MetricValue(last_scrape, "cupmon_kernel_records_total"),
            fake.produced_of_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_EQ(fake.produced_of_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
            static_cast<uint64_t>(seconds) + kBurstRecords);
  // Calibration on schedule: the files left hold one sample per stats period of the time they
  // span (the last hours of the week and the burst), and the map holds within 1 us everywhere.
  ASSERT_FALSE(d.kernel_starts.empty());
  const uint64_t span_s = (*std::max_element(d.kernel_starts.begin(), d.kernel_starts.end()) -
                           *std::min_element(d.kernel_starts.begin(), d.kernel_starts.end())) /
                          kSecond;
  EXPECT_GE(d.clock.samples() + 2, span_s / (c.stats_ms / 1000));
  EXPECT_LE(worst_error_ns, 1000);
  // Every second of the week that had a kernel (one a second, none during the 19 s of each slow
  // step's pause).
  EXPECT_EQ(seconds_checked, static_cast<uint64_t>(seconds));
  // Memory and threads flat. Under a sanitizer RSS says nothing about cupmon: ASan keeps freed
  // blocks in its quarantine and TSan grows its shadow, so only the plain build checks it.
  if (!kSanitized) {
    EXPECT_LE(std::abs(rss_after_week - rss_after_first_hour), 5 << 20)
        << "mappings that changed:\n"
        << RssChanges(mappings_after_first_hour, mappings_after_week);
    EXPECT_LE(std::abs(rss_after_burst - rss_after_first_hour), 5 << 20)
        << "mappings that changed:\n"
        << RssChanges(mappings_after_first_hour, mappings_after_burst);
  }
  EXPECT_EQ(threads_after_week, threads_after_first_hour);
  EXPECT_EQ(threads_after_burst, threads_after_first_hour);
}

}  // namespace
}  // namespace cupmon::testing

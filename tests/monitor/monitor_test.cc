// Whole-path tests: fake CUPTI (test double) -> Monitor -> rolling files -> read back.
#include "cupmon/monitor/monitor.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/commands.h"
#include "cupmon/decoder/reports.h"
#include "cupmon/format/chunk_scanner.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor_fixture.h"
#include "tools/cupmon_decode/stderr_text.h"
#include "recording_reader.h"
#include "test_dir.h"

namespace cupmon {
namespace {

using testing::FakeCupti;
using testing::ReadRecording;

std::string TempDir(const std::string& name) {
  return testing::FreshTestDir("cupmon-monitor-test", name);
}

MonitorOptions FakeOptions(FakeCupti* fake, const std::string& dir) {
  return testing::TestDoubleOptions(fake, dir);
}

TEST(MonitorTest, RecordsAndKernelNamesReachTheFiles) {
  FakeCupti fake;
  const std::string dir = TempDir("names");
  const uint32_t a = fake.AddKernelName("void ns::axpy<float>(int, float, float const*, float*)");
  const uint32_t b = fake.AddKernelName(std::string(3000, 'k'));  // a long template name
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake.NewProducer();
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(p->Kernel(i % 3 ? a : b, 100 + i, 200 + i));
  ASSERT_TRUE(p->Memcpy(4096, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1, 2));
  ASSERT_TRUE(p->Memset(512, 0, 3, 4));
  (*m)->Stop();
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_EQ(rb.decode_errors, 0u);
  EXPECT_TRUE(rb.have_footer_ended);
  EXPECT_TRUE(rb.header.synthetic());
  EXPECT_EQ(rb.header.pid(), static_cast<uint32_t>(getpid()));
  EXPECT_EQ(rb.header.config().entry_point(), "test-double");
  EXPECT_GE(rb.calibration_chunks, 2u);  // at start and at stop
  EXPECT_EQ(rb.records, 1002u);
  EXPECT_EQ(rb.kernels_without_name, 0u);
  EXPECT_EQ(rb.kernels_by_name.at("void ns::axpy<float>(int, float, float const*, float*)"), 666u);
  EXPECT_EQ(rb.kernels_by_name.at(std::string(3000, 'k')), 334u);
  EXPECT_EQ(rb.memcpy_bytes, 4096u);
  EXPECT_EQ(rb.memset_bytes, 512u);
  EXPECT_EQ(rb.last_stats.records(), 1002u);
  EXPECT_EQ((*m)->GetStats().strings, 2u);
}

size_t IndexOf(const std::vector<std::string>& calls, const std::string& call) {
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i] == call) return i;
  return SIZE_MAX;
}

TEST(MonitorTest, CuptiAttributesAreSetBeforeCallbacksAndKindsAndRecorded) {
  FakeCupti fake;
  const std::string dir = TempDir("attributes");
  MonitorOptions o = FakeOptions(&fake, dir);
  o.config.cupti_attributes.per_thread_buffers = false;
  o.config.cupti_attributes.device_buffer_bytes = 32ull << 20;
  o.config.cupti_attributes.device_buffer_preallocate = 16;
  o.config.cupti_attributes.device_buffer_pool_limit = 500;
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  const std::vector<std::string> calls = fake.calls();
  // The fake accepts a flag only as a uint8_t and a size only as a size_t: a call of the wrong
  // width would be refused and missing here.
  const size_t per_thread = IndexOf(calls, "SetAttribute(9,0)");
  const size_t device_buffer = IndexOf(calls, "SetAttribute(0,33554432)");
  const size_t limit = IndexOf(calls, "SetAttribute(2,500)");
  const size_t preallocate = IndexOf(calls, "SetAttribute(6,16)");
  const size_t registered = IndexOf(calls, "RegisterCallbacks");
  const size_t first_enable = IndexOf(calls, "Enable(10)");
  for (size_t i : {per_thread, device_buffer, limit, preallocate, registered, first_enable})
    ASSERT_NE(i, SIZE_MAX);
  // cupti_activity.h: PER_THREAD_ACTIVITY_BUFFER before registering and before any enable; the
  // pool limit before the pre-allocation that must stay below it.
  for (size_t i : {per_thread, device_buffer, limit, preallocate}) {
    EXPECT_LT(i, registered);
    EXPECT_LT(i, first_enable);
  }
  EXPECT_LT(limit, preallocate);
  FakeCupti::Producer* p = fake.NewProducer();
  ASSERT_TRUE(p->Kernel(fake.AddKernelName("k"), 1, 2));
  (*m)->Stop();
  const auto rb = ReadRecording(dir);
  const pb::Config& c = rb.header.config();
  ASSERT_TRUE(c.has_cupti_per_thread_buffers());
  EXPECT_FALSE(c.cupti_per_thread_buffers());
  EXPECT_EQ(c.cupti_device_buffer_bytes(), 32ull << 20);
  EXPECT_EQ(c.cupti_device_buffer_preallocate(), 16u);
  EXPECT_EQ(c.cupti_device_buffer_pool_limit(), 500u);
  EXPECT_FALSE(c.zero_buffers());
  std::ostringstream out, err;
  decode_cli::StderrText err_text(err);
  decoder::RunRowsCommand(decoder::ReportKind::kInfo, {dir}, {}, out, err_text);
  EXPECT_NE(out.str().find("CUPTI attributes set: per-thread buffers 0, device buffer 33554432 "
                           "bytes, device buffers pre-allocated 16, device buffer pool limit 500\n"),
            std::string::npos)
      << out.str();
}

TEST(MonitorTest, NoCuptiAttributeIsSetByDefault) {
  FakeCupti fake;
  const std::string dir = TempDir("attributes-default");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  for (const auto& call : fake.calls()) EXPECT_FALSE(call.starts_with("SetAttribute")) << call;
  (*m)->Stop();
  const auto rb = ReadRecording(dir);  // a named value: `c` refers into it
  const pb::Config& c = rb.header.config();
  EXPECT_FALSE(c.has_cupti_per_thread_buffers());
  EXPECT_FALSE(c.has_cupti_device_buffer_bytes());
  EXPECT_FALSE(c.has_cupti_device_buffer_preallocate());
  EXPECT_FALSE(c.has_cupti_device_buffer_pool_limit());
  std::ostringstream out, err;
  decode_cli::StderrText err_text(err);
  decoder::RunRowsCommand(decoder::ReportKind::kInfo, {dir}, {}, out, err_text);
  EXPECT_NE(out.str().find("Recording "), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("CUPTI attributes set"), std::string::npos) << out.str();
}

TEST(MonitorTest, RefusedCuptiAttributeIsLeftOutAndTheMonitorRuns) {
  FakeCupti fake;
  fake.FailSetAttributeWith(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER,
                            CUPTI_ERROR_NOT_SUPPORTED);
  const std::string dir = TempDir("attributes-refused");
  MonitorOptions o = FakeOptions(&fake, dir);
  o.config.cupti_attributes.per_thread_buffers = false;
  o.config.cupti_attributes.device_buffer_pool_limit = 8;
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_FALSE((*m)->config().cupti_attributes.per_thread_buffers.has_value());
  EXPECT_EQ((*m)->config().cupti_attributes.device_buffer_pool_limit, 8u);
  FakeCupti::Producer* p = fake.NewProducer();
  ASSERT_TRUE(p->Kernel(fake.AddKernelName("k"), 1, 2));
  (*m)->Stop();
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.records, 1u);
  EXPECT_FALSE(rb.header.config().has_cupti_per_thread_buffers());
  EXPECT_EQ(rb.header.config().cupti_device_buffer_pool_limit(), 8u);
}

TEST(MonitorTest, RecordSizesAreProbedThroughGetNextRecord) {
  FakeCupti fake;
  auto m = Monitor::Start(FakeOptions(&fake, TempDir("probe")));
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ((*m)->record_sizes().Size(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 216u);
  EXPECT_EQ((*m)->record_sizes().Size(CUPTI_ACTIVITY_KIND_MEMCPY), 96u);
  EXPECT_EQ((*m)->record_sizes().Size(CUPTI_ACTIVITY_KIND_MEMSET), 88u);
  EXPECT_EQ((*m)->record_sizes().Size(CUPTI_ACTIVITY_KIND_RUNTIME), 40u);
  EXPECT_EQ((*m)->record_sizes().Size(CUPTI_ACTIVITY_KIND_PC_SAMPLING), 0u);  // the fake lacks it
}

// Many producer threads against a tiny pool: every record is either decoded or counted dropped.
TEST(MonitorTest, StressAccountsForEveryRecordExactly) {
  FakeCupti fake;
  const std::string dir = TempDir("stress");
  MonitorOptions o = FakeOptions(&fake, dir);
  o.config.buffer_bytes = 64 << 10;
  o.config.pool_bytes = 4 * (64 << 10);  // 4 buffers for 8 producer threads
  o.config.file_bytes = 1 << 20;          // force rotation too
  o.config.retention_bytes = 1ull << 40;
  const uint32_t names[] = {fake.AddKernelName("k0"), fake.AddKernelName("k1<int>"),
                            fake.AddKernelName("k2")};
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;

  // Deterministic pressure first: five producers, four buffers -> the fifth record drops.
  std::vector<FakeCupti::Producer*> producers;
  for (int i = 0; i < 8; ++i) producers.push_back(fake.NewProducer());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(producers[i]->Kernel(names[0], 1, 2));
  ASSERT_FALSE(producers[4]->Kernel(names[0], 1, 2));

  constexpr int kPerThread = 250'000;
  std::atomic<uint64_t> attempts{5};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      FakeCupti::Producer* p = producers[t];
      // Each thread lands exactly kPerThread records; every failed attempt is a dropped record.
      uint64_t misses = 0;
      for (int i = 0, kept = 0; kept < kPerThread; ++i) {
        const uint64_t ts = 1'000'000ull * t + i + 1;
        bool ok;
        if (i % 50 == 0) ok = p->Memcpy(i, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, ts, ts + 1);
        else if (i % 77 == 0) ok = p->Memset(i, 0, ts, ts + 1);
        else ok = p->Kernel(names[i % 3], ts, ts + 5);
        attempts.fetch_add(1, std::memory_order_relaxed);
        kept += ok;
        // The writer is behind, or finished threads sit on part-filled buffers (no timer here):
        // yield, and now and then flush from this application thread as the timer would.
        if (!ok) std::this_thread::yield();
        if (!ok && ++misses % 256 == 0) (*m)->FlushAndWait();
      }
    });
  }
  for (auto& th : threads) th.join();
  (*m)->Stop();

  auto rb = ReadRecording(dir);
  const MonitorStats stats = (*m)->GetStats();
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_EQ(rb.decode_errors, 0u);
  std::printf("produced %lu dropped %lu files %zu compressed %lu\n", (unsigned long)fake.produced(),
              (unsigned long)fake.dropped_total(), rb.files,
              (unsigned long)rb.last_stats.compressed_bytes());
  EXPECT_EQ(fake.produced(), 8u * kPerThread + 4);
  EXPECT_GT(rb.files, 1u);
  EXPECT_EQ(fake.produced() + fake.dropped_total(), attempts.load());
  EXPECT_EQ(rb.records, fake.produced());
  EXPECT_EQ(rb.last_stats.records(), fake.produced());
  EXPECT_EQ(rb.last_stats.dropped_records(), fake.dropped_total());
  EXPECT_EQ(stats.dropped_records, fake.dropped_total());
  // Each drop in the fake is one request the pool answered with no buffer.
  EXPECT_EQ(rb.last_stats.pool_exhausted(), fake.dropped_total());
  EXPECT_GT(fake.dropped_total(), 0u);
  EXPECT_EQ(rb.kernels_without_name, 0u);
  EXPECT_EQ(rb.records_by_kind[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL],
            fake.produced_of_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_EQ(rb.records_by_kind[CUPTI_ACTIVITY_KIND_MEMCPY],
            fake.produced_of_kind(CUPTI_ACTIVITY_KIND_MEMCPY));
  EXPECT_EQ(stats.buffers_in_flight, 0u);
  EXPECT_EQ(fake.forced_flushes(), 1u);
  std::filesystem::remove_all(dir);
}

struct BehindMarkers : decoder::ChunkVisitor {
  void OnWindowMarker(const pb::WindowMarker& m) override {
    if (m.edge() == pb::WindowMarker::BEHIND_BEGIN || m.edge() == pb::WindowMarker::BEHIND_END)
      markers.push_back(m);
  }
  std::vector<pb::WindowMarker> markers;
};

BehindMarkers ReadBehindMarkers(const std::string& dir) {
  BehindMarkers v;
  auto listing = decoder::ListRecordings(dir);
  if (!listing || listing->recordings.size() != 1) return v;
  decoder::ReadIntegrity integrity;
  decoder::ReadRecording(listing->recordings[0], v, &integrity);
  return v;
}

// A monitor on the test double with a 50 ms flush period (the behind threshold stays 1 s:
// BehindWatch::ThresholdNs), its producer, and `n` kernels with timestamps recorded.
struct BehindJob {
  BehindJob(const std::string& name, int n) : dir(TempDir(name)) {
    kernel = fake.AddKernelName("k");
    MonitorOptions o = FakeOptions(&fake, dir);
    o.config.flush_ms = 50;
    auto started = Monitor::Start(o);
    if (!started) {
      ADD_FAILURE() << started.error().message;
      return;
    }
    m = std::move(*started);
    p = fake.NewProducer();
    for (int i = 0; i < n; ++i) EXPECT_TRUE(p->Kernel(kernel, 100 + i, 101 + i));
  }
  uint64_t behind() const { return m->GetStats().cupti_behind; }
  FakeCupti fake;
  std::string dir;
  uint32_t kernel = 0;
  std::unique_ptr<Monitor> m;
  FakeCupti::Producer* p = nullptr;
};

// CUPTI's worker behind its own records (on the GPU: a sustained 0.7 M kernels/s of graph replay,
// docs/RELIABILITY.md) shows as a periodic non-forced flush that takes longer than the flush
// period; CUPTI may then lose records without counting them, so the interval is marked.
TEST(MonitorTest, ACuptiBehindItsRecordsIsMarkedAndCounted) {
  BehindJob job("behind", 100);
  ASSERT_TRUE(job.m);
  job.fake.SetFlushDelay(std::chrono::milliseconds(1100));
  ASSERT_TRUE(testing::WaitFor([&] { return job.behind() == 1; }));
  job.fake.SetFlushDelay(std::chrono::milliseconds(0));
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(job.p->Kernel(job.kernel, 300 + i, 301 + i));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // fast flushes: caught up
  job.m->Stop();
  EXPECT_EQ(job.behind(), 1u);
  const auto rb = ReadRecording(job.dir);
  EXPECT_EQ(rb.records, 200u);
  EXPECT_EQ(rb.last_stats.cupti_behind(), 1u);
  const BehindMarkers v = ReadBehindMarkers(job.dir);
  ASSERT_EQ(v.markers.size(), 2u);
  EXPECT_EQ(v.markers[0].edge(), pb::WindowMarker::BEHIND_BEGIN);
  EXPECT_EQ(v.markers[1].edge(), pb::WindowMarker::BEHIND_END);
  EXPECT_EQ(v.markers[0].window_id(), 1u);
  EXPECT_EQ(v.markers[1].window_id(), 1u);
  EXPECT_LT(v.markers[0].cupti_ns(), v.markers[1].cupti_ns());
  // Marked by the tick that finds the flush inside CUPTI past the threshold, or, when it
  // returns before such a tick, by its return.
  EXPECT_NE(v.markers[0].note().find("a periodic cuptiActivityFlushAll(0) "), std::string::npos)
      << v.markers[0].note();
  EXPECT_NE(v.markers[1].note().find("caught up"), std::string::npos) << v.markers[1].note();
}

// CUPTI's worker falling behind shows first as buffers delivered long after their records ended,
// while each flush still returns quickly: marked from the late records on, and closed once buffers
// come on time again.
TEST(MonitorTest, BuffersDeliveredLateMarkCuptiBehindFromTheirRecords) {
  BehindJob job("behind-lag", 0);
  ASSERT_TRUE(job.m);
  const uint64_t now = job.fake.CuptiNow();
  for (int i = 0; i < 10; ++i)  // records of the last 100 ms: on time
    ASSERT_TRUE(job.p->Kernel(job.kernel, now - 100'000'000 + i, now - 100'000'000 + i + 1));
  // Records that ended before the recording started are not judged: the late ones below must end
  // after the start.
  std::this_thread::sleep_for(std::chrono::milliseconds(1600));
  EXPECT_EQ(job.behind(), 0u);
  // Records that ended 1.4 s ago, delivered now: beyond the flush period (50 ms) + 1 s.
  const uint64_t late_end = job.fake.CuptiNow() - 1'400'000'000;
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(job.p->Kernel(job.kernel, late_end - 1000 + i, late_end - 999 + i));
  ASSERT_TRUE(testing::WaitFor([&] { return job.behind() == 1; }));
  for (int i = 0; i < 10; ++i) {  // on time again
    const uint64_t t = job.fake.CuptiNow();
    ASSERT_TRUE(job.p->Kernel(job.kernel, t - 10, t));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  job.m->Stop();
  EXPECT_EQ(job.behind(), 1u);
  EXPECT_EQ(ReadRecording(job.dir).records, 30u);
  const BehindMarkers v = ReadBehindMarkers(job.dir);
  ASSERT_EQ(v.markers.size(), 2u);
  EXPECT_EQ(v.markers[0].edge(), pb::WindowMarker::BEHIND_BEGIN);
  // At the newest record's end of the late buffer that came latest (the test double may complete
  // the ten in more than one buffer).
  EXPECT_GE(v.markers[0].cupti_ns(), late_end - 999);
  EXPECT_LE(v.markers[0].cupti_ns(), late_end - 990);
  EXPECT_NE(v.markers[0].note().find("CUPTI completed a buffer "), std::string::npos)
      << v.markers[0].note();
  EXPECT_NE(v.markers[0].note().find(" ms after its newest record ended (flush period 50 ms)"),
            std::string::npos)
      << v.markers[0].note();
  EXPECT_EQ(v.markers[1].edge(), pb::WindowMarker::BEHIND_END);
  EXPECT_NE(v.markers[1].note().find("caught up"), std::string::npos) << v.markers[1].note();
}

TEST(MonitorTest, AStopWhileCuptiIsBehindClosesTheMarkedInterval) {
  BehindJob job("behind-at-stop", 10);
  ASSERT_TRUE(job.m);
  job.fake.SetFlushDelay(std::chrono::milliseconds(1100));
  ASSERT_TRUE(testing::WaitFor([&] { return job.behind() == 1; }));
  job.m->Stop(std::chrono::seconds(10));
  const BehindMarkers v = ReadBehindMarkers(job.dir);
  ASSERT_EQ(v.markers.size(), 2u);
  EXPECT_EQ(v.markers[1].edge(), pb::WindowMarker::BEHIND_END);
  EXPECT_NE(v.markers[1].note().find("recording stopped while CUPTI was behind"),
            std::string::npos)
      << v.markers[1].note();
  EXPECT_EQ(ReadRecording(job.dir).records, 10u);
}

TEST(MonitorTest, RecordsWithoutTimestampsMarkCuptiBehindUntilTheyStop) {
  // On the GPU, once CUPTI's worker had saturated, flushes were fast again while CUPTI recorded
  // almost no kernel and only records without timestamps came (docs/RELIABILITY.md).
  BehindJob job("behind-zero-ts", 10);
  ASSERT_TRUE(job.m);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(job.behind(), 0u);  // fast flushes, timestamps: nothing marked
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(job.p->Kernel(job.kernel, 0, 0));
  ASSERT_TRUE(testing::WaitFor([&] { return job.behind() >= 1; }));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(job.p->Kernel(job.kernel, 300 + i, 301 + i));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  job.m->Stop();
  // The five may reach two flushes with a clean one between (a slow machine): then two
  // intervals. Each opens on such records and closes at a clean flush.
  const BehindMarkers v = ReadBehindMarkers(job.dir);
  ASSERT_GE(v.markers.size(), 2u);
  ASSERT_EQ(v.markers.size() % 2, 0u);
  EXPECT_EQ(job.behind(), v.markers.size() / 2);
  for (size_t i = 0; i < v.markers.size(); i += 2) {
    EXPECT_EQ(v.markers[i].edge(), pb::WindowMarker::BEHIND_BEGIN);
    EXPECT_NE(v.markers[i].note().find(" records without timestamps since the last flush"),
              std::string::npos)
        << v.markers[i].note();
    EXPECT_EQ(v.markers[i + 1].edge(), pb::WindowMarker::BEHIND_END);
    EXPECT_NE(v.markers[i + 1].note().find("caught up"), std::string::npos)
        << v.markers[i + 1].note();
  }
}

TEST(MonitorTest, AFlushStillInsideCuptiIsMarkedWhileTheControlThreadAnswers) {
  // CUPTI's worker so far behind that a periodic flush does not return for seconds (on the GPU:
  // docs/RELIABILITY.md). The flush runs on its own thread: the control thread, which serves the
  // control socket and /metrics, still answers, and marks the interval before the flush returns.
  BehindJob job("behind-inside", 10);
  ASSERT_TRUE(job.m);
  job.fake.SetFlushDelay(std::chrono::milliseconds(6000));
  ASSERT_TRUE(testing::WaitFor([&] { return job.behind() == 1; }));
  const uint64_t returned = job.fake.flushes_returned();
  EXPECT_EQ(job.fake.flushes_inside(), 1);
  EXPECT_TRUE(job.m->RunOnControl([] {}));
  auto window = job.m->RequestWindow(100, {}, pb::TRIGGER_API);
  EXPECT_TRUE(window.has_value()) << window.error().message;
  // Still the same flush inside CUPTI, which no periodic tick joined by another.
  EXPECT_EQ(job.fake.flushes_returned(), returned);
  EXPECT_EQ(job.fake.flushes_inside(), 1);
  job.fake.SetFlushDelay(std::chrono::milliseconds(0));
  job.m->Stop(std::chrono::seconds(20));
  const BehindMarkers v = ReadBehindMarkers(job.dir);
  ASSERT_EQ(v.markers.size(), 2u);
  EXPECT_EQ(v.markers[0].edge(), pb::WindowMarker::BEHIND_BEGIN);
  EXPECT_NE(v.markers[0].note().find("has not returned for "), std::string::npos)
      << v.markers[0].note();
  EXPECT_EQ(v.markers[1].edge(), pb::WindowMarker::BEHIND_END);
  EXPECT_EQ(ReadRecording(job.dir).records, 10u);
}

TEST(MonitorTest, AFlushStillRunningAtStopIsMarkedBehindUpToTheStop) {
  // A periodic flush still inside CUPTI when the job stops: the stop waits a quarter of its time
  // for it, gives up (false: a thread is left in CUPTI), and the files are closed with the
  // interval marked from that flush's start.
  BehindJob job("behind-stuck", 10);
  ASSERT_TRUE(job.m);
  job.fake.SetFlushDelay(std::chrono::milliseconds(4000));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(job.m->Stop(std::chrono::milliseconds(1000)));
  ASSERT_TRUE(testing::WaitFor([&] { return ReadBehindMarkers(job.dir).markers.size() == 2; }));
  const BehindMarkers v = ReadBehindMarkers(job.dir);
  ASSERT_EQ(v.markers.size(), 2u);
  EXPECT_EQ(v.markers[0].edge(), pb::WindowMarker::BEHIND_BEGIN);
  EXPECT_EQ(v.markers[1].edge(), pb::WindowMarker::BEHIND_END);
  EXPECT_LE(v.markers[0].cupti_ns(), v.markers[1].cupti_ns());
  EXPECT_NE(v.markers[0].note().find("not returned"), std::string::npos) << v.markers[0].note();
  EXPECT_EQ(ReadRecording(job.dir).records, 10u);
  job.fake.SetFlushDelay(std::chrono::milliseconds(0));
  ASSERT_TRUE(testing::WaitFor([&] { return job.fake.flushes_inside() == 0; }));
  EXPECT_EQ(job.behind(), 1u);  // the late flush is not counted again
}

// The footer's chunk index (docs/FORMAT.md, "Chunk index") from the monitor's own layout: the
// kinds the monitor records are timed, so a reader given a time range can skip what lies outside.
TEST(MonitorTest, TheFootersIndexPlacesEveryRawBufferInTime) {
  FakeCupti fake;
  const std::string dir = TempDir("footer-index");
  const uint32_t kernel = fake.AddKernelName("k");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake.NewProducer();
  const uint64_t t0 = 1'000'000'000;
  for (uint64_t i = 0; i < 3000; ++i)
    ASSERT_TRUE(p->Kernel(kernel, t0 + i * 1000, t0 + i * 1000 + 500));
  (*m)->Stop();
  auto listing = decoder::ListRecordings(dir);
  ASSERT_TRUE(listing && listing->recordings.size() == 1u);
  uint64_t raw = 0, lo = UINT64_MAX, hi = 0;
  for (const auto& file : listing->recordings[0].files) {
    std::ifstream in(file.path, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    const auto footer = ChunkScanner::FindFooter(bytes);
    ASSERT_TRUE(footer) << file.path;
    pb::Footer f;
    ASSERT_TRUE(f.ParseFromArray(footer->payload.data(), static_cast<int>(footer->payload.size())))
        << "the test's footers are small enough to be stored, not compressed";
    ASSERT_TRUE(f.indexed());
    for (const pb::ChunkSpan& e : f.index()) {
      if (e.type() != static_cast<uint32_t>(ChunkType::kRawBuffer)) continue;
      ++raw;
      EXPECT_TRUE(e.timed());
      lo = std::min<uint64_t>(lo, e.min_ns());
      hi = std::max<uint64_t>(hi, e.max_ns());
    }
  }
  EXPECT_GT(raw, 0u);
  EXPECT_EQ(lo, t0);
  EXPECT_EQ(hi, t0 + 2999 * 1000 + 500);
}

TEST(MonitorTest, SecondStartIsRefused) {
  FakeCupti fake;
  auto m1 = Monitor::Start(FakeOptions(&fake, TempDir("second1")));
  ASSERT_TRUE(m1);
  auto m2 = Monitor::Start(FakeOptions(&fake, TempDir("second2")));
  ASSERT_FALSE(m2);
  EXPECT_NE(m2.error().message.find("already running"), std::string::npos);
  (*m1)->Stop();
  auto m3 = Monitor::Start(FakeOptions(&fake, TempDir("second3")));  // after a stop: allowed
  EXPECT_TRUE(m3);
}

TEST(MonitorTest, AnotherCuptiClientLeavesTheProcessUnmonitored) {
  FakeCupti fake;
  fake.FailRegisterWith(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  const std::string dir = TempDir("other");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("another CUPTI client"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir));  // no files for an unmonitored process
  FakeCupti ok;  // and a later start works: the failed one left nothing behind
  EXPECT_TRUE(Monitor::Start(FakeOptions(&ok, TempDir("other2"))));
}

TEST(MonitorTest, NoKindCanBeEnabledIsAClearError) {
  FakeCupti fake;
  fake.FailEnableWith(CUPTI_ERROR_UNKNOWN);
  auto m = Monitor::Start(FakeOptions(&fake, TempDir("nogpu")));
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("no activity kind could be enabled"), std::string::npos);
}

TEST(MonitorTest, UnwritableDirectoryCountsLossesAndKeepsRunning) {
  FakeCupti fake;
  const std::string base = TempDir("unwritable");
  std::filesystem::create_directories(base);
  std::ofstream(base + "/file") << "x";
  auto m = Monitor::Start(FakeOptions(&fake, base + "/file/sub"));  // ENOTDIR, even for root
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake.NewProducer();
  const uint32_t n = fake.AddKernelName("k");
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(p->Kernel(n, 1, 2));
  (*m)->FlushAndWait();
  const MonitorStats s = (*m)->GetStats();
  EXPECT_GT(s.write_errors, 0u);
  EXPECT_GT(s.chunks_lost, 0u);
  EXPECT_FALSE(s.last_write_error.empty());
  // Every record taken in is accounted for: none reached a disk, all 100 are counted as lost.
  EXPECT_EQ(s.records, 100u);
  EXPECT_EQ(s.lost_records, 100u);
  EXPECT_EQ(s.lost_kernel_records, 100u);
  EXPECT_EQ(s.buffers_in_flight, 0u);  // buffers were recycled although nothing was written
  (*m)->Stop();
  std::filesystem::remove_all(base);
}

std::set<int> OpenFds() {
  std::set<int> fds;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
    fds.insert(std::stoi(e.path().filename().string()));
  return fds;
}

TEST(MonitorTest, EveryDescriptorTheMonitorOpensIsCloseOnExec) {
  FakeCupti fake;
  const std::set<int> before = OpenFds();
  auto m = Monitor::Start(FakeOptions(&fake, TempDir("cloexec")));
  ASSERT_TRUE(m);
  FakeCupti::Producer* p = fake.NewProducer();
  const uint32_t n = fake.AddKernelName("k");
  for (int i = 0; i < 10; ++i) p->Kernel(n, 1, 2);
  (*m)->FlushAndWait();
  size_t checked = 0;
  for (int fd : OpenFds()) {
    if (before.contains(fd)) continue;
    const int flags = fcntl(fd, F_GETFD);
    if (flags < 0) continue;  // the directory iterator's own fd, already closed
    EXPECT_TRUE(flags & FD_CLOEXEC) << "fd " << fd << " -> "
                                    << std::filesystem::read_symlink("/proc/self/fd/" +
                                                                     std::to_string(fd));
    ++checked;
  }
  EXPECT_GE(checked, 2u);  // at least the output file and the io_context's descriptors
  (*m)->Stop();
}

TEST(MonitorTest, ForkedChildNeverWritesNorFlushes) {
  FakeCupti fake;
  const std::string dir = TempDir("fork");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m);
  FakeCupti::Producer* p = fake.NewProducer();
  const uint32_t n = fake.AddKernelName("parent");
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(p->Kernel(n, 1, 2));
  (*m)->FlushAndWait();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);  // a hang in the child fails the test instead of blocking it
    int code = 0;
    if (!Monitor::InForkedChild()) code |= 1;
    FakeCupti::Producer* cp = fake.NewProducer();
    if (cp->Kernel(n, 1, 2)) code |= 2;  // the request callback must hand out no buffer
    (*m)->FlushAndWait();                       // must return at once
    (*m)->Stop();                        // must not flush nor write
    if (Monitor::Start(FakeOptions(&fake, dir + "-child"))) code |= 4;
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(Monitor::InForkedChild());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(p->Kernel(n, 1, 2));
  (*m)->Stop();
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_EQ(rb.records, 20u);
  EXPECT_EQ(rb.files, 1u);
  EXPECT_FALSE(std::filesystem::exists(dir + "-child"));
}

// The child process runs the monitor with the fake, flushes, reports what it flushed, keeps
// writing, and is killed with SIGKILL. Everything flushed before the kill must decode.
TEST(MonitorTest, SigkillMidWriteLosesNothingFlushed) {
  const std::string dir = TempDir("sigkill");
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(pipe_fds[1], 3);
    execl(CUPMON_SIGKILL_CHILD, CUPMON_SIGKILL_CHILD, dir.c_str(), "3", nullptr);
    _exit(127);
  }
  close(pipe_fds[1]);
  FILE* in = fdopen(pipe_fds[0], "r");
  unsigned long long flushed = 0;
  ASSERT_EQ(std::fscanf(in, "flushed %llu", &flushed), 1);
  fclose(in);
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_EQ(rb.decode_errors, 0u);
  EXPECT_LE(rb.truncated_tails, 1u);  // at most the chunk being written at the kill
  EXPECT_GE(rb.records, flushed);
  EXPECT_GT(flushed, 0u);
  EXPECT_EQ(rb.kernels_without_name, 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cupmon

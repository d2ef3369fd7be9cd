// CuptiMux (cupmon + another CUPTI client sharing CUPTI when preloaded) and CallbackWatch (noticing
// that another client took CUPTI's callbacks without preload). FakeCupti plays real CUPTI; a fake
// "other client" (OtherClient below) plays torch.profiler/Kineto through the mux's client face.
#include "monitor/src/cupti_mux.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/trace_builder.h"
#include "cupmon/monitor/monitor.h"
#include "monitor/src/callback_watch.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor_fixture.h"
#include "recording_reader.h"
#include "test_dir.h"

namespace cupmon {
namespace {

using testing::FakeCupti;

constexpr uint32_t kKernel = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
constexpr uint32_t kMemcpy = CUPTI_ACTIVITY_KIND_MEMCPY;
constexpr uint32_t kMemset = CUPTI_ACTIVITY_KIND_MEMSET;
constexpr uint32_t kDriver = CUPTI_ACTIVITY_KIND_DRIVER;

std::string TempDir(const std::string& name) {
  return testing::FreshTestDir("cupmon-mux-test", name);
}

MonitorOptions Options(CuptiApi* cupti, const std::string& dir) {
  MonitorOptions o = testing::TestDoubleOptions(cupti, dir);
  o.config.control = false;  // flush_ms stays 0: tests flush explicitly, except the takeover tests
  o.config.buffer_bytes = 64 << 10;
  o.config.pool_bytes = 1 << 20;
  return o;
}

// The other CUPTI client: owns its buffers (malloc), records what its completed callback got.
// C callbacks cannot capture, so the one instance under test is a global.
struct OtherClient {
  FakeCupti* fake = nullptr;  // its walker (real CUPTI's, as a client would use)
  std::mutex mu;
  std::set<uint8_t*> outstanding;
  std::vector<uint32_t> kinds;     // kinds of the records received, in order
  std::vector<uint64_t> starts;    // their start times (kernel/memcpy/memset)
  std::vector<size_t> per_buffer;  // records per completed buffer
  uint64_t requests = 0, completed = 0, unknown_buffers = 0, empty_buffers = 0;
  size_t buffer_size = 64 << 10;
  size_t max_records = 0;
  bool give_null = false;
  CuptiMux* flush_from_callback = nullptr;  // calls ClientFlushAll inside its completed callback
  // Like Kineto's bufferCompleted: asks for the dropped count of the buffer's (context, stream)
  // inside its completed callback, and adds it up.
  CuptiMux* drops_from_callback = nullptr;
  uint64_t drops_seen_in_callback = 0;

  ~OtherClient() {
    for (uint8_t* b : outstanding) std::free(b);
  }
};
OtherClient* g_client = nullptr;

void CUPTIAPI ClientRequest(uint8_t** buffer, size_t* size, size_t* max_records) {
  std::lock_guard<std::mutex> lk(g_client->mu);
  ++g_client->requests;
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  if (g_client->give_null) return;
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(8, g_client->buffer_size));
  g_client->outstanding.insert(b);
  *buffer = b;
  *size = g_client->buffer_size;
  *max_records = g_client->max_records;
}

void CUPTIAPI ClientComplete(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t,
                             size_t valid) {
  if (g_client->flush_from_callback) g_client->flush_from_callback->ClientFlushAll(0);
  size_t dropped = 0;
  if (g_client->drops_from_callback &&
      g_client->drops_from_callback->ClientGetNumDroppedRecords(ctx, stream, &dropped) !=
          CUPTI_SUCCESS)
    dropped = 0;
  std::lock_guard<std::mutex> lk(g_client->mu);
  g_client->drops_seen_in_callback += dropped;
  if (!g_client->outstanding.erase(buffer)) {
    ++g_client->unknown_buffers;  // as Kineto: log, leave the buffer alone
    return;
  }
  ++g_client->completed;
  if (valid == 0) ++g_client->empty_buffers;
  size_t n = 0;
  CUpti_Activity* rec = nullptr;
  while (g_client->fake->ActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    ++n;
    g_client->kinds.push_back(rec->kind);
    uint64_t start = 0;
    if (rec->kind == kKernel) start = reinterpret_cast<CUpti_ActivityKernel10*>(rec)->start;
    if (rec->kind == kMemcpy) start = reinterpret_cast<CUpti_ActivityMemcpy6*>(rec)->start;
    if (rec->kind == kMemset) start = reinterpret_cast<CUpti_ActivityMemset4*>(rec)->start;
    g_client->starts.push_back(start);
  }
  g_client->per_buffer.push_back(n);
  std::free(buffer);
}

class CuptiMuxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_.fake = &fake_;
    g_client = &client_;
    name_ = fake_.AddKernelName("kernel");
  }
  void TearDown() override { g_client = nullptr; }

  // Interleaved kernel, memcpy, memset records with increasing start times.
  void Produce(FakeCupti::Producer* p, int n, uint64_t t0) {
    for (int i = 0; i < n; ++i) {
      const uint64_t t = t0 + 10 * static_cast<uint64_t>(i);
      ASSERT_TRUE(p->Kernel(name_, t, t + 1));
      ASSERT_TRUE(p->Memcpy(64, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, t + 2, t + 3));
      ASSERT_TRUE(p->Memset(64, 0, t + 4, t + 5));
    }
  }
  size_t ClientCount(uint32_t kind) {
    std::lock_guard<std::mutex> lk(client_.mu);
    size_t n = 0;
    for (uint32_t k : client_.kinds) n += k == kind;
    return n;
  }
  size_t Outstanding() {
    std::lock_guard<std::mutex> lk(client_.mu);
    return client_.outstanding.size();
  }
  size_t Calls(const std::string& call) {
    size_t n = 0;
    for (const auto& c : fake_.calls()) n += c == call;
    return n;
  }

  FakeCupti fake_;
  OtherClient client_;
  uint32_t name_ = 0;
};

TEST_F(CuptiMuxTest, KindsAreReferenceCounted) {
  CuptiMux mux(fake_);
  static CUpti_BuffersCallbackRequestFunc noop_request = [](uint8_t** b, size_t* s, size_t* m) {
    *b = nullptr;
    *s = 0;
    *m = 0;
  };
  static CUpti_BuffersCallbackCompleteFunc noop_complete = [](CUcontext, uint32_t, uint8_t*, size_t,
                                                              size_t) {};
  ASSERT_EQ(mux.ActivityRegisterCallbacks(noop_request, noop_complete), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  EXPECT_EQ(Calls("Enable(10)"), 1u);

  // The client's enable of a kind cupmon has on does nothing real; its disable does not stop it.
  EXPECT_EQ(mux.ClientEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  EXPECT_EQ(mux.ClientDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  EXPECT_EQ(Calls("Enable(10)"), 1u);
  EXPECT_EQ(Calls("Disable(10)"), 0u);
  EXPECT_TRUE(fake_.kind_enabled(kKernel));
  // A disable of a kind the client never enabled changes nothing either.
  EXPECT_EQ(mux.ClientDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  EXPECT_TRUE(fake_.kind_enabled(kKernel));

  // A kind only the client uses is switched for real.
  EXPECT_EQ(mux.ClientEnable(CUPTI_ACTIVITY_KIND_DRIVER), CUPTI_SUCCESS);
  EXPECT_TRUE(fake_.kind_enabled(kDriver));
  EXPECT_EQ(mux.ClientDisable(CUPTI_ACTIVITY_KIND_DRIVER), CUPTI_SUCCESS);
  EXPECT_FALSE(fake_.kind_enabled(kDriver));

  // Both on: whoever disables last switches it off.
  EXPECT_EQ(mux.ClientEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  EXPECT_EQ(mux.ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  EXPECT_TRUE(fake_.kind_enabled(kKernel));
  EXPECT_EQ(mux.ClientDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  EXPECT_FALSE(fake_.kind_enabled(kKernel));
  // A window's kind (counted twice: always-on and window) survives one disable.
  ASSERT_EQ(mux.ActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_SUCCESS);
  EXPECT_EQ(mux.ActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_SUCCESS);
  EXPECT_TRUE(fake_.kind_enabled(kMemcpy));
  EXPECT_EQ(mux.ActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_SUCCESS);
  EXPECT_FALSE(fake_.kind_enabled(kMemcpy));
}

TEST_F(CuptiMuxTest, ClientGetsExactlyItsKindsInOrderWhileCupmonFilesHoldEverything) {
  CuptiMux mux(fake_);
  const std::string dir = TempDir("fanout");
  auto m = Monitor::Start(Options(&mux, dir));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake_.NewProducer();
  FakeCupti::Producer* q = fake_.NewProducer();
  Produce(p, 50, 1'000);  // before the client's session: cupmon only

  ASSERT_EQ(mux.ClientRegisterCallbacks(ClientRequest, ClientComplete), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ClientEnable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ClientEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  // Like CUPTI, the mux keeps one client buffer outstanding while the client has kinds on.
  EXPECT_EQ(Outstanding(), 1u);
  Produce(p, 600, 100'000);  // fills several 64 KiB client buffers
  Produce(q, 10, 900'000);
  // Kineto's stop: disable, then a forced flush; records made before the disable still arrive.
  ASSERT_EQ(mux.ClientDisable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ClientDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  EXPECT_TRUE(fake_.kind_enabled(kMemcpy));  // cupmon's always-on kinds stay on
  EXPECT_TRUE(fake_.kind_enabled(kKernel));
  ASSERT_EQ(mux.ClientFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  EXPECT_EQ(Outstanding(), 0u);  // every client buffer went back to it; none kept

  Produce(p, 40, 2'000'000);  // after the session: cupmon only
  (*m)->Stop();

  EXPECT_EQ(ClientCount(kMemcpy), 610u);
  EXPECT_EQ(ClientCount(kKernel), 610u);
  EXPECT_EQ(ClientCount(kMemset), 0u);  // never asked for
  {
    std::lock_guard<std::mutex> lk(client_.mu);
    EXPECT_EQ(client_.unknown_buffers, 0u);
    EXPECT_GT(client_.completed, 2u);
    // Per producer the records arrive in their original order: p's starts increase, then q's.
    uint64_t last_p = 0, last_q = 0;
    for (size_t i = 0; i < client_.starts.size(); ++i) {
      uint64_t& last = client_.starts[i] >= 900'000 ? last_q : last_p;
      EXPECT_GE(client_.starts[i], last) << "record " << i;
      last = client_.starts[i];
    }
  }
  const auto c = mux.counters();
  EXPECT_EQ(c.client_records, 1220u);
  EXPECT_EQ(c.undelivered_records, 0u);

  const auto rb = testing::ReadRecording(dir);
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_EQ(rb.records_by_kind.at(kKernel), 700u);
  EXPECT_EQ(rb.records_by_kind.at(kMemcpy), 700u);
  EXPECT_EQ(rb.records_by_kind.at(kMemset), 700u);
  EXPECT_EQ(rb.last_stats.shared_client_records(), 1220u);
}

TEST_F(CuptiMuxTest, RecordsFromBeforeTheClientsSessionStayWithCupmon) {
  CuptiMux mux(fake_);
  const std::string dir = TempDir("presession");
  auto m = Monitor::Start(Options(&mux, dir));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake_.NewProducer();
  // Kineto may enable a kind at start-up, long before it registers callbacks for a session.
  ASSERT_EQ(mux.ClientEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  Produce(p, 30, 1'000);
  ASSERT_EQ(mux.ClientRegisterCallbacks(ClientRequest, ClientComplete), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ClientRegisterCallbacks(ClientRequest, ClientComplete), CUPTI_SUCCESS);  // again
  Produce(p, 7, 100'000);
  ASSERT_EQ(mux.ClientDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ClientFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  (*m)->Stop();
  EXPECT_EQ(ClientCount(kKernel), 7u);
  EXPECT_EQ(Outstanding(), 0u);
  const auto rb = testing::ReadRecording(dir);
  EXPECT_EQ(rb.records_by_kind.at(kKernel), 37u);
}

TEST_F(CuptiMuxTest, ClientTimestampCallbackComesAfterRecordsInFlightAreCompleted) {
  // A record still inside CUPTI when a client (torch.profiler) registers its timestamp callback
  // would come out with zero timestamps, so the mux completes the records in flight before it
  // forwards the callback.
  CuptiMux mux(fake_);
  const std::string dir = TempDir("tscallback");
  auto m = Monitor::Start(Options(&mux, dir));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake_.NewProducer();
  Produce(p, 25, 1'000);
  const uint64_t forced_before = fake_.forced_flushes();
  auto tsc = []() -> uint64_t { return 42; };
  ASSERT_EQ(cupmon::CuptiMux::Current(), &mux);
  EXPECT_EQ(mux.ClientRegisterTimestampCallback(tsc), CUPTI_SUCCESS);
  EXPECT_EQ(fake_.timestamp_callbacks(), 1u);
  EXPECT_EQ(fake_.records_pending_at_last_timestamp_callback(), 0u);
  EXPECT_EQ(fake_.forced_flushes(), forced_before + 1);
  EXPECT_EQ(mux.counters().timestamp_callbacks, 1u);
  EXPECT_EQ(mux.ClientRegisterTimestampCallback(nullptr), CUPTI_ERROR_INVALID_PARAMETER);  // real's answer
  (*m)->Stop();
  const auto rb = testing::ReadRecording(dir);
  EXPECT_EQ(rb.records_by_kind.at(kKernel), 25u);
}

TEST_F(CuptiMuxTest, ClientDisableAndFinalizeDoNotStopCupmon) {
  CuptiMux mux(fake_);
  const std::string dir = TempDir("finalize");
  auto m = Monitor::Start(Options(&mux, dir));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake_.NewProducer();
  ASSERT_EQ(mux.ClientRegisterCallbacks(ClientRequest, ClientComplete), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ClientEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ClientEnable(CUPTI_ACTIVITY_KIND_DRIVER), CUPTI_SUCCESS);  // the client's own
  EXPECT_TRUE(fake_.kind_enabled(kDriver));
  Produce(p, 20, 1'000);
  ASSERT_EQ(mux.ClientDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  EXPECT_TRUE(fake_.kind_enabled(kKernel));
  // cuptiFinalize from the client while cupmon runs: no teardown, the client's kinds go off.
  EXPECT_EQ(mux.ClientFinalize(), CUPTI_SUCCESS);
  EXPECT_FALSE(fake_.kind_enabled(kDriver));
  EXPECT_TRUE(fake_.kind_enabled(kKernel));
  EXPECT_TRUE(fake_.kind_enabled(kMemcpy));
  EXPECT_EQ(Outstanding(), 0u);  // its buffer went back at finalize
  Produce(p, 30, 100'000);
  ASSERT_EQ(mux.ClientFlushAll(0), CUPTI_SUCCESS);
  (*m)->Stop();
  EXPECT_EQ(ClientCount(kKernel), 0u);  // undelivered records were still in cupmon's buffer,
                                        // and the client is gone: nothing reaches it afterwards
  const auto rb = testing::ReadRecording(dir);
  EXPECT_EQ(rb.records_by_kind.at(kKernel), 50u);
  EXPECT_EQ(rb.records_by_kind.at(kMemcpy), 50u);
  EXPECT_EQ(fake_.forced_flushes(), 1u);  // only cupmon's own, at stop
}

TEST_F(CuptiMuxTest, NullCallbacksNullBuffersAndUnknownKindsCrashNothing) {
  CuptiMux mux(fake_);
  const std::string dir = TempDir("bad");
  auto m = Monitor::Start(Options(&mux, dir));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake_.NewProducer();
  EXPECT_EQ(mux.ClientRegisterCallbacks(nullptr, nullptr), CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_EQ(mux.ClientRegisterCallbacks(ClientRequest, nullptr), CUPTI_ERROR_INVALID_PARAMETER);
  // Kinds nobody knows: CUPTI's answer, no crash; cupmon's kinds untouched.
  EXPECT_NE(mux.ClientEnable(static_cast<CUpti_ActivityKind>(200)), CUPTI_SUCCESS);
  EXPECT_NE(mux.ClientEnable(static_cast<CUpti_ActivityKind>(100000)), CUPTI_SUCCESS);
  EXPECT_NE(mux.ClientDisable(static_cast<CUpti_ActivityKind>(100000)), CUPTI_SUCCESS);
  EXPECT_EQ(mux.ClientDisable(static_cast<CUpti_ActivityKind>(200)), CUPTI_SUCCESS);
  // Kinds enabled with no callbacks registered: nothing to deliver to.
  ASSERT_EQ(mux.ClientEnable(CUPTI_ACTIVITY_KIND_MEMSET), CUPTI_SUCCESS);
  Produce(p, 10, 1'000);
  ASSERT_EQ(mux.ClientFlushAll(0), CUPTI_SUCCESS);

  // A client whose request callback returns no buffer: its records are counted, not delivered.
  client_.give_null = true;
  ASSERT_EQ(mux.ClientRegisterCallbacks(ClientRequest, ClientComplete), CUPTI_SUCCESS);
  Produce(p, 10, 100'000);
  ASSERT_EQ(mux.ClientFlushAll(0), CUPTI_SUCCESS);
  EXPECT_EQ(mux.counters().undelivered_records, 10u);
  EXPECT_GE(mux.counters().null_client_buffers, 1u);
  EXPECT_EQ(ClientCount(kMemset), 0u);

  // Buffers too small for one record, then buffers that hold only three records each.
  client_.give_null = false;
  client_.buffer_size = 64;
  Produce(p, 4, 200'000);
  ASSERT_EQ(mux.ClientFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  EXPECT_EQ(mux.counters().undelivered_records, 14u);
  client_.buffer_size = 64 << 10;
  client_.max_records = 3;
  ASSERT_EQ(mux.ClientFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  Produce(p, 10, 300'000);
  ASSERT_EQ(mux.ClientFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  EXPECT_EQ(ClientCount(kMemset), 10u);
  {
    std::lock_guard<std::mutex> lk(client_.mu);
    for (size_t n : client_.per_buffer) EXPECT_LE(n, 3u);
  }
  // A client that flushes from inside its own completed callback: no deadlock, counted.
  client_.flush_from_callback = &mux;
  Produce(p, 2, 400'000);
  ASSERT_EQ(mux.ClientFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  EXPECT_GE(mux.counters().reentrant_flushes, 1u);
  client_.flush_from_callback = nullptr;
  EXPECT_EQ(mux.ClientFinalize(), CUPTI_SUCCESS);
  (*m)->Stop();
  EXPECT_EQ(Outstanding(), 0u);
  const auto rb = testing::ReadRecording(dir);
  EXPECT_EQ(rb.records_by_kind.at(kMemset), 36u);  // cupmon lost nothing
  EXPECT_EQ(rb.records_by_kind.at(kKernel), 36u);
}

TEST_F(CuptiMuxTest, WithoutCupmonTheClientTalksToCuptiUnchanged) {
  CuptiMux mux(fake_);
  // Not attached: calls are forwarded (and remembered).
  ASSERT_EQ(mux.ClientRegisterCallbacks(ClientRequest, ClientComplete), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ClientEnable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_SUCCESS);
  EXPECT_TRUE(fake_.kind_enabled(kMemcpy));
  FakeCupti::Producer* p = fake_.NewProducer();
  ASSERT_TRUE(p->Memcpy(1, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1, 2));
  ASSERT_EQ(mux.ClientFlushAll(0), CUPTI_SUCCESS);
  EXPECT_EQ(ClientCount(kMemcpy), 1u);  // CUPTI called the client's callbacks directly

  // cupmon starts (it attaches), runs, stops and detaches: CUPTI goes back to the client.
  const std::string dir = TempDir("detach");
  auto m = Monitor::Start(Options(&mux, dir));
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_TRUE(p->Memcpy(1, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 10, 11));
  ASSERT_TRUE(p->Kernel(name_, 12, 13));
  (*m)->Stop();
  mux.Detach();
  EXPECT_FALSE(mux.attached());
  EXPECT_TRUE(fake_.kind_enabled(kMemcpy));   // the client's
  EXPECT_FALSE(fake_.kind_enabled(kKernel));  // cupmon's only
  ASSERT_TRUE(p->Memcpy(1, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 20, 21));
  ASSERT_EQ(mux.ClientFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  EXPECT_EQ(ClientCount(kMemcpy), 3u);
  EXPECT_EQ(ClientCount(kKernel), 0u);
  ASSERT_EQ(mux.ClientDisable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_SUCCESS);
  EXPECT_FALSE(fake_.kind_enabled(kMemcpy));
  EXPECT_EQ(Outstanding(), 0u);
}

// ---- Dropped-record counts: CUPTI resets its count at every read ----

CUpti_BuffersCallbackRequestFunc NoBufferRequest() {
  return [](uint8_t** b, size_t* s, size_t* m) {
    *b = nullptr;
    *s = 0;
    *m = 0;
  };
}
CUpti_BuffersCallbackCompleteFunc NoopComplete() {
  return [](CUcontext, uint32_t, uint8_t*, size_t, size_t) {};
}

size_t CupmonDrops(CuptiMux& mux, CUcontext ctx = nullptr, uint32_t stream = 0) {
  size_t d = ~size_t{0};
  EXPECT_EQ(mux.ActivityGetNumDroppedRecords(ctx, stream, &d), CUPTI_SUCCESS);
  return d;
}
size_t ClientDrops(CuptiMux& mux, CUcontext ctx = nullptr, uint32_t stream = 0) {
  size_t d = ~size_t{0};
  EXPECT_EQ(mux.ClientGetNumDroppedRecords(ctx, stream, &d), CUPTI_SUCCESS);
  return d;
}

TEST_F(CuptiMuxTest, BothSidesSeeEveryDropWhoeverReadsCuptiFirst) {
  CuptiMux mux(fake_);
  // cupmon attached with a request callback that never gives a buffer: every record is dropped.
  ASSERT_EQ(mux.ActivityRegisterCallbacks(NoBufferRequest(), NoopComplete()), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ClientRegisterCallbacks(ClientRequest, ClientComplete), CUPTI_SUCCESS);
  FakeCupti::Producer* p = fake_.NewProducer();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(p->Kernel(name_, 1, 2));
  ASSERT_EQ(fake_.dropped_total(), 3u);

  // The client's read empties CUPTI's count; cupmon still gets the three, and the other way round.
  EXPECT_EQ(ClientDrops(mux), 3u);
  EXPECT_EQ(CupmonDrops(mux), 3u);
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(p->Kernel(name_, 3, 4));
  EXPECT_EQ(CupmonDrops(mux), 2u);
  EXPECT_EQ(ClientDrops(mux), 2u);
  // Nothing twice.
  EXPECT_EQ(CupmonDrops(mux), 0u);
  EXPECT_EQ(ClientDrops(mux), 0u);

  // Interleaved: each side gets the drops since its own last read.
  fake_.AddDropped(nullptr, 0, 4);
  EXPECT_EQ(ClientDrops(mux), 4u);
  fake_.AddDropped(nullptr, 0, 1);
  EXPECT_EQ(CupmonDrops(mux), 5u);
  EXPECT_EQ(ClientDrops(mux), 1u);

  // CUPTI counts per (context, stream) queue; so does the share.
  int ctx_storage = 0;
  auto* ctx = reinterpret_cast<CUcontext>(&ctx_storage);
  fake_.AddDropped(ctx, 7, 6);
  fake_.AddDropped(nullptr, 0, 1);
  EXPECT_EQ(ClientDrops(mux, ctx, 7), 6u);
  EXPECT_EQ(CupmonDrops(mux), 1u);
  EXPECT_EQ(CupmonDrops(mux, ctx, 7), 6u);
  EXPECT_EQ(CupmonDrops(mux, ctx, 8), 0u);
  EXPECT_EQ(ClientDrops(mux), 1u);
  EXPECT_EQ(ClientDrops(mux, ctx, 7), 0u);

  // A client registering (new) callbacks starts its count there: drops cupmon read before are not
  // its own.
  fake_.AddDropped(nullptr, 0, 9);
  EXPECT_EQ(CupmonDrops(mux), 9u);
  auto other_complete = [](CUcontext c, uint32_t s, uint8_t* b, size_t n, size_t v) {
    ClientComplete(c, s, b, n, v);
  };
  ASSERT_EQ(mux.ClientRegisterCallbacks(ClientRequest, other_complete), CUPTI_SUCCESS);
  EXPECT_EQ(ClientDrops(mux), 0u);
  fake_.AddDropped(nullptr, 0, 2);
  EXPECT_EQ(ClientDrops(mux), 2u);
  EXPECT_EQ(CupmonDrops(mux), 2u);

  size_t* null_count = nullptr;
  EXPECT_EQ(mux.ClientGetNumDroppedRecords(nullptr, 0, null_count), CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_EQ(mux.ActivityGetNumDroppedRecords(nullptr, 0, null_count),
            CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_EQ(mux.ClientFinalize(), CUPTI_SUCCESS);
  EXPECT_EQ(Outstanding(), 0u);
}

TEST_F(CuptiMuxTest, ConcurrentReadersBothCountEveryDrop) {
  CuptiMux mux(fake_);
  ASSERT_EQ(mux.ActivityRegisterCallbacks(NoBufferRequest(), NoopComplete()), CUPTI_SUCCESS);
  constexpr uint64_t kDrops = 20000;
  std::atomic<bool> done{false};
  uint64_t cupmon_sum = 0, client_sum = 0;
  std::thread cupmon_reader([&] {
    while (!done.load()) cupmon_sum += CupmonDrops(mux);
  });
  std::thread client_reader([&] {
    while (!done.load()) client_sum += ClientDrops(mux);
  });
  for (uint64_t i = 0; i < kDrops; ++i) fake_.AddDropped(nullptr, 0, 1);
  done.store(true);
  cupmon_reader.join();
  client_reader.join();
  cupmon_sum += CupmonDrops(mux);
  client_sum += ClientDrops(mux);
  EXPECT_EQ(cupmon_sum, kDrops);
  EXPECT_EQ(client_sum, kDrops);
}

TEST_F(CuptiMuxTest, KinetoAsksForDropsInsideItsCallbackAndBothSidesGetThemAll) {
  // Kineto's bufferCompleted calls cuptiActivityGetNumDroppedRecords(ctx, stream) for every buffer.
  // The mux delivers the client's buffers with its own lock held (on CUPTI's thread, inside CUPTI's
  // callback, or on a client call), so it must not ask CUPTI there; and neither side's reads may
  // take drops away from the other: the monitor's stats and the client's sum both hold all seven.
  CuptiMux mux(fake_);
  const std::string dir = TempDir("drops");
  auto m = Monitor::Start(Options(&mux, dir));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake_.NewProducer();
  client_.drops_from_callback = &mux;
  client_.max_records = 4;  // its buffers fill inside the mux's delivery, on the fake's thread
  ASSERT_EQ(mux.ClientRegisterCallbacks(ClientRequest, ClientComplete), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ClientEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  Produce(p, 40, 1'000);
  fake_.AddDropped(nullptr, 0, 5);
  (*m)->FlushAndWait();  // cupmon's poll reads the five from CUPTI
  Produce(p, 40, 100'000);
  fake_.AddDropped(nullptr, 0, 2);  // read from CUPTI by nobody yet
  ASSERT_EQ(mux.ClientFlushAll(0), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ClientDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  ASSERT_EQ(mux.ClientFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  {
    std::lock_guard<std::mutex> lk(client_.mu);
    EXPECT_GT(client_.completed, 10u);
    // Answered from what cupmon's poll read: the two still inside CUPTI come at its next call.
    EXPECT_EQ(client_.drops_seen_in_callback, 5u);
  }
  EXPECT_EQ(ClientCount(kKernel), 80u);
  // Outside its callbacks the client's call reads CUPTI: the remaining two.
  EXPECT_EQ(ClientDrops(mux), 2u);
  (*m)->Stop();
  EXPECT_EQ(fake_.dropped_queries_inside_callbacks(), 0u);
  const auto rb = testing::ReadRecording(dir);
  EXPECT_EQ(rb.last_stats.dropped_records(), 7u);
  EXPECT_EQ(rb.records_by_kind.at(kKernel), 80u);
  client_.drops_from_callback = nullptr;
}

// ---- Without preload: CallbackWatch and the monitor's gap markers ----

TEST(CallbackWatchTest, SilenceWithBuffersInFlightIsAGapAndReclaimEndsIt) {
  CallbackWatch w(/*reclaim_ms=*/1000);
  // The first tick has nothing to compare with.
  EXPECT_EQ(w.Tick(5, 1, false, 0), CallbackWatch::Action::kNone);
  EXPECT_EQ(w.Tick(9, 1, false, 100), CallbackWatch::Action::kNone);  // callbacks ran
  EXPECT_EQ(w.Tick(9, 1, false, 200), CallbackWatch::Action::kGapBegins);
  EXPECT_TRUE(w.in_gap());
  EXPECT_EQ(w.Tick(9, 1, false, 700), CallbackWatch::Action::kNone);
  EXPECT_EQ(w.Tick(9, 1, false, 1200), CallbackWatch::Action::kReclaim);
  w.Reclaimed(1);
  EXPECT_FALSE(w.in_gap());
  EXPECT_EQ(w.stranded(), 1u);
  // The stranded buffer alone never makes a new gap, however silent.
  EXPECT_EQ(w.Tick(9, 1, false, 1300), CallbackWatch::Action::kNone);
  EXPECT_EQ(w.Tick(9, 1, false, 1400), CallbackWatch::Action::kNone);
  // New buffers inside CUPTI, silence again: the second gap.
  EXPECT_EQ(w.Tick(12, 3, false, 1500), CallbackWatch::Action::kNone);
  EXPECT_EQ(w.Tick(12, 3, false, 1600), CallbackWatch::Action::kGapBegins);
  EXPECT_EQ(w.gaps(), 2u);
  // A long kernel that finally completes: the callbacks run again, the gap ends by itself.
  EXPECT_EQ(w.Tick(13, 1, false, 1700), CallbackWatch::Action::kGapEnds);
  EXPECT_FALSE(w.in_gap());
}

TEST(CallbackWatchTest, BuffersThatGrowAreNotAGap) {
  // A GPU-bound phase: CUPTI keeps writing into cupmon's buffer, which holds a kernel still
  // running, so no flush returns it and no callback runs for many periods.
  CallbackWatch w(/*reclaim_ms=*/1000);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(w.Tick(7, 1, /*grew=*/true, i * 100), CallbackWatch::Action::kNone);
  EXPECT_EQ(w.Tick(7, 1, false, 2100), CallbackWatch::Action::kGapBegins);
}

TEST(CallbackWatchTest, FilledPrefixBytesFindsTheWrittenPart) {
  std::vector<uint64_t> words((256 << 10) / 8, 0);
  auto* b = reinterpret_cast<uint8_t*>(words.data());
  const size_t size = words.size() * 8;
  EXPECT_EQ(FilledPrefixBytes(b, size), 0u);
  // Records of 216 bytes, each starting with its kind, the rest mostly zero.
  size_t off = 0;
  for (int i = 0; i < 100; ++i, off += 216) b[off] = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  const size_t filled = FilledPrefixBytes(b, size);
  EXPECT_GE(filled, off - 216);
  EXPECT_LE(filled, off + kFillWindowBytes);
  for (int i = 0; i < 100; ++i, off += 216) b[off] = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  EXPECT_GT(FilledPrefixBytes(b, size), filled);
  std::memset(b, 0xff, size);
  EXPECT_EQ(FilledPrefixBytes(b, size), size);
}

TEST(CallbackWatchTest, IdleApplicationIsNotAGap) {
  CallbackWatch w(/*reclaim_ms=*/0);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(w.Tick(4, 0, false, i * 100), CallbackWatch::Action::kNone);
  EXPECT_EQ(w.Tick(5, 1, false, 1000), CallbackWatch::Action::kNone);
  EXPECT_EQ(w.Tick(5, 1, false, 1100), CallbackWatch::Action::kGapBegins);
  for (int i = 0; i < 10; ++i)  // reclaim_ms 0: never taken back
    EXPECT_EQ(w.Tick(5, 1, false, 2000 + i * 1000), CallbackWatch::Action::kNone);
}

// Another client's callbacks, registered straight with (fake) CUPTI: no preload, no mux.
std::mutex g_other_mu;
std::set<uint8_t*> g_other_buffers;
uint64_t g_other_records = 0, g_other_unknown = 0;

void CUPTIAPI OtherRequest(uint8_t** buffer, size_t* size, size_t* max_records) {
  std::lock_guard<std::mutex> lk(g_other_mu);
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, 64 << 10));
  *size = 64 << 10;
  *max_records = 0;
  g_other_buffers.insert(*buffer);
}

void CUPTIAPI OtherComplete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lk(g_other_mu);
  if (!g_other_buffers.erase(buffer)) {
    ++g_other_unknown;  // cupmon's buffer: "bufferCompleted called with unknown buffer"
    return;
  }
  g_other_records += valid / sizeof(CUpti_ActivityKernel10);
  std::free(buffer);
}

// FakeCupti whose non-forced flush can be held back (a kernel still running), so that a cupmon
// buffer stays inside CUPTI deterministically while the other client registers.
class HoldingCupti final : public CuptiApi {
 public:
  explicit HoldingCupti(FakeCupti& f) : f_(f) {}
  std::atomic<bool> hold{false};
  // Runs on the monitor's thread right after it switches a kind on: the application's next record,
  // racing the reclaim.
  std::function<void()> after_enable;
  CUptiResult GetVersion(uint32_t* v) override { return f_.GetVersion(v); }
  CUptiResult ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
                                        CUpti_BuffersCallbackCompleteFunc c) override {
    return f_.ActivityRegisterCallbacks(r, c);
  }
  CUptiResult ActivityEnable(CUpti_ActivityKind k) override {
    const CUptiResult r = f_.ActivityEnable(k);
    if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && after_enable)
      std::exchange(after_enable, nullptr)();
    return r;
  }
  CUptiResult ActivityDisable(CUpti_ActivityKind k) override { return f_.ActivityDisable(k); }
  CUptiResult ActivityFlushAll(uint32_t flag) override {
    if (hold && !(flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)) return CUPTI_SUCCESS;
    return f_.ActivityFlushAll(flag);
  }
  CUptiResult ActivityFlushPeriod(uint32_t ms) override { return f_.ActivityFlushPeriod(ms); }
  CUptiResult ActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t* d) override {
    return f_.ActivityGetNumDroppedRecords(c, s, d);
  }
  CUptiResult ActivitySetAttribute(CUpti_ActivityAttribute a, size_t* s, void* v) override {
    return f_.ActivitySetAttribute(a, s, v);
  }
  CUptiResult ActivityGetNextRecord(uint8_t* b, size_t v, CUpti_Activity** r) override {
    return f_.ActivityGetNextRecord(b, v, r);
  }
  CUptiResult GetTimestamp(uint64_t* t) override { return f_.GetTimestamp(t); }
  CUptiResult ActivityEnableRuntimeApi(CUpti_CallbackId c, uint8_t e) override {
    return f_.ActivityEnableRuntimeApi(c, e);
  }
  CUptiResult ActivityEnableDriverApi(CUpti_CallbackId c, uint8_t e) override {
    return f_.ActivityEnableDriverApi(c, e);
  }
  CUptiResult ActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind k,
                                                uint64_t id) override {
    return f_.ActivityPushExternalCorrelationId(k, id);
  }
  CUptiResult ActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind k,
                                               uint64_t* id) override {
    return f_.ActivityPopExternalCorrelationId(k, id);
  }
  CUptiResult GetCallbackName(CUpti_CallbackDomain d, uint32_t c, const char** n) override {
    return f_.GetCallbackName(d, c, n);
  }
  const char* ResultString(CUptiResult r) override { return f_.ResultString(r); }

 private:
  FakeCupti& f_;
};

struct MarkerCollector : decoder::ChunkVisitor {
  void OnWindowMarker(const pb::WindowMarker& m) override { markers.push_back(m); }
  std::vector<pb::WindowMarker> markers;
};

// The window markers of the one recording in `dir`; none when there is not exactly one.
std::vector<pb::WindowMarker> MarkersOf(const std::string& dir) {
  auto listing = decoder::ListRecordings(dir);
  if (!listing || listing->recordings.size() != 1) {
    ADD_FAILURE() << "expected one recording in " << dir;
    return {};
  }
  MarkerCollector markers;
  decoder::ReadIntegrity integrity;
  decoder::ReadRecording(listing->recordings[0], markers, &integrity);
  return markers.markers;
}

template <typename Pred>
bool WaitFor(Pred pred, int timeout_ms = 5000) {
  for (int i = 0; i < timeout_ms / 5; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

// The other client's counters, before a test, and the buffers it was handed, after.
void ResetOtherClient() {
  std::lock_guard<std::mutex> lk(g_other_mu);
  g_other_records = g_other_unknown = 0;
}
void FreeOtherClientBuffers() {
  std::lock_guard<std::mutex> lk(g_other_mu);
  for (uint8_t* b : g_other_buffers) std::free(b);
  g_other_buffers.clear();
}

TEST(TakeoverTest, AnotherClientTakingTheCallbacksIsMarkedCountedAndUndone) {
  ResetOtherClient();
  FakeCupti fake;
  HoldingCupti cupti(fake);
  const uint32_t name = fake.AddKernelName("k");
  const std::string dir = TempDir("takeover");
  MonitorOptions o = Options(&cupti, dir);
  o.config.flush_ms = 20;
  o.config.reclaim_ms = 1000;
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake.NewProducer();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(p->Kernel(name, 100 + i, 101 + i));
  (*m)->FlushAndWait();
  cupti.hold = true;
  ASSERT_TRUE(p->Kernel(name, 200, 201));  // a cupmon buffer inside CUPTI
  // torch.profiler starts: its registration replaces cupmon's callbacks.
  ASSERT_EQ(fake.ActivityRegisterCallbacks(OtherRequest, OtherComplete), CUPTI_SUCCESS);
  cupti.hold = false;
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().cupti_gaps == 1; }));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(p->Kernel(name, 300 + i, 301 + i));  // the other's
  fake.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  {
    std::lock_guard<std::mutex> lk(g_other_mu);
    EXPECT_EQ(g_other_unknown, 1u);  // cupmon's buffer went to the other client
  }
  // cupmon takes CUPTI back after reclaim_ms and switches its kinds on again; the application's
  // next kernel asks cupmon for a new buffer at once, before the reclaim is done. That buffer is
  // cupmon's own, not stranded.
  std::atomic<bool> first_after{false};
  cupti.after_enable = [&] { first_after = p->Kernel(name, 400, 401); };
  // Its session ends: it switches its kinds off (cupmon's too, CUPTI's kinds are process-wide).
  fake.ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  ASSERT_TRUE(WaitFor([&] { return fake.kind_enabled(kKernel) && first_after.load(); }));
  for (int i = 1; i < 7; ++i) ASSERT_TRUE(p->Kernel(name, 400 + i, 401 + i));
  (*m)->Stop();
  const MonitorStats st = (*m)->GetStats();
  EXPECT_EQ(st.cupti_gaps, 1u);
  EXPECT_EQ(st.stranded_buffers, 1u);
  {
    std::lock_guard<std::mutex> lk(g_other_mu);
    EXPECT_EQ(g_other_records, 5u);
  }

  const auto rb = testing::ReadRecording(dir);
  EXPECT_EQ(rb.records_by_kind.at(kKernel), 17u);  // 10 before + 7 after; 1 + 5 were the other's
  EXPECT_EQ(rb.last_stats.cupti_gaps(), 1u);
  const std::vector<pb::WindowMarker> markers = MarkersOf(dir);
  ASSERT_EQ(markers.size(), 2u);
  EXPECT_EQ(markers[0].edge(), pb::WindowMarker::GAP_BEGIN);
  EXPECT_EQ(markers[1].edge(), pb::WindowMarker::GAP_END);
  EXPECT_EQ(markers[0].window_id(), 1u);
  EXPECT_LE(markers[0].cupti_ns(), markers[1].cupti_ns());
  EXPECT_NE(markers[1].note().find("registered its callbacks and kinds again"),
            std::string::npos)
      << markers[1].note();
  FreeOtherClientBuffers();
}

// Sharing CUPTI through the multiplexer (the preload), a kernel that runs longer than the flush
// period with no other CUDA work (a rank waiting in a collective) holds a cupmon buffer inside
// CUPTI unchanged, as a takeover would: the interval is marked, its note names the long kernel
// first, it ends when the buffer comes back, and nothing is lost.
TEST(TakeoverTest, UnderSharingALongKernelIsMarkedAsSuchAndLosesNothing) {
  FakeCupti fake;
  HoldingCupti cupti(fake);
  CuptiMux mux(cupti);
  const uint32_t name = fake.AddKernelName("k");
  const std::string dir = TempDir("long-kernel");
  MonitorOptions o = Options(&mux, dir);
  o.config.flush_ms = 20;
  o.config.reclaim_ms = 60'000;
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake.NewProducer();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(p->Kernel(name, 100 + i, 101 + i));
  (*m)->FlushAndWait();
  cupti.hold = true;                         // the collective kernel runs on
  ASSERT_TRUE(p->Kernel(name, 200, 201));  // its buffer stays inside CUPTI
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().cupti_gaps == 1; }));
  cupti.hold = false;  // it completes: the next flush hands the buffer back
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(p->Kernel(name, 300 + i, 301 + i));
  (*m)->FlushAndWait();
  // The watch sees the callbacks run again at its next tick (every 20 ms); no counter shows it,
  // so wait for many ticks.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  (*m)->Stop();
  const MonitorStats st = (*m)->GetStats();
  EXPECT_EQ(st.cupti_gaps, 1u);
  EXPECT_EQ(st.stranded_buffers, 0u);
  const auto rb = testing::ReadRecording(dir);
  EXPECT_EQ(rb.records_by_kind.at(kKernel), 16u);  // every kernel
  const std::vector<pb::WindowMarker> markers = MarkersOf(dir);
  ASSERT_EQ(markers.size(), 2u);
  EXPECT_EQ(markers[0].edge(), pb::WindowMarker::GAP_BEGIN);
  EXPECT_NE(markers[0].note().find("a kernel ran that long with no other CUDA work"),
            std::string::npos)
      << markers[0].note();
  EXPECT_EQ(markers[1].edge(), pb::WindowMarker::GAP_END);
  EXPECT_EQ(markers[1].note(), "cupmon's buffer callbacks ran again");
}

TEST(TakeoverTest, ATakeoverShorterThanTheWatchIsMarkedAtStop) {
  // The short job under plain injection: the other client takes CUPTI before the first
  // flush tick could notice, and the job stops before the next one. The records in cupmon's
  // buffers went to the other client: the recording must say so, not be silently empty.
  ResetOtherClient();
  FakeCupti fake;
  HoldingCupti cupti(fake);
  const uint32_t name = fake.AddKernelName("k");
  const std::string dir = TempDir("short-takeover");
  MonitorOptions o = Options(&cupti, dir);
  o.config.flush_ms = 60'000;  // no tick during the test
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake.NewProducer();
  cupti.hold = true;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(p->Kernel(name, 100 + i, 101 + i));  // cupmon's buffer
  ASSERT_EQ(fake.ActivityRegisterCallbacks(OtherRequest, OtherComplete), CUPTI_SUCCESS);
  cupti.hold = false;
  (*m)->Stop();  // its forced flush completes cupmon's buffer into the other client
  const MonitorStats st = (*m)->GetStats();
  EXPECT_EQ(st.cupti_gaps, 1u);
  EXPECT_EQ(st.stranded_buffers, 1u);
  {
    std::lock_guard<std::mutex> lk(g_other_mu);
    EXPECT_EQ(g_other_unknown, 1u);
  }
  const std::vector<pb::WindowMarker> markers = MarkersOf(dir);  // a file says what happened
  ASSERT_EQ(markers.size(), 2u);
  EXPECT_EQ(markers[0].edge(), pb::WindowMarker::GAP_BEGIN);
  EXPECT_EQ(markers[1].edge(), pb::WindowMarker::GAP_END);
  EXPECT_EQ(markers[0].window_id(), 1u);
  EXPECT_LE(markers[0].cupti_ns(), markers[1].cupti_ns());
  EXPECT_NE(markers[0].note().find("had not come back"), std::string::npos)
      << markers[0].note();
  const auto rb = testing::ReadRecording(dir);
  EXPECT_EQ(rb.last_stats.cupti_gaps(), 1u);
  EXPECT_EQ(rb.last_stats.stranded_buffers(), 1u);
  FreeOtherClientBuffers();
}

TEST(TakeoverTest, AHealthyStopMarksNoGap) {
  FakeCupti fake;
  const uint32_t name = fake.AddKernelName("k");
  const std::string dir = TempDir("healthy-stop");
  MonitorOptions o = Options(&fake, dir);
  o.config.flush_ms = 60'000;
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake.NewProducer();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(p->Kernel(name, 100 + i, 101 + i));
  (*m)->Stop();
  EXPECT_EQ((*m)->GetStats().cupti_gaps, 0u);
  const auto rb = testing::ReadRecording(dir);
  EXPECT_EQ(rb.records_by_kind.at(kKernel), 10u);
  EXPECT_EQ(rb.last_stats.cupti_gaps(), 0u);
}

// CUPTI's clock changes domain mid-recording (another client's timestamp callback; the fake's
// GetTimestamp shift stands in for it). The flush tick writes a calibration sample at once, and the
// decoder maps the kernels of both domains to the right wall times.
struct KernelRows : decoder::RowSink {
  void OnRow(const decoder::Row& r) override {
    if (r.type == decoder::RowType::kKernel) rows.push_back({r.start, r.wall_start, r.duration});
  }
  struct R {
    uint64_t start;
    int64_t wall;
    uint64_t duration;
  };
  std::vector<R> rows;
};

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

TEST(ClockDomainTest, DomainChangeWritesCalibrationAtOnceAndBothSidesMap) {
  FakeCupti fake;
  const uint32_t name = fake.AddKernelName("k");
  const std::string dir = TempDir("clock-domain");
  MonitorOptions o = Options(&fake, dir);
  o.config.flush_ms = 20;
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake.NewProducer();
  // Realtime domain (CUPTI's default): record times are CLOCK_REALTIME.
  const int64_t w0 = RealtimeNs();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(p->Kernel(name, w0 + i * 1000, w0 + i * 1000 + 500));
  (*m)->FlushAndWait();
  const uint64_t before = testing::ReadRecording(dir).calibration_chunks;
  // A monotonic-like domain from now on: CUPTI time = realtime - (realtime at the switch) + 500 s.
  const int64_t shift = 500'000'000'000 - RealtimeNs();
  fake.ShiftTimestampDomain(shift);
  // The next flush tick notices and writes a calibration chunk, before any periodic one
  // (stats_ms is 0: otherwise only at stop).
  ASSERT_TRUE(WaitFor([&] { return testing::ReadRecording(dir).calibration_chunks > before; }));
  const int64_t w1 = RealtimeNs();
  const uint64_t c1 = static_cast<uint64_t>(w1 + shift);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(p->Kernel(name, c1 + i * 1000, c1 + i * 1000 + 700));
  (*m)->FlushAndWait();
  // Stays in the domain: no further prompt samples.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const uint64_t after = testing::ReadRecording(dir).calibration_chunks;
  (*m)->Stop();

  KernelRows sink;
  decoder::TraceBuilder builder({}, &sink);
  auto listing = decoder::ListRecordings(dir);
  ASSERT_TRUE(listing && listing->recordings.size() == 1u);
  decoder::ReadIntegrity integrity;
  decoder::ReadRecording(listing->recordings[0], builder, &integrity);
  builder.Finish();
  EXPECT_EQ(builder.counts().calibration.non_monotonic, 0u);
  EXPECT_EQ(builder.counts().calibration.domain_changes, 1u);
  EXPECT_EQ(builder.clock().domains(), 2u);
  ASSERT_EQ(sink.rows.size(), 20u);
  constexpr int64_t kSlack = 5'000'000;  // calibration readings bracket a preemptible CUPTI call
  for (const auto& r : sink.rows) {
    const bool realtime_side = r.start >= static_cast<uint64_t>(w0);
    const int64_t expected = realtime_side ? static_cast<int64_t>(r.start)
                                           : static_cast<int64_t>(r.start) - shift;
    EXPECT_NEAR(static_cast<double>(r.wall), static_cast<double>(expected), kSlack)
        << (realtime_side ? "realtime side " : "monotonic side ") << r.start;
    EXPECT_EQ(r.duration, realtime_side ? 500u : 700u);
  }
  EXPECT_LE(after, before + 2);  // one prompt sample (two if a reading was preempted)
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cupmon

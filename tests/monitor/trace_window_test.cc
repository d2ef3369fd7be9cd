// Trace windows, their triggers (API, signal, control socket), annotations and the metrics
// endpoint, end to end: fake CUPTI (test double) -> Monitor -> files -> cupmon::decoder.
#include "cupmon/monitor/trace_window.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cupmon/control/control_client.h"
#include "cupmon/control/protocol.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/trace_builder.h"
#include "cupmon/format/record_sizes.h"
#include "cupmon/metrics/metrics_server.h"
#include "cupmon/monitor/monitor.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor_fixture.h"
#include "test_dir.h"

namespace cupmon {
namespace {

using testing::FakeCupti;

constexpr uint32_t kRuntime = CUPTI_ACTIVITY_KIND_RUNTIME;
constexpr uint32_t kDriver = CUPTI_ACTIVITY_KIND_DRIVER;
constexpr uint32_t kLaunchCbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
constexpr uint32_t kGetDeviceCbid = CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020;
constexpr uint32_t kCuLaunchCbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
constexpr uint32_t kCtxGetCurrentCbid = CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent;

std::string TempDir(const std::string& name) {
  return testing::FreshTestDir("cupmon-window-test", name);
}

MonitorOptions FakeOptions(FakeCupti* fake, const std::string& dir) {
  return testing::TestDoubleOptions(fake, dir);
}

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);  // the fake's CUPTI clock
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

using testing::WaitFor;

struct ApiRecord {
  uint32_t kind, cbid, correlation;
  uint64_t start;
};

// What a recording holds, read with cupmon::decoder's reader.
struct Contents : decoder::ChunkVisitor {
  std::vector<pb::WindowMarker> markers;
  std::vector<ApiRecord> api;
  std::vector<uint32_t> kernel_correlations;
  std::vector<std::pair<uint64_t, uint32_t>> external;  // (external id, correlation id)
  std::map<uint64_t, std::string> strings;              // pointer -> text
  RecordSizeTable sizes;
  decoder::ReadIntegrity integrity;

  void OnHeader(const pb::RecordingHeader& h, const decoder::ChunkOrigin&) override {
    for (const auto& rs : h.record_sizes()) sizes.Set(rs.kind(), rs.size());
  }
  void OnStrings(const pb::StringTable& t) override {
    for (const auto& e : t.entries()) strings[e.pointer()] = e.text();
  }
  void OnWindowMarker(const pb::WindowMarker& m) override { markers.push_back(m); }
  void OnRawBuffer(const RawBufferPrefix&, std::span<const uint8_t> records,
                   const decoder::ChunkOrigin&) override {
    WalkRecords(records, sizes, [&](uint32_t kind, std::span<const uint8_t> r) {
      if (kind == kRuntime || kind == kDriver) {
        CUpti_ActivityAPI a;
        std::memcpy(&a, r.data(), sizeof(a));
        api.push_back({kind, a.cbid, a.correlationId, a.start});
      } else if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        CUpti_ActivityKernel10 k;
        std::memcpy(&k, r.data(), sizeof(k));
        kernel_correlations.push_back(k.correlationId);
      } else if (kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        CUpti_ActivityExternalCorrelation e;
        std::memcpy(&e, r.data(), sizeof(e));
        const uint64_t external_id = e.externalId;  // packed struct: copy, do not bind
        const uint32_t correlation = e.correlationId;
        external.emplace_back(external_id, correlation);
      }
    });
  }

  std::set<uint32_t> ApiCorrelations(uint32_t kind, uint32_t cbid) const {
    std::set<uint32_t> out;
    for (const auto& a : api)
      if (a.kind == kind && a.cbid == cbid) out.insert(a.correlation);
    return out;
  }
  const pb::WindowMarker* Marker(uint32_t id, pb::WindowMarker::Edge edge) const {
    for (const auto& m : markers)
      if (m.window_id() == id && m.edge() == edge) return &m;
    return nullptr;
  }
};

Contents Read(const std::string& dir) {
  Contents c;
  auto listing = decoder::ListRecordings(dir);
  EXPECT_TRUE(listing) << listing.error().message;
  if (!listing) return c;
  EXPECT_EQ(listing->recordings.size(), 1u);
  if (listing->recordings.empty()) return c;
  decoder::ReadRecording(listing->recordings[0], c, &c.integrity);
  EXPECT_FALSE(c.integrity.HasWarnings());
  return c;
}

std::vector<uint32_t> Kinds(const pb::WindowMarker& m) { return {m.kinds().begin(), m.kinds().end()}; }

size_t IndexOf(const std::vector<std::string>& calls, const std::string& call) {
  const auto it = std::find(calls.begin(), calls.end(), call);
  return it == calls.end() ? SIZE_MAX : static_cast<size_t>(it - calls.begin());
}

// ---- 1. A window opened through the API ----

TEST(TraceWindowTest, ApiWindowEnablesKindsFiltersAfterEnableAndFramesItsRecords) {
  FakeCupti fake;
  const std::string dir = TempDir("api");
  const uint32_t k = fake.AddKernelName("k");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  const MonitorConfig& config = (*m)->config();
  FakeCupti::Producer* p = fake.NewProducer();

  // Before: the API kinds are off; kernels still flow.
  ASSERT_TRUE(p->Launch(k, 1, 100, 200));
  EXPECT_FALSE(p->Api(kDriver, kCuLaunchCbid, 1, 100, 101));

  auto id = (*m)->RequestWindow(60'000, {}, pb::TRIGGER_API);
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(*id, 1u);
  EXPECT_TRUE((*m)->GetStats().window_open);
  for (uint32_t kind : config.window_kinds) EXPECT_TRUE(fake.kind_enabled(kind)) << kind;
  // Filters came after the kind's enable (an enable afterwards would undo them) and are in force.
  const std::vector<std::string> calls = fake.calls();
  const size_t runtime_on = IndexOf(calls, "Enable(5)");
  const size_t driver_on = IndexOf(calls, "Enable(4)");
  ASSERT_NE(runtime_on, SIZE_MAX);
  ASSERT_NE(driver_on, SIZE_MAX);
  size_t runtime_filters = 0, driver_filters = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].starts_with("EnableRuntimeApi(")) {
      ++runtime_filters;
      EXPECT_GT(i, runtime_on) << calls[i];
      EXPECT_TRUE(calls[i].ends_with(",0)")) << calls[i];
    } else if (calls[i].starts_with("EnableDriverApi(")) {
      ++driver_filters;
      EXPECT_GT(i, driver_on) << calls[i];
    }
  }
  EXPECT_EQ(runtime_filters, 7u);  // the seven runtime names of the default filter list
  EXPECT_EQ(driver_filters, 6u);
  EXPECT_TRUE(fake.api_filtered(kRuntime, kGetDeviceCbid));
  EXPECT_TRUE(fake.api_filtered(kDriver, kCtxGetCurrentCbid));
  // PyTorch's per-launch queries (H200 window checks).
  EXPECT_TRUE(fake.api_filtered(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000));
  EXPECT_TRUE(fake.api_filtered(kDriver, CUPTI_DRIVER_TRACE_CBID_cuKernelGetName));
  EXPECT_TRUE(fake.api_filtered(kDriver, CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction));
  EXPECT_TRUE(fake.api_filtered(
      kDriver, CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags));
  EXPECT_FALSE(fake.api_filtered(kRuntime, kLaunchCbid));

  // During: launches and driver calls are recorded, filtered calls are not.
  const uint64_t t0 = NowNs();
  ASSERT_TRUE(p->Launch(k, 2, t0, t0 + 10));
  EXPECT_TRUE(p->Api(kDriver, kCuLaunchCbid, 2, t0 + 1, t0 + 2));
  EXPECT_FALSE(p->Api(kRuntime, kGetDeviceCbid, 3, t0 + 3, t0 + 4));
  EXPECT_FALSE(p->Api(kDriver, kCtxGetCurrentCbid, 3, t0 + 5, t0 + 6));
  ASSERT_TRUE((*m)->RequestCloseWindow());
  EXPECT_FALSE((*m)->GetStats().window_open);
  for (uint32_t kind : config.window_kinds) EXPECT_FALSE(fake.kind_enabled(kind)) << kind;
  for (uint32_t kind : config.kinds) EXPECT_TRUE(fake.kind_enabled(kind)) << kind;

  // After: off again.
  ASSERT_TRUE(p->Launch(k, 4, 300, 400));
  EXPECT_FALSE(p->Api(kDriver, kCuLaunchCbid, 4, 300, 301));

  // A second window filters again (its RUNTIME enable cleared the first window's filters).
  ASSERT_TRUE((*m)->RequestWindow(60'000, {kRuntime}, pb::TRIGGER_API));
  EXPECT_TRUE(fake.api_filtered(kRuntime, kGetDeviceCbid));
  EXPECT_FALSE(p->Api(kRuntime, kGetDeviceCbid, 5, 500, 501));
  ASSERT_TRUE(p->Launch(k, 6, 600, 700));
  ASSERT_TRUE((*m)->RequestCloseWindow());
  (*m)->Stop();

  const Contents c = Read(dir);
  EXPECT_EQ(c.ApiCorrelations(kRuntime, kLaunchCbid), (std::set<uint32_t>{2, 6}));
  EXPECT_EQ(c.ApiCorrelations(kDriver, kCuLaunchCbid), (std::set<uint32_t>{2}));
  EXPECT_TRUE(c.ApiCorrelations(kRuntime, kGetDeviceCbid).empty());
  EXPECT_TRUE(c.ApiCorrelations(kDriver, kCtxGetCurrentCbid).empty());
  EXPECT_EQ(c.api.size(), 3u);
  // The always-on stream has no gap around the windows.
  EXPECT_EQ(c.kernel_correlations, (std::vector<uint32_t>{1, 2, 4, 6}));

  ASSERT_EQ(c.markers.size(), 4u);
  const pb::WindowMarker* begin = c.Marker(1, pb::WindowMarker::BEGIN);
  const pb::WindowMarker* end = c.Marker(1, pb::WindowMarker::END);
  ASSERT_TRUE(begin && end);
  for (const pb::WindowMarker* mk : {begin, end}) {
    EXPECT_EQ(mk->source(), pb::TRIGGER_API);
    EXPECT_EQ(Kinds(*mk), config.window_kinds);
    EXPECT_EQ(mk->requested_ms(), 60'000u);
  }
  EXPECT_EQ(end->note(), "closed");
  EXPECT_LE(begin->cupti_ns(), end->cupti_ns());
  // Edge rule: the window's API records start inside [BEGIN, END] on CUPTI's clock.
  for (const ApiRecord& a : c.api) {
    if (a.correlation != 2) continue;
    EXPECT_GE(a.start, begin->cupti_ns());
    EXPECT_LE(a.start, end->cupti_ns());
  }
  // The markers are in stream order: BEGIN 1, END 1, BEGIN 2, END 2.
  EXPECT_EQ(c.markers[0].edge(), pb::WindowMarker::BEGIN);
  EXPECT_EQ(c.markers[1].edge(), pb::WindowMarker::END);
  EXPECT_EQ(c.markers[2].window_id(), 2u);
  EXPECT_EQ(Kinds(c.markers[2]), std::vector<uint32_t>{kRuntime});
  std::filesystem::remove_all(dir);
}

// ---- 2. Overlap, timer, early close ----

TEST(TraceWindowTest, RequestWhileOpenIsRefusedNamingTheOpenWindow) {
  FakeCupti fake;
  const std::string dir = TempDir("overlap");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_TRUE((*m)->RequestWindow(60'000, {}, pb::TRIGGER_API));
  const size_t calls_before = fake.calls().size();
  auto second = (*m)->RequestWindow(1000, {kRuntime}, pb::TRIGGER_API);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("window 1"), std::string::npos) << second.error().message;
  EXPECT_NE(second.error().message.find("refused"), std::string::npos) << second.error().message;
  EXPECT_EQ(fake.calls().size(), calls_before);  // no CUPTI call for a refused request
  EXPECT_EQ((*m)->GetStats().windows_opened, 1u);

  ASSERT_TRUE((*m)->RequestCloseWindow());
  auto again = (*m)->RequestCloseWindow();
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("no trace window is open"), std::string::npos);

  // A short window ends on its own timer.
  ASSERT_EQ((*m)->RequestWindow(20, {kRuntime}, pb::TRIGGER_API).value_or(0), 2u);
  EXPECT_TRUE(WaitFor([&] { return !(*m)->GetStats().window_open; }));
  EXPECT_FALSE(fake.kind_enabled(kRuntime));
  EXPECT_FALSE((*m)->RequestCloseWindow());
  (*m)->Stop();

  const Contents c = Read(dir);
  ASSERT_EQ(c.markers.size(), 4u);
  const pb::WindowMarker* end1 = c.Marker(1, pb::WindowMarker::END);
  const pb::WindowMarker* end2 = c.Marker(2, pb::WindowMarker::END);
  ASSERT_TRUE(end1 && end2);
  EXPECT_EQ(end1->note(), "closed");
  EXPECT_EQ(end2->note(), "duration");
  EXPECT_EQ(end2->requested_ms(), 20u);
  std::filesystem::remove_all(dir);
}

// ---- 3. Stop while open ----

TEST(TraceWindowTest, StopClosesTheOpenWindowAndRefusesLaterRequests) {
  FakeCupti fake;
  const std::string dir = TempDir("stop");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  const std::vector<uint32_t> window_kinds = (*m)->config().window_kinds;
  ASSERT_TRUE((*m)->RequestWindow(60'000, {}, pb::TRIGGER_API));
  FakeCupti::Producer* p = fake.NewProducer();
  ASSERT_TRUE(p->Launch(fake.AddKernelName("k"), 7, 1, 2));
  (*m)->Stop();
  for (uint32_t kind : window_kinds) {
    EXPECT_FALSE(fake.kind_enabled(kind)) << kind;
    EXPECT_NE(IndexOf(fake.calls(), "Disable(" + std::to_string(kind) + ")"), SIZE_MAX) << kind;
  }
  auto after = (*m)->RequestWindow(1000, {}, pb::TRIGGER_API);
  EXPECT_FALSE(after);
  EXPECT_FALSE((*m)->RequestCloseWindow());

  const Contents c = Read(dir);
  ASSERT_EQ(c.markers.size(), 2u);
  EXPECT_EQ(c.markers[1].edge(), pb::WindowMarker::END);
  EXPECT_EQ(c.markers[1].note(), "stop");
  EXPECT_EQ(c.ApiCorrelations(kRuntime, kLaunchCbid), (std::set<uint32_t>{7}));  // flushed first
  std::filesystem::remove_all(dir);
}

// Windows requested from one thread while another stops the monitor: every BEGIN has its END,
// and nothing is left enabled (run under ASan/TSan, this also checks that a request abandoned by
// the stop never touches the requester's stack).
TEST(TraceWindowTest, ConcurrentStopLeavesEveryWindowClosed) {
  FakeCupti fake;
  const std::string dir = TempDir("concurrent-stop");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  std::atomic<bool> go{true};
  std::atomic<uint64_t> opened{0};
  std::thread requester([&] {
    while (go.load()) {
      if ((*m)->RequestWindow(60'000, {kRuntime}, pb::TRIGGER_API)) opened.fetch_add(1);
      (void)(*m)->RequestCloseWindow();
      if ((*m)->stopped()) break;
    }
  });
  ASSERT_TRUE(WaitFor([&] { return opened.load() >= 20; }));
  (*m)->Stop();
  go = false;
  requester.join();
  EXPECT_FALSE(fake.kind_enabled(kRuntime));
  const Contents c = Read(dir);
  std::map<uint32_t, int> edges;
  for (const auto& mk : c.markers) edges[mk.window_id()] += mk.edge() == pb::WindowMarker::BEGIN ? 1 : 2;
  EXPECT_EQ(edges.size(), opened.load());
  for (const auto& [id, sum] : edges) EXPECT_EQ(sum, 3) << "window " << id;
  std::filesystem::remove_all(dir);
}

// The application's own calls (buffer requests, annotations, stats) never wait for the control
// thread, even while it is busy (a window's flush, a slow scrape).
TEST(TraceWindowTest, ApplicationThreadsDoNotWaitForTheControlThread) {
  FakeCupti fake;
  const std::string dir = TempDir("nonblocking");
  const uint32_t k = fake.AddKernelName("k");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> busy{false};
  std::thread control_user([&] {
    (*m)->RunOnControl([&] {
      busy = true;
      released.wait();
    });
  });
  ASSERT_TRUE(WaitFor([&] { return busy.load(); }));
  auto app = std::async(std::launch::async, [&] {
    FakeCupti::Producer* p = fake.NewProducer();
    bool ok = p->Kernel(k, 1, 2);  // the buffer request
    ok &= (*m)->PushAnnotation("busy").has_value();
    ok &= p->Launch(k, 3, 4, 5);
    ok &= (*m)->PopAnnotation().has_value();
    (void)(*m)->GetStats();
    return ok;
  });
  const bool finished = app.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  release.set_value();
  control_user.join();
  ASSERT_TRUE(finished) << "an application call waited for the control thread";
  EXPECT_TRUE(app.get());
  (*m)->Stop();
  std::filesystem::remove_all(dir);
}

// ---- 4. Bad input ----

TEST(TraceWindowTest, BadRequestsAreRefusedWithoutTouchingCupti) {
  FakeCupti fake;
  const std::string dir = TempDir("bad");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  const size_t calls_before = fake.calls().size();

  control::WindowRequest unknown;
  unknown.duration_ms = 1000;
  unknown.kinds = {"RUNTIME", "KERNEL"};  // KERNEL is a CUPTI kind, but not a window kind
  unknown.source = pb::TRIGGER_SOCKET;
  Expected<uint32_t> r = MakeError("not run");
  ASSERT_TRUE((*m)->RunOnControl([&] { r = (*m)->control_target().OpenWindow(unknown); }));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("KERNEL"), std::string::npos) << r.error().message;

  control::WindowRequest zero;
  zero.duration_ms = 0;
  ASSERT_TRUE((*m)->RunOnControl([&] { r = (*m)->control_target().OpenWindow(zero); }));
  EXPECT_FALSE(r);
  EXPECT_FALSE((*m)->RequestWindow(control::kMaxWindowMs + 1, {}, pb::TRIGGER_API));
  EXPECT_FALSE((*m)->RequestWindow(UINT32_MAX, {}, pb::TRIGGER_API));
  EXPECT_EQ(fake.calls().size(), calls_before);
  EXPECT_EQ((*m)->GetStats().windows_opened, 0u);

  // CUPTI refuses every kind: an error naming the CUPTI result, no window, no marker.
  fake.FailEnableWith(CUPTI_ERROR_UNKNOWN);
  auto refused = (*m)->RequestWindow(1000, {kRuntime, kDriver}, pb::TRIGGER_API);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("CUPTI_ERROR_UNKNOWN"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE((*m)->GetStats().window_open);
  EXPECT_FALSE(fake.kind_enabled(kRuntime));
  fake.FailEnableWith(CUPTI_SUCCESS);
  // The longest allowed window is accepted, and the failed request used no id.
  EXPECT_EQ((*m)->RequestWindow(control::kMaxWindowMs, {kRuntime}, pb::TRIGGER_API).value_or(0),
            1u);
  (*m)->Stop();

  const Contents c = Read(dir);
  ASSERT_EQ(c.markers.size(), 2u);
  EXPECT_EQ(c.markers[0].window_id(), 1u);
  EXPECT_EQ(c.markers[1].note(), "stop");
  std::filesystem::remove_all(dir);
}

// The window variables: a bad value warns (naming the variable) and keeps the default.
std::map<std::string, std::string> g_env;
const char* FakeGetenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

TEST(TraceWindowConfigTest, WindowVariablesAreValidated) {
  const MonitorConfig defaults;
  for (const char* bad : {"0", "86400001", "-5", "5s"}) {
    g_env = {{"CUPMON_WINDOW_MS", bad}};
    MonitorConfig c;
    std::vector<std::string> warnings;
    ApplyControlEnvironment(&c, &warnings, FakeGetenv);
    EXPECT_EQ(c.window_ms, defaults.window_ms) << bad;
    ASSERT_EQ(warnings.size(), 1u) << bad;
    EXPECT_NE(warnings[0].find("CUPMON_WINDOW_MS"), std::string::npos);
  }
  g_env = {{"CUPMON_WINDOW_MS", "86400000"},
           {"CUPMON_WINDOW_KINDS", "runtime,kernel,bogus,synchronization"},
           {"CUPMON_API_FILTER", " cudaGetDevice , cuLaunchKernel "},
           {"CUPMON_SIGNAL", "USR1"},
           {"CUPMON_CONTROL_DIR", "/run/x"},
           {"CUPMON_REGISTRY_DIR", "/run/r"},
           {"CUPMON_METRICS_ADDRESS", "127.0.0.1:0"},
           {"CUPMON_METRICS_ALLOW_REMOTE", "1"}};
  MonitorConfig c;
  std::vector<std::string> warnings;
  ApplyControlEnvironment(&c, &warnings, FakeGetenv);
  EXPECT_EQ(c.window_ms, 86'400'000u);
  // KERNEL is a CUPTI kind but not a window kind (it would serialise every kernel).
  EXPECT_EQ(c.window_kinds, (std::vector<uint32_t>{kRuntime, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}));
  EXPECT_EQ(warnings.size(), 2u);  // kernel, bogus
  EXPECT_EQ(c.api_filter, (std::vector<std::string>{"cudaGetDevice", "cuLaunchKernel"}));
  EXPECT_EQ(c.signal_number, SIGUSR1);
  EXPECT_EQ(c.control_dir, "/run/x");
  EXPECT_EQ(c.registry_dir, "/run/r");
  EXPECT_EQ(c.metrics_address, "127.0.0.1:0");
  EXPECT_TRUE(c.metrics_allow_remote);  // docs/DEPLOY.md and the Kubernetes manifest rely on it

  g_env = {{"CUPMON_API_FILTER", "none"}, {"CUPMON_CONTROL_DIR", "off"}, {"CUPMON_SIGNAL", "off"}};
  MonitorConfig off;
  ApplyControlEnvironment(&off, &warnings, FakeGetenv);
  EXPECT_TRUE(off.api_filter.empty());
  EXPECT_FALSE(off.control);
  EXPECT_EQ(off.signal_number, 0);
  g_env.clear();
}

// CUPMON_API_FILTER names resolve to cbids (with or without the _vNNNN suffix); with an empty
// filter a window switches no cbid off.
TEST(TraceWindowTest, EmptyApiFilterRecordsEveryCall) {
  FakeCupti fake;
  const std::string dir = TempDir("nofilter");
  MonitorOptions o = FakeOptions(&fake, dir);
  o.config.api_filter = {"cudaGetDevice_v3020", "cuCtxGetCurrent", "noSuchApi"};
  {
    auto m = Monitor::Start(std::move(o));
    ASSERT_TRUE(m) << m.error().message;
    ASSERT_TRUE((*m)->RequestWindow(60'000, {kRuntime, kDriver}, pb::TRIGGER_API));
    std::vector<std::string> filters;
    for (const auto& call : fake.calls())
      if (call.starts_with("EnableRuntimeApi") || call.starts_with("EnableDriverApi"))
        filters.push_back(call);
    EXPECT_EQ(filters, (std::vector<std::string>{
                           "EnableRuntimeApi(" + std::to_string(kGetDeviceCbid) + ",0)",
                           "EnableDriverApi(" + std::to_string(kCtxGetCurrentCbid) + ",0)"}));
    (*m)->Stop();
  }
  FakeCupti fake2;
  MonitorOptions none = FakeOptions(&fake2, dir + "-2");
  none.config.api_filter.clear();
  auto m = Monitor::Start(std::move(none));
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_TRUE((*m)->RequestWindow(60'000, {kRuntime}, pb::TRIGGER_API));
  FakeCupti::Producer* p = fake2.NewProducer();
  EXPECT_TRUE(p->Api(kRuntime, kGetDeviceCbid, 1, 1, 2));
  for (const auto& call : fake2.calls()) EXPECT_FALSE(call.starts_with("EnableRuntimeApi")) << call;
  (*m)->Stop();
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir + "-2");
}

// Raw frames on the socket: the control tests cover the protocol; here, only that a bad request
// leaves the monitor's window state untouched and the next request is served.
std::string RawCall(const std::string& path, const std::string& body) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "connect failed";
  }
  const uint32_t n = static_cast<uint32_t>(body.size());
  const unsigned char prefix[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                                   static_cast<unsigned char>(n >> 16),
                                   static_cast<unsigned char>(n >> 24)};
  std::string frame(reinterpret_cast<const char*>(prefix), 4);
  frame += body;
  (void)!write(fd, frame.data(), frame.size());
  std::string reply;
  char buf[4096];
  for (ssize_t got; (got = read(fd, buf, sizeof(buf))) > 0;) reply.append(buf, static_cast<size_t>(got));
  close(fd);
  if (reply.size() < 4) return "no reply";
  pb::ControlReply parsed;
  if (!parsed.ParseFromString(reply.substr(4))) return "unparsable reply";
  return parsed.ok() ? "ok" : parsed.error();
}

TEST(TraceWindowTest, MalformedSocketRequestLeavesWindowsAlone) {
  FakeCupti fake;
  const std::string dir = TempDir("malformed");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  const std::string socket = (*m)->control_socket_path();
  ASSERT_FALSE(socket.empty());
  const size_t calls_before = fake.calls().size();
  EXPECT_NE(RawCall(socket, "\xff\xff garbage").find("malformed"), std::string::npos);
  EXPECT_EQ(fake.calls().size(), calls_before);
  EXPECT_EQ((*m)->GetStats().windows_opened, 0u);
  pb::ControlRequest req;
  req.mutable_open_window()->set_duration_ms(60'000);
  auto reply = control::Call(socket, req, std::chrono::seconds(10));
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_TRUE(reply->ok()) << reply->error();
  EXPECT_TRUE((*m)->GetStats().window_open);
  (*m)->Stop();
  std::filesystem::remove_all(dir);
}

// ---- 5. Triggers end to end ----

struct SignalDispositionGuard {
  ~SignalDispositionGuard() { ::signal(SIGUSR2, SIG_DFL); }
};

bool HandlerInstalled(int sig) {
  struct sigaction now {};
  sigaction(sig, nullptr, &now);
  return (now.sa_flags & SA_SIGINFO) ? now.sa_sigaction != nullptr
                                     : now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN;
}

TEST(TraceWindowTest, RealSigusr2OpensAWindowWithSourceSignal) {
  SignalDispositionGuard guard;
  FakeCupti fake;
  const std::string dir = TempDir("signal");
  MonitorOptions o = FakeOptions(&fake, dir);
  o.config.window_ms = 60'000;
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  // Without the monitor's handler, SIGUSR2 would end this test process.
  ASSERT_TRUE(HandlerInstalled(SIGUSR2));
  ASSERT_EQ(kill(getpid(), SIGUSR2), 0);
  ASSERT_TRUE(WaitFor([&] { return (*m)->GetStats().window_open; }));
  EXPECT_TRUE(fake.kind_enabled(kRuntime));
  ASSERT_TRUE((*m)->RequestCloseWindow());
  (*m)->Stop();
  // SIG_DFL was there before start, but a stray SIGUSR2 after stop must not end the process: a
  // handler that does nothing is left (reset at exec). This kill would end the test otherwise.
  ASSERT_EQ(kill(getpid(), SIGUSR2), 0);
  EXPECT_EQ((*m)->GetStats().windows_opened, 1u);

  const Contents c = Read(dir);
  const pb::WindowMarker* begin = c.Marker(1, pb::WindowMarker::BEGIN);
  ASSERT_TRUE(begin);
  EXPECT_EQ(begin->source(), pb::TRIGGER_SIGNAL);
  EXPECT_EQ(begin->requested_ms(), 60'000u);
  EXPECT_EQ(Kinds(*begin), MonitorConfig().window_kinds);
  std::filesystem::remove_all(dir);
}

std::atomic<int> g_app_signals{0};
void AppHandler(int) { g_app_signals.fetch_add(1); }

// The application owned SIGUSR2 before the monitor started: the monitor leaves the handler in
// place (the application's signal keeps its meaning), the signal trigger stays off, and the
// control socket still opens windows. Stop leaves the application's handler installed.
TEST(TraceWindowTest, ApplicationOwnedSignalIsLeftToTheApplication) {
  SignalDispositionGuard guard;
  struct sigaction app {};
  app.sa_handler = AppHandler;
  app.sa_flags = SA_RESTART;
  sigemptyset(&app.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR2, &app, nullptr), 0);
  g_app_signals = 0;

  FakeCupti fake;
  const std::string dir = TempDir("appsignal");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  struct sigaction now {};
  sigaction(SIGUSR2, nullptr, &now);
  EXPECT_EQ(now.sa_handler, &AppHandler);

  ASSERT_EQ(kill(getpid(), SIGUSR2), 0);
  ASSERT_TRUE(WaitFor([] { return g_app_signals.load() == 1; }));
  // Any window would be opened on the control thread: a status round trip through the socket
  // runs after it would have, and must show none.
  const std::string socket = (*m)->control_socket_path();
  ASSERT_FALSE(socket.empty());
  pb::ControlRequest status;
  status.mutable_status();
  auto reply = control::Call(socket, status, std::chrono::seconds(10));
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_FALSE(reply->status().window_open());
  EXPECT_EQ((*m)->GetStats().windows_opened, 0u);

  pb::ControlRequest open;
  open.mutable_open_window()->set_duration_ms(60'000);
  reply = control::Call(socket, open, std::chrono::seconds(10));
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_TRUE(reply->ok()) << reply->error();
  (*m)->Stop();
  sigaction(SIGUSR2, nullptr, &now);
  EXPECT_EQ(now.sa_handler, &AppHandler);
  EXPECT_EQ(g_app_signals.load(), 1);
  std::filesystem::remove_all(dir);
}

TEST(TraceWindowTest, ControlSocketOpensAWindowWithSourceSocketAndStatusShowsIt) {
  FakeCupti fake;
  const std::string dir = TempDir("socket");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  // Found the way cupmonctl finds it: through the registry.
  auto path = control::FindSocket(getpid(), dir + "/registry");
  ASSERT_TRUE(path) << path.error().message;
  EXPECT_EQ(*path, (*m)->control_socket_path());

  pb::ControlRequest open;
  open.mutable_open_window()->set_duration_ms(60'000);
  open.mutable_open_window()->add_kinds("runtime");
  open.mutable_open_window()->add_kinds("EXTERNAL_CORRELATION");
  auto reply = control::Call(*path, open, std::chrono::seconds(10));
  ASSERT_TRUE(reply) << reply.error().message;
  ASSERT_TRUE(reply->ok()) << reply->error();
  EXPECT_EQ(reply->window_id(), 1u);

  pb::ControlRequest status;
  status.mutable_status();
  reply = control::Call(*path, status, std::chrono::seconds(10));
  ASSERT_TRUE(reply) << reply.error().message;
  ASSERT_TRUE(reply->ok());
  EXPECT_TRUE(reply->status().window_open());
  EXPECT_EQ(reply->status().window_id(), 1u);
  const auto& kinds = reply->status().enabled_kinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "RUNTIME"), kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "EXTERNAL_CORRELATION"), kinds.end());
  EXPECT_EQ(std::find(kinds.begin(), kinds.end(), "DRIVER"), kinds.end());

  // A second request over the socket is refused with the open window named.
  reply = control::Call(*path, open, std::chrono::seconds(10));
  ASSERT_TRUE(reply);
  EXPECT_FALSE(reply->ok());
  EXPECT_NE(reply->error().find("window 1"), std::string::npos) << reply->error();

  pb::ControlRequest close_req;
  close_req.mutable_close_window();
  reply = control::Call(*path, close_req, std::chrono::seconds(10));
  ASSERT_TRUE(reply);
  EXPECT_TRUE(reply->ok()) << reply->error();
  reply = control::Call(*path, status, std::chrono::seconds(10));
  ASSERT_TRUE(reply);
  EXPECT_FALSE(reply->status().window_open());
  (*m)->Stop();
  EXPECT_FALSE(std::filesystem::exists(*path));

  const Contents c = Read(dir);
  const pb::WindowMarker* begin = c.Marker(1, pb::WindowMarker::BEGIN);
  const pb::WindowMarker* end = c.Marker(1, pb::WindowMarker::END);
  ASSERT_TRUE(begin && end);
  EXPECT_EQ(begin->source(), pb::TRIGGER_SOCKET);
  EXPECT_EQ(Kinds(*begin),
            (std::vector<uint32_t>{kRuntime, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION}));
  EXPECT_EQ(end->note(), "closed");
  std::filesystem::remove_all(dir);
}

// ---- 6. Annotations ----

struct RowCollector : decoder::RowSink {
  struct Seen {
    decoder::RowType type;
    uint32_t correlation;
    std::string name, annotation;
  };
  std::vector<Seen> rows;
  void OnRow(const decoder::Row& r) override {
    rows.push_back({r.type, r.correlation, std::string(r.name), std::string(r.annotation)});
  }
};

TEST(AnnotationTest, LabelReachesKernelsThroughExternalCorrelation) {
  FakeCupti fake;
  const std::string dir = TempDir("annotation");
  const uint32_t k = fake.AddKernelName("train_step_kernel");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_TRUE((*m)->RequestWindow(60'000, {}, pb::TRIGGER_API));  // includes EXTERNAL_CORRELATION
  FakeCupti::Producer* p = fake.NewProducer();

  auto id = (*m)->PushAnnotation("step 12");
  ASSERT_TRUE(id) << id.error().message;
  ASSERT_TRUE(p->Launch(k, 10, 1000, 2000));
  ASSERT_TRUE((*m)->PopAnnotation());
  ASSERT_TRUE(p->Launch(k, 11, 3000, 4000));  // after the pop: unlabelled
  // The same label again is the same id (one string entry).
  auto again = (*m)->PushAnnotation("step 12");
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *id);
  ASSERT_TRUE((*m)->PopAnnotation());

  auto extra_pop = (*m)->PopAnnotation();
  ASSERT_FALSE(extra_pop);
  EXPECT_NE(extra_pop.error().message.find("pop without push"), std::string::npos);
  auto too_long = (*m)->PushAnnotation(std::string(5000, 'x'));
  ASSERT_FALSE(too_long);
  EXPECT_NE(too_long.error().message.find("5000"), std::string::npos);
  EXPECT_FALSE((*m)->PopAnnotation());  // the refused push pushed nothing
  ASSERT_TRUE((*m)->RequestCloseWindow());
  (*m)->Stop();

  const Contents c = Read(dir);
  EXPECT_EQ(c.external, (std::vector<std::pair<uint64_t, uint32_t>>{{*id, 10u}}));
  ASSERT_TRUE(c.strings.contains(*id));
  EXPECT_EQ(c.strings.at(*id), "step 12");
  size_t labelled_strings = 0;
  for (const auto& [pointer, text] : c.strings) labelled_strings += text == "step 12";
  EXPECT_EQ(labelled_strings, 1u);

  RowCollector sink;
  decoder::TraceBuilder builder({}, &sink);
  auto listing = decoder::ListRecordings(dir);
  ASSERT_TRUE(listing && listing->recordings.size() == 1u);
  decoder::ReadIntegrity integrity;
  decoder::ReadRecording(listing->recordings[0], builder, &integrity);
  builder.Finish();
  std::map<uint32_t, std::string> kernel_annotation;
  for (const auto& r : sink.rows)
    if (r.type == decoder::RowType::kKernel) kernel_annotation[r.correlation] = r.annotation;
  EXPECT_EQ(kernel_annotation, (std::map<uint32_t, std::string>{{10, "step 12"}, {11, ""}}));
  EXPECT_EQ(builder.counts().external_correlations, 1u);
  std::filesystem::remove_all(dir);
}

TEST(AnnotationTest, CallsAfterStopAreErrors) {
  FakeCupti fake;
  auto m = Monitor::Start(FakeOptions(&fake, TempDir("annotation-stop")));
  ASSERT_TRUE(m) << m.error().message;
  (*m)->Stop();
  EXPECT_FALSE((*m)->PushAnnotation("late"));
  EXPECT_FALSE((*m)->PopAnnotation());
}

// ---- 6b. NVTX ranges across threads ----

// A step marked on the main thread while another thread launches, as autograd runs a backward
// pass (the test double's records, not a GPU's: tests/gpu/torch/nvtx_threads.py checks a real
// torch job): the decoder labels those kernels only under the process scope.
TEST(TraceWindowTest, KernelsOfAThreadWithoutRangesTakeTheProcessRangeWhenDecoded) {
  FakeCupti fake;
  const std::string dir = TempDir("nvtx-threads");
  const uint32_t kernel = fake.AddKernelName("_Z4gemmv");
  const uint32_t bwd = fake.AddKernelName("bwd");
  auto m = Monitor::Start(FakeOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_TRUE((*m)->RequestWindow(60'000, {}, pb::TRIGGER_API));
  ASSERT_TRUE(fake.kind_enabled(CUPTI_ACTIVITY_KIND_MARKER)) << "marker is a default window kind";
  FakeCupti::Producer* main = fake.NewProducer(100);
  const uint64_t t0 = NowNs();
  ASSERT_TRUE(main->Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, t0, bwd));
  ASSERT_TRUE(main->Launch(kernel, 1, t0 + 10, t0 + 20));  // the main thread's own launch
  std::thread backward([&] {
    FakeCupti::Producer* p = fake.NewProducer(200);
    for (uint32_t corr = 2; corr <= 4; ++corr)
      EXPECT_TRUE(p->Launch(kernel, corr, t0 + 100 * corr, t0 + 100 * corr + 50));
    EXPECT_TRUE(p->Launch(kernel, 5, t0 + 2000, t0 + 2050));  // after the pop below
  });
  backward.join();
  ASSERT_TRUE(main->Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, t0 + 1000));
  ASSERT_TRUE((*m)->RequestCloseWindow());
  (*m)->Stop();

  auto labels = [&](decoder::NvtxScope scope) {
    struct Sink : decoder::RowSink {
      std::map<uint32_t, std::string> labels;  // kernel correlation -> "scope:range"
      void OnRow(const decoder::Row& r) override {
        if (r.type != decoder::RowType::kKernel) return;
        labels[r.correlation] =
            r.range.empty()
                ? ""
                : (r.range_scope == decoder::NvtxScope::kProcess ? "process:" : "thread:") +
                      std::string(r.range);
      }
    } sink;
    decoder::TraceFilter filter;
    filter.nvtx_scope = scope;
    decoder::TraceBuilder builder(std::move(filter), &sink);
    auto listing = decoder::ListRecordings(dir);
    EXPECT_TRUE(listing && listing->recordings.size() == 1u);
    if (!listing || listing->recordings.empty()) return sink.labels;
    decoder::ReadIntegrity integrity;
    decoder::ReadRecording(listing->recordings[0], builder, &integrity);
    builder.Finish();
    EXPECT_EQ(builder.counts().nvtx.ranges, 1u);
    return sink.labels;
  };
  using Labels = std::map<uint32_t, std::string>;
  EXPECT_EQ(labels(decoder::NvtxScope::kThread),
            (Labels{{1, "thread:bwd"}, {2, ""}, {3, ""}, {4, ""}, {5, ""}}));
  EXPECT_EQ(
      labels(decoder::NvtxScope::kProcess),
      (Labels{
          {1, "thread:bwd"}, {2, "process:bwd"}, {3, "process:bwd"}, {4, "process:bwd"}, {5, ""}}));
  std::filesystem::remove_all(dir);
}

// ---- 7. Metrics endpoint ----

std::string HttpGet(uint16_t port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buf[4096];
  for (ssize_t got; (got = read(fd, buf, sizeof(buf))) > 0;) response.append(buf, static_cast<size_t>(got));
  close(fd);
  return response;
}

// The value text of the sample line that starts with `series ` ("" when absent).
std::string Sample(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const size_t at = text.find(key);
  if (at == std::string::npos) return "";
  const size_t start = at + key.size();
  return text.substr(start, text.find('\n', start) - start);
}

TEST(TraceWindowMetricsTest, EndpointServesKernelCountsAndBusyTime) {
  FakeCupti fake;
  const std::string dir = TempDir("metrics");
  MonitorOptions o = FakeOptions(&fake, dir);
  o.config.metrics_address = "127.0.0.1:0";
  o.config.kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY2);
  const uint32_t k = fake.AddKernelName("k");
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  const uint16_t port = (*m)->metrics_port();
  ASSERT_NE(port, 0);
  FakeCupti::Producer* p = fake.NewProducer();
  // Device 0 (the fake's): [1000,2000] and [1500,2500] overlap, [3000,3100], a memcpy [5000,5500],
  // a peer copy from device 0 to 1 [6000,6400] (busy on device 0, which runs it).
  ASSERT_TRUE(p->Kernel(k, 1000, 2000));
  ASSERT_TRUE(p->Kernel(k, 1500, 2500));
  ASSERT_TRUE(p->Kernel(k, 3000, 3100));
  ASSERT_TRUE(p->Memcpy(64, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 5000, 5500));
  ASSERT_TRUE(p->PeerCopy(4096, 0, 1, 6000, 6400));
  ASSERT_TRUE((*m)->RequestWindow(60'000, {kRuntime}, pb::TRIGGER_API));
  // Right after FlushAndWait returns, a scrape sees everything it wrote.
  (*m)->FlushAndWait();
  const std::string response = HttpGet(port, "/metrics");
  ASSERT_TRUE(response.starts_with("HTTP/1.1 200")) << response.substr(0, 200);
  EXPECT_EQ(Sample(response, "cupmon_kernel_records_total"), "3");
  EXPECT_EQ(Sample(response, "cupmon_memcpy_records_total"), "2");
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(Sample(response, "cupmon_gpu_busy_seconds_total{gpu=\"0\",Hostname=\"" +
                                 std::string(host) + "\"}"),
            metrics::FormatNanosecondsAsSeconds(1500 + 100 + 500 + 400));
  EXPECT_EQ(Sample(response, "cupmon_windows_opened_total"), "1");
  EXPECT_EQ(Sample(response, "cupmon_files"), "1");
  (*m)->Stop();
  EXPECT_EQ(HttpGet(port, "/metrics"), "");  // the endpoint is gone after stop
  std::filesystem::remove_all(dir);
}

TEST(TraceWindowMetricsTest, PerGpuSeriesCarryTheDevicesUuidOnceTheFileIsOpen) {
  // dcgm-exporter's UUID label, from the devices the driver probe found at the first buffer.
  FakeCupti fake;
  const std::string dir = TempDir("metrics-uuid");
  MonitorOptions o = FakeOptions(&fake, dir);
  o.config.metrics_address = "127.0.0.1:0";
  o.driver_probe = [] {
    DriverInfo info;
    pb::Device d;
    d.set_id(0);
    d.set_name("test double");
    std::string uuid(16, '\0');
    for (int i = 0; i < 16; ++i) uuid[i] = static_cast<char>(0x10 + i);
    d.set_uuid(uuid);
    info.devices.push_back(d);
    return info;
  };
  const uint32_t k = fake.AddKernelName("k");
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake.NewProducer();
  ASSERT_TRUE(p->Kernel(k, 1000, 2000));
  (*m)->FlushAndWait();
  const std::string response = HttpGet((*m)->metrics_port(), "/metrics");
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(Sample(response, "cupmon_gpu_busy_seconds_total{gpu=\"0\","
                             "UUID=\"GPU-10111213-1415-1617-1819-1a1b1c1d1e1f\",Hostname=\"" +
                                 std::string(host) + "\"}"),
            metrics::FormatNanosecondsAsSeconds(1000))
      << response;
  (*m)->Stop();
  std::filesystem::remove_all(dir);
}

TEST(TraceWindowMetricsTest, NonLoopbackAddressNeedsAllowRemote) {
  for (const bool allow : {false, true}) {
    FakeCupti fake;
    const std::string dir = TempDir(allow ? "metrics-remote" : "metrics-local");
    MonitorOptions o = FakeOptions(&fake, dir);
    o.config.metrics_address = "0.0.0.0:0";
    o.config.metrics_allow_remote = allow;
    auto m = Monitor::Start(std::move(o));
    ASSERT_TRUE(m) << m.error().message;  // refused endpoint: the monitor runs on without it
    EXPECT_EQ((*m)->metrics_port() != 0, allow);
    (*m)->Stop();
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace cupmon

// Injection without the preload library: another CUPTI client linked against "libcupti" (here
// libcupti_double.so over the FakeCupti test double; no GPU) starts and ends a profiling session
// in the middle of a job. cupmon rebinds the client's CUPTI imports to its multiplexer, so both
// keep every record. Without the rebinding the same session silently cost cupmon the records made
// during and after it (the H200 torch job: 301 of 901 kernels kept, no gap, no warning).
#include "monitor/src/import_rebind.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cupmon/monitor/monitor.h"
#include "monitor/src/cupti_mux.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor_fixture.h"
#include "recording_reader.h"
#include "test_dir.h"

extern "C" {
void cupti_double_set_target(cupmon::CuptiApi* target);
int profiler_double_start();
int profiler_double_stop();
uint64_t profiler_double_records();
uint64_t profiler_double_unknown_buffers();
void* profiler_double_register_address();
}

namespace cupmon {
namespace {

using testing::FakeCupti;

constexpr uint32_t kKernel = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;

// What the interposed entry points of libcupmon-preload.so do (cupti_interpose.cc), for the
// multiplexer of this test: the preload library's own entry points reach the process's mux, which
// a test cannot own.
CUptiResult CUPTIAPI RegisterEntry(CUpti_BuffersCallbackRequestFunc r,
                                   CUpti_BuffersCallbackCompleteFunc c) {
  CuptiMux* m = CuptiMux::Current();
  return m ? m->ClientRegisterCallbacks(r, c) : CUPTI_ERROR_NOT_INITIALIZED;
}
CUptiResult CUPTIAPI EnableEntry(CUpti_ActivityKind k) {
  CuptiMux* m = CuptiMux::Current();
  return m ? m->ClientEnable(k) : CUPTI_ERROR_NOT_INITIALIZED;
}
CUptiResult CUPTIAPI DisableEntry(CUpti_ActivityKind k) {
  CuptiMux* m = CuptiMux::Current();
  return m ? m->ClientDisable(k) : CUPTI_ERROR_NOT_INITIALIZED;
}
CUptiResult CUPTIAPI FlushAllEntry(uint32_t flag) {
  CuptiMux* m = CuptiMux::Current();
  return m ? m->ClientFlushAll(flag) : CUPTI_ERROR_NOT_INITIALIZED;
}
CUptiResult CUPTIAPI DroppedEntry(CUcontext c, uint32_t s, size_t* d) {
  CuptiMux* m = CuptiMux::Current();
  return m ? m->ClientGetNumDroppedRecords(c, s, d) : CUPTI_ERROR_NOT_INITIALIZED;
}

std::vector<ImportRebinding> MuxEntryPoints() {
  return {{"cuptiActivityRegisterCallbacks", reinterpret_cast<void*>(&RegisterEntry)},
          {"cuptiActivityEnable", reinterpret_cast<void*>(&EnableEntry)},
          {"cuptiActivityDisable", reinterpret_cast<void*>(&DisableEntry)},
          {"cuptiActivityFlushAll", reinterpret_cast<void*>(&FlushAllEntry)},
          {"cuptiActivityGetNumDroppedRecords", reinterpret_cast<void*>(&DroppedEntry)}};
}

MonitorOptions Options(CuptiApi* cupti, const std::string& dir) {
  MonitorOptions o = testing::TestDoubleOptions(cupti, dir);
  o.config.control = false;
  o.config.flush_ms = 20;
  o.config.buffer_bytes = 64 << 10;
  o.config.pool_bytes = 1 << 20;
  return o;
}

struct Session {
  uint64_t cupmon_kernels = 0;
  uint64_t profiler_kernels = 0;
  MonitorStats stats;
};

// The job: 100 kernels, a profiler session over 100 more, 100 after it. The flush just
// before the session leaves no cupmon buffer inside CUPTI, which is what kept the takeover watch
// blind.
Session RunProfiledJob(ImportRebinder* rebinder, const std::string& dir) {
  FakeCupti fake;
  CuptiMux mux(fake);
  cupti_double_set_target(&fake);
  const uint32_t name = fake.AddKernelName("kernel");
  MonitorOptions o = Options(&mux, dir);
  o.rebinder = rebinder;
  auto m = Monitor::Start(std::move(o));
  EXPECT_TRUE(m) << m.error().message;
  if (!m) return {};
  FakeCupti::Producer* p = fake.NewProducer();
  uint64_t t = 1000;
  auto run = [&](int n) {
    for (int i = 0; i < n; ++i, t += 10) p->Kernel(name, t, t + 5);
  };
  const uint64_t profiler_before = profiler_double_records();
  run(100);
  (*m)->FlushAndWait();
  EXPECT_EQ(profiler_double_start(), 0);
  run(100);
  EXPECT_EQ(profiler_double_stop(), 0);
  run(100);
  (*m)->Stop();
  Session s;
  s.stats = (*m)->GetStats();
  s.profiler_kernels = profiler_double_records() - profiler_before;
  cupti_double_set_target(nullptr);
  const auto rb = testing::ReadRecording(dir);
  auto it = rb.records_by_kind.find(kKernel);
  s.cupmon_kernels = it == rb.records_by_kind.end() ? 0 : it->second;
  return s;
}

TEST(ImportRebindTest, AProfilerSessionInTheMiddleOfAnInjectedJobCostsNothing) {
  ASSERT_TRUE(ImportRebinder::Supported()) << "x86-64 or aarch64 expected";
  ImportRebinder rebinder(MuxEntryPoints(), "libcupti");
  const std::string dir = testing::FreshTestDir("cupmon-rebind-test", "profiled-job");
  const Session s = RunProfiledJob(&rebinder, dir);
  EXPECT_EQ(s.cupmon_kernels, 300u) << "cupmon keeps the whole job";
  EXPECT_EQ(s.profiler_kernels, 100u) << "the profiler gets its session's kernels";
  EXPECT_EQ(s.stats.cupti_gaps, 0u);
  EXPECT_EQ(s.stats.stranded_buffers, 0u);
  // profiler_double's register, enable, disable and flush imports (a call of a function whose
  // address is also taken goes through the GLOB_DAT slot); cupti_double itself is the provider
  // and is left alone.
  EXPECT_GE(s.stats.imports_rebound, 4u);
  EXPECT_EQ(profiler_double_unknown_buffers(), 0u);
  EXPECT_EQ(profiler_double_register_address(), reinterpret_cast<void*>(&RegisterEntry));
}

TEST(ImportRebindTest, ScansAreIdempotentAndFindObjectsLoadedLater) {
  ImportRebinder rebinder(MuxEntryPoints(), "libcupti");
  rebinder.Scan();  // whatever the first test left
  EXPECT_EQ(rebinder.Scan().slots, 0u) << "a second scan finds nothing left to rebind";
  EXPECT_EQ(rebinder.ScanIfLoaded().slots, 0u) << "nothing loaded since";
  // A lazily bound client without RELRO, loaded after cupmon started (a plugin).
  void* late = dlopen(CUPMON_PROFILER_DOUBLE_LAZY, RTLD_LAZY | RTLD_LOCAL);
  ASSERT_NE(late, nullptr) << dlerror();
  auto address = reinterpret_cast<void* (*)()>(dlsym(late, "profiler_double_register_address"));
  ASSERT_NE(address, nullptr);
  EXPECT_NE(address(), reinterpret_cast<void*>(&RegisterEntry));
  EXPECT_EQ(rebinder.ScanIfLoaded().slots, 0u) << "the first call after a load waits";
  const RebindCounts n = rebinder.ScanIfLoaded();
  EXPECT_GE(n.slots, 4u);
  EXPECT_EQ(n.objects, 1u);
  EXPECT_EQ(n.failed, 0u);
  EXPECT_EQ(address(), reinterpret_cast<void*>(&RegisterEntry));
  // Its calls now reach the multiplexer: with no mux attached they are forwarded to the fake.
  FakeCupti fake;
  CuptiMux mux(fake);
  auto start = reinterpret_cast<int (*)()>(dlsym(late, "profiler_double_start"));
  ASSERT_NE(start, nullptr);
  EXPECT_EQ(start(), 0);
  EXPECT_TRUE(mux.client_kind(kKernel)) << "the multiplexer saw the client's enable";
  EXPECT_TRUE(fake.kind_enabled(kKernel));
  dlclose(late);
}

TEST(ImportRebindTest, ANameOutsideTheTableAndAnUnknownProviderAreLeftAlone) {
  ImportRebinder none({{"cuptiNoSuchEntryPoint", reinterpret_cast<void*>(&RegisterEntry)}},
                      "libcupti");
  EXPECT_EQ(none.Scan().slots, 0u);
  ImportRebinder elsewhere(MuxEntryPoints(), "libno-such-provider");
  EXPECT_EQ(elsewhere.Scan().slots, 0u);
}

}  // namespace
}  // namespace cupmon

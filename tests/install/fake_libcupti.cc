// TEST DOUBLE: a libcupti.so.13 made of the fake CUPTI (monitor/testing/fake_cupti.h), so that an
// installed libcupmon.so runs its whole monitor without a GPU: with this library's directory first
// in LD_LIBRARY_PATH, libcupmon.so's dlopen("libcupti.so.13") loads it instead of the toolkit's.
// Every record is synthetic. It exports the CUPTI entry points libcupmon.so binds
// (monitor/src/cupti_loader.cc) and one test hook, fake_cupti_launch_kernels().
#include <time.h>

#include <cstdint>
#include <string>

#include "monitor/testing/fake_cupti.h"

#define FAKE_CUPTI_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// Lives until the process ends: libcupmon.so calls into it from its exit handler.
cupmon::testing::FakeCupti& Fake() {
  static auto* fake = new cupmon::testing::FakeCupti();
  return *fake;
}

uint64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);  // the fake's GetTimestamp clock
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

FAKE_CUPTI_EXPORT CUptiResult cuptiGetVersion(uint32_t* version) {
  return Fake().GetVersion(version);
}
FAKE_CUPTI_EXPORT CUptiResult cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete) {
  return Fake().ActivityRegisterCallbacks(request, complete);
}
FAKE_CUPTI_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  return Fake().ActivityEnable(kind);
}
FAKE_CUPTI_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  return Fake().ActivityDisable(kind);
}
FAKE_CUPTI_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  return Fake().ActivityFlushAll(flag);
}
FAKE_CUPTI_EXPORT CUptiResult cuptiActivityFlushPeriod(uint32_t time) {
  return Fake().ActivityFlushPeriod(time);
}
FAKE_CUPTI_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context,
                                                                uint32_t streamId,
                                                                size_t* dropped) {
  return Fake().ActivityGetNumDroppedRecords(context, streamId, dropped);
}
FAKE_CUPTI_EXPORT CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attr,
                                                        size_t* valueSize, void* value) {
  return Fake().ActivitySetAttribute(attr, valueSize, value);
}
FAKE_CUPTI_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer,
                                                         size_t validBufferSizeBytes,
                                                         CUpti_Activity** record) {
  return Fake().ActivityGetNextRecord(buffer, validBufferSizeBytes, record);
}
FAKE_CUPTI_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  return Fake().GetTimestamp(timestamp);
}
FAKE_CUPTI_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  *str = Fake().ResultString(result);
  return CUPTI_SUCCESS;
}
FAKE_CUPTI_EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                                   const char** name) {
  return Fake().GetCallbackName(domain, cbid, name);
}

// Test hook: `count` kernels named `name`, 1 us each, produced on the calling thread while the
// monitor runs (records of a disabled kind are not produced). Returns how many went into a buffer.
FAKE_CUPTI_EXPORT uint32_t fake_cupti_launch_kernels(const char* name, uint32_t count) {
  cupmon::testing::FakeCupti& fake = Fake();
  const uint32_t index = fake.AddKernelName(name);
  cupmon::testing::FakeCupti::Producer* producer = fake.NewProducer();
  uint32_t recorded = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t start = RealtimeNs();
    if (producer->Kernel(index, start, start + 1000)) ++recorded;
  }
  return recorded;
}

// TEST DOUBLE, not CUPTI: libcupti_double.so stands in for libcupti as a library that other objects
// link against by name. Its activity entry points forward to the CuptiApi a test sets (FakeCupti),
// so that an application library bound to it at load time (profiler_double.cc) calls "CUPTI"
// through its own GOT, as torch's Kineto calls the real libcupti. Its file name contains
// "libcupti", which is how ImportRebinder recognises the provider.
#include <cupti.h>

#include <atomic>

#include "cupmon/monitor/cupti_api.h"

namespace {
std::atomic<cupmon::CuptiApi*> g_target{nullptr};
cupmon::CuptiApi* Target() { return g_target.load(std::memory_order_acquire); }
}  // namespace

#define CUPTI_DOUBLE_API extern "C" __attribute__((visibility("default")))

CUPTI_DOUBLE_API void cupti_double_set_target(cupmon::CuptiApi* target) {
  g_target.store(target, std::memory_order_release);
}

CUPTI_DOUBLE_API CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete) {
  auto* t = Target();
  return t ? t->ActivityRegisterCallbacks(request, complete) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUPTI_DOUBLE_API CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  auto* t = Target();
  return t ? t->ActivityEnable(kind) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUPTI_DOUBLE_API CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  auto* t = Target();
  return t ? t->ActivityDisable(kind) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUPTI_DOUBLE_API CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  auto* t = Target();
  return t ? t->ActivityFlushAll(flag) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUPTI_DOUBLE_API CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context,
                                                                        uint32_t stream,
                                                                        size_t* dropped) {
  auto* t = Target();
  return t ? t->ActivityGetNumDroppedRecords(context, stream, dropped)
           : CUPTI_ERROR_NOT_INITIALIZED;
}

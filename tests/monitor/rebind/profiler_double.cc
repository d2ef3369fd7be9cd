// TEST DOUBLE, not torch.profiler: a CUPTI client shaped like Kineto, linked against
// libcupti_double.so and calling it through its own GOT. A session registers its buffer callbacks,
// enables CONCURRENT_KERNEL, and at its end disables the kind and forces a flush, as Kineto does.
// Built twice: bound at load with RELRO (as distributions and torch build), and lazily bound
// without RELRO (loaded with dlopen by the test, after cupmon started).
#include <cupti.h>

#include <cstdlib>
#include <mutex>
#include <set>

namespace {
std::mutex g_mu;
std::set<uint8_t*> g_outstanding;
uint64_t g_records = 0;
uint64_t g_unknown = 0;

void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records) {
  constexpr size_t kSize = 64 << 10;
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(8, kSize));
  std::lock_guard<std::mutex> lk(g_mu);
  if (b) g_outstanding.insert(b);
  *buffer = b;
  *size = b ? kSize : 0;
  *max_records = 0;
}

void CUPTIAPI Complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (!g_outstanding.erase(buffer)) {
    ++g_unknown;  // not ours: Kineto logs "bufferCompleted called with unknown buffer"
    return;
  }
  g_records += valid / sizeof(CUpti_ActivityKernel10);  // the test produces kernels only
  std::free(buffer);
}
}  // namespace

#define PROFILER_DOUBLE_API extern "C" __attribute__((visibility("default")))

PROFILER_DOUBLE_API int profiler_double_start() {
  if (cuptiActivityRegisterCallbacks(Request, Complete) != CUPTI_SUCCESS) return 1;
  return cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS ? 0 : 2;
}

PROFILER_DOUBLE_API int profiler_double_stop() {
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  return cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS ? 0 : 1;
}

PROFILER_DOUBLE_API uint64_t profiler_double_records() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_records;
}

PROFILER_DOUBLE_API uint64_t profiler_double_unknown_buffers() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_unknown;
}

// The address this library calls for cuptiActivityRegisterCallbacks (its GLOB_DAT slot).
PROFILER_DOUBLE_API void* profiler_double_register_address() {
  return reinterpret_cast<void*>(&cuptiActivityRegisterCallbacks);
}

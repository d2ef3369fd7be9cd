// The overhead floor: a minimal CUPTI injection library that enables the same always-on kinds as
// cupmon (CONCURRENT_KERNEL, MEMCPY, MEMSET) and discards every buffer. Benchmark use only.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace {
constexpr size_t kBufferBytes = 4u << 20;  // as cupmon's default

// Buffers are recycled through a free list, as cupmon's pool does, so that the floor does not pay
// for fresh 4 MiB allocations and page faults that cupmon avoids. A mutex is fine here: this is a
// benchmark reference, not something that lives in a training job.
std::mutex g_mu;
std::vector<uint8_t*> g_free;

void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records) {
  uint8_t* b = nullptr;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    if (!g_free.empty()) {
      b = g_free.back();
      g_free.pop_back();
    }
  }
  if (!b) b = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *buffer = b;
  *size = b ? kBufferBytes : 0;
  *max_records = 0;
}
void CUPTIAPI Complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) {
  if (!buffer) return;
  std::lock_guard<std::mutex> lk(g_mu);
  g_free.push_back(buffer);
}
void AtExit() { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }
}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (cuptiActivityRegisterCallbacks(Request, Complete) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "bare_cupti_floor: CUPTI setup failed\n");
    return 1;
  }
  std::atexit(AtExit);
  return 1;
}

// The overhead floor: a minimal CUPTI injection library that enables the same always-on kinds as
// cupmon (CONCURRENT_KERNEL, MEMCPY, MEMSET) and discards every buffer. Benchmark use only.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>

namespace {
constexpr size_t kBufferBytes = 4u << 20;  // as cupmon's default

void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}
void CUPTIAPI Complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) { std::free(buffer); }
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

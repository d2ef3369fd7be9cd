// The overhead floor: a minimal CUPTI injection library that enables the same always-on kinds as
// cupmon (CONCURRENT_KERNEL, MEMCPY, MEMSET) and discards every buffer. Benchmark use only.
// It reads cupmon's variables for what CUPTI sees of a client, so that floor variants measure
// CUPTI's own cost under each setting (tools/gpu-bench-onoff, ONOFF_VARIANTS):
//   CUPMON_CUPTI_PER_THREAD_BUFFERS, CUPMON_CUPTI_DEVICE_BUFFER_SIZE,
//   CUPMON_CUPTI_DEVICE_BUFFER_PREALLOCATE, CUPMON_CUPTI_DEVICE_BUFFER_POOL_LIMIT
//     (cuptiActivitySetAttribute before the callbacks are registered; unset: CUPTI's default);
//   CUPMON_ZERO_BUFFERS=1 (ZEROED_OUT_ACTIVITY_BUFFER=1; buffers are zeroed on CUPTI's thread when
//     they come back, as cupmon's writer zeroes them off the application's thread);
//   CUPMON_BUFFER_SIZE (activity buffer size, default 4M as cupmon's);
//   CUPMON_POOL_SIZE (set: that many bytes of buffers allocated at start and no more, as cupmon's
//     pool; a request finding none free gets no buffer and CUPTI drops records. Unset: buffers are
//     allocated on demand and recycled, without a bound);
//   CUPMON_FLOOR_FLUSH_MS (set: a thread of its own calls cuptiActivityFlushAll(0) that often, as
//     cupmon's control thread does each flush period).
// A value it cannot parse ends the process (exit 2) with a line naming the variable: a benchmark
// must not measure a setting other than the one asked for. What was set is printed to stderr.
#include <cupti.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

size_t g_buffer_bytes = 4u << 20;  // as cupmon's default
bool g_zero = false;
bool g_bounded = false;  // CUPMON_POOL_SIZE given: no allocation after start

// Buffers are recycled through a free list, as cupmon's pool does, so that the floor does not pay
// for fresh 4 MiB allocations and page faults that cupmon avoids. A mutex is fine here: this is a
// benchmark reference, not something that lives in a training job.
std::mutex g_mu;
std::vector<uint8_t*> g_free;

[[noreturn]] void Invalid(const char* var, const char* value, const char* expected) {
  std::fprintf(stderr, "bare_cupti_floor: %s='%s' is invalid (expected %s)\n", var, value, expected);
  std::_Exit(2);
}

// "32M", "512K", "1G", "3200000" (binary suffixes) into *out; false when the variable is unset.
bool EnvSize(const char* var, size_t* out) {
  const char* v = std::getenv(var);
  if (!v || !*v) return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  if (end == v || errno || *v == '-') Invalid(var, v, "a size such as 4M");
  const std::string suffix(end);
  int shift = 0;
  if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (!suffix.empty()) Invalid(var, v, "a size with suffix K, M or G");
  if (n == 0 || n > (~0ull >> (shift + 1))) Invalid(var, v, "a positive size");
  *out = static_cast<size_t>(n << shift);
  return true;
}

bool EnvFlag(const char* var, bool* out) {
  const char* v = std::getenv(var);
  if (!v || !*v) return false;
  if (!std::strcmp(v, "1")) *out = true;
  else if (!std::strcmp(v, "0")) *out = false;
  else Invalid(var, v, "0 or 1");
  return true;
}

bool EnvCount(const char* var, size_t* out) {
  const char* v = std::getenv(var);
  if (!v || !*v) return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  if (end == v || *end || errno || *v == '-' || n > 4096) Invalid(var, v, "a count from 0 to 4096");
  *out = static_cast<size_t>(n);
  return true;
}

void SetAttribute(CUpti_ActivityAttribute attr, const char* name, void* value, size_t size,
                  unsigned long long shown) {
  if (CUptiResult rv = cuptiActivitySetAttribute(attr, &size, value); rv != CUPTI_SUCCESS) {
    const char* why = nullptr;
    cuptiGetResultString(rv, &why);
    std::fprintf(stderr, "bare_cupti_floor: cannot set %s=%llu: %s\n", name, shown,
                 why ? why : "?");
    std::_Exit(2);
  }
  std::fprintf(stderr, "bare_cupti_floor: set %s=%llu\n", name, shown);
}

// CUPTI's attributes named by the environment, with the value types of cupti_activity.h (uint8_t
// flags, size_t sizes and counts); before cuptiActivityRegisterCallbacks and any enable.
void ApplyAttributes() {
  bool per_thread = true;
  if (EnvFlag("CUPMON_CUPTI_PER_THREAD_BUFFERS", &per_thread)) {
    uint8_t v = per_thread ? 1 : 0;
    SetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, "PER_THREAD_ACTIVITY_BUFFER", &v,
                 sizeof v, v);
  }
  size_t n = 0;
  if (EnvSize("CUPMON_CUPTI_DEVICE_BUFFER_SIZE", &n))
    SetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, "DEVICE_BUFFER_SIZE", &n, sizeof n, n);
  if (EnvCount("CUPMON_CUPTI_DEVICE_BUFFER_POOL_LIMIT", &n))
    SetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, "DEVICE_BUFFER_POOL_LIMIT", &n,
                 sizeof n, n);
  if (EnvCount("CUPMON_CUPTI_DEVICE_BUFFER_PREALLOCATE", &n))
    SetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE,
                 "DEVICE_BUFFER_PRE_ALLOCATE_VALUE", &n, sizeof n, n);
  if (EnvFlag("CUPMON_ZERO_BUFFERS", &g_zero) && g_zero) {
    uint8_t one = 1;
    SetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, "ZEROED_OUT_ACTIVITY_BUFFER",
                 &one, sizeof one, one);
  }
}

uint8_t* NewBuffer() {
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(8, g_buffer_bytes));
  if (b && g_zero) std::memset(b, 0, g_buffer_bytes);  // CUPTI was told buffers come zeroed
  return b;
}

void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records) {
  uint8_t* b = nullptr;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    if (!g_free.empty()) {
      b = g_free.back();
      g_free.pop_back();
    }
  }
  if (!b && !g_bounded) b = NewBuffer();
  *buffer = b;
  *size = b ? g_buffer_bytes : 0;
  *max_records = 0;
}
void CUPTIAPI Complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) {
  if (!buffer) return;
  if (g_zero) std::memset(buffer, 0, g_buffer_bytes);  // CUPTI's thread, not the application's
  std::lock_guard<std::mutex> lk(g_mu);
  g_free.push_back(buffer);
}
void AtExit() { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }
}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (EnvSize("CUPMON_BUFFER_SIZE", &g_buffer_bytes)) g_buffer_bytes &= ~size_t{7};
  size_t pool_bytes = 0;
  if (EnvSize("CUPMON_POOL_SIZE", &pool_bytes)) {
    g_bounded = true;
    const size_t n = pool_bytes / g_buffer_bytes < 2 ? 2 : pool_bytes / g_buffer_bytes;
    for (size_t i = 0; i < n; ++i)
      if (uint8_t* b = NewBuffer()) g_free.push_back(b);
    std::fprintf(stderr, "bare_cupti_floor: pool of %zu buffers of %zu bytes\n", g_free.size(),
                 g_buffer_bytes);
  }
  ApplyAttributes();
  if (cuptiActivityRegisterCallbacks(Request, Complete) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "bare_cupti_floor: CUPTI setup failed\n");
    return 1;
  }
  std::atexit(AtExit);
  size_t flush_ms = 0;
  if (EnvCount("CUPMON_FLOOR_FLUSH_MS", &flush_ms) && flush_ms > 0) {
    std::fprintf(stderr, "bare_cupti_floor: cuptiActivityFlushAll(0) every %zu ms\n", flush_ms);
    std::thread([flush_ms] {
      for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(flush_ms));
        cuptiActivityFlushAll(0);
      }
    }).detach();
  }
  return 1;
}

// Run with LD_PRELOAD=libcupmon-preload.so (ctest does, as cupmon-run does): an application linked
// against libcupti, as torch/Kineto is, must reach libcupmon-preload.so's CUPTI entry points, and
// with cupmon not running they must behave exactly as libcupti's own. No GPU needed. Exit 0 when all holds, 1 otherwise.
#include <cupti.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace {

int failures = 0;

void Check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
}
void CUPTIAPI Complete(CUcontext, uint32_t, uint8_t*, size_t, size_t) {}

}  // namespace

int main() {
  Dl_info info{};
  void* sym = dlsym(RTLD_DEFAULT, "cuptiActivityEnable");
  Check(sym && dladdr(sym, &info) && info.dli_fname && std::strstr(info.dli_fname, "libcupmon-preload.so"),
        "cuptiActivityEnable resolves to libcupmon-preload.so");
  // libcupti's own definitions, for comparison.
  void* lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) lib = dlopen("libcupti.so", RTLD_NOW | RTLD_NOLOAD);
  Check(lib != nullptr, "libcupti is loaded");
  if (!lib) return 1;
  auto real_enable =
      reinterpret_cast<decltype(&cuptiActivityEnable)>(dlsym(lib, "cuptiActivityEnable"));
  Check(real_enable && reinterpret_cast<void*>(real_enable) != sym,
        "libcupti's own definition differs");

  Check(cuptiActivityRegisterCallbacks(Request, Complete) == CUPTI_SUCCESS,
        "cuptiActivityRegisterCallbacks forwarded");
  const CUptiResult mine = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  const CUptiResult real = real_enable(CUPTI_ACTIVITY_KIND_MEMSET);
  std::printf("cuptiActivityEnable: %d through libcupmon-preload, %d from libcupti\n", mine, real);
  Check(mine == real, "cuptiActivityEnable answers as libcupti does");
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
  cuptiActivityEnableContext(nullptr, CUPTI_ACTIVITY_KIND_MEMSET);
  cuptiActivityDisableContext(nullptr, CUPTI_ACTIVITY_KIND_MEMSET);
  Check(cuptiActivityEnable(static_cast<CUpti_ActivityKind>(100000)) != CUPTI_SUCCESS,
        "an unknown kind is refused, no crash");
  cuptiActivityFlushAll(0);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  cuptiFinalize();
  Check(true, "flush, dropped-record query and cuptiFinalize returned");
  return failures ? 1 : 0;
}

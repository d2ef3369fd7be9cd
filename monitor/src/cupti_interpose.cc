// libcupmon-preload.so's definitions of CUPTI's activity entry points. Preloaded, it makes another
// CUPTI client's calls (torch.profiler/Kineto, ...) land here instead of in libcupti and go through
// the process's CuptiMux; cupmon itself calls libcupti through its dlopen handle. Thin shims only:
// the logic is in cupti_mux.cc. docs/COEXISTENCE.md.
#include "cupti_interpose.h"

#include <cupti.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cupmon/monitor/cupti_api.h"
#include "cupti_mux.h"

#define CUPMON_INTERPOSE extern "C" __attribute__((visibility("default")))

namespace cupmon {

namespace {
// Load order of libcupmon-preload.so and of the first libcupti in the link map (-1: not loaded).
struct LoadOrder {
  const char* self = nullptr;
  int index = 0, self_at = -1, cupti_at = -1;
};
int VisitObject(dl_phdr_info* info, size_t, void* data) noexcept {
  auto* o = static_cast<LoadOrder*>(data);
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  if (o->self_at < 0 && std::strcmp(name, o->self) == 0) o->self_at = o->index;
  if (o->cupti_at < 0 && std::strstr(name, "libcupti.so")) o->cupti_at = o->index;
  ++o->index;
  return 0;
}
}  // namespace

bool CuptiCallsInterposed() noexcept {
  void* sym = dlsym(RTLD_DEFAULT, "cuptiActivityRegisterCallbacks");
  Dl_info found{}, self{};
  if (!sym || !dladdr(sym, &found)) return false;
  if (!dladdr(reinterpret_cast<void*>(&CuptiCallsInterposed), &self)) return false;
  if (found.dli_fbase != self.dli_fbase) return false;
  // Being in the global scope is not enough: a libcupti loaded before us (torch imports it long
  // before cuInit loads an injection library) has had its callers bound to it already. Only a
  // libcupmon-preload.so loaded ahead of libcupti (LD_PRELOAD, or a
  // program linked against libcupmon.so) interposes.
  LoadOrder order;
  order.self = self.dli_fname ? self.dli_fname : "";
  dl_iterate_phdr(VisitObject, &order);
  return order.cupti_at < 0 || (order.self_at >= 0 && order.self_at < order.cupti_at);
}

bool PreloadedByEnvironment() noexcept {
  const char* preload = std::getenv("LD_PRELOAD");
  Dl_info self{};
  if (!preload || !dladdr(reinterpret_cast<void*>(&PreloadedByEnvironment), &self) ||
      !self.dli_fname)
    return false;
  const char* base = std::strrchr(self.dli_fname, '/');
  base = base ? base + 1 : self.dli_fname;
  return *base && std::strstr(preload, base) != nullptr;
}

CuptiMux* ProcessCuptiMux() noexcept {
  // Function-local statics: thread-safe initialisation, leaked on purpose.
  static CuptiMux* mux = []() -> CuptiMux* {
    try {
      auto loaded = LoadCupti();
      if (!loaded) return nullptr;
      // Someone else (a test) may own the one mux slot; then there is no process mux.
      if (CuptiMux::Current()) return nullptr;
      auto* created = new CuptiMux(*loaded->release());
      pthread_atfork(nullptr, nullptr, [] {
        if (CuptiMux* m = CuptiMux::Current()) m->AbandonInForkedChild();
      });
      return created;
    } catch (...) {
      return nullptr;
    }
  }();
  return mux;
}

namespace {

// The next definition after ours (the application's libcupti), for calls that cannot reach a mux.
template <typename Fn>
Fn Next(const char* name) noexcept {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

// The mux when preloaded; created on the client's first call so that it knows the client's
// callbacks and kinds before cupmon starts.
CuptiMux* Mux() noexcept {
  if (CuptiMux* m = CuptiMux::Current()) return m;
  return ProcessCuptiMux();
}

// The definitions behind the exported entry points, hidden: ImportRebinder points other objects'
// slots at these, whose addresses no other definition of the same name can shadow.
CUptiResult CUPTIAPI
ActivityRegisterCallbacksEntry(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                               CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) noexcept {
  if (auto* m = Mux()) return m->ClientRegisterCallbacks(funcBufferRequested, funcBufferCompleted);
  auto next = Next<decltype(&cuptiActivityRegisterCallbacks)>("cuptiActivityRegisterCallbacks");
  return next ? next(funcBufferRequested, funcBufferCompleted) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUptiResult CUPTIAPI ActivityEnableEntry(CUpti_ActivityKind kind) noexcept {
  if (auto* m = Mux()) return m->ClientEnable(kind);
  auto next = Next<decltype(&cuptiActivityEnable)>("cuptiActivityEnable");
  return next ? next(kind) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUptiResult CUPTIAPI ActivityDisableEntry(CUpti_ActivityKind kind) noexcept {
  if (auto* m = Mux()) return m->ClientDisable(kind);
  auto next = Next<decltype(&cuptiActivityDisable)>("cuptiActivityDisable");
  return next ? next(kind) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUptiResult CUPTIAPI ActivityEnableContextEntry(CUcontext context,
                                                CUpti_ActivityKind kind) noexcept {
  if (auto* m = Mux()) return m->ClientEnableContext(context, kind);
  auto next = Next<decltype(&cuptiActivityEnableContext)>("cuptiActivityEnableContext");
  return next ? next(context, kind) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUptiResult CUPTIAPI ActivityDisableContextEntry(CUcontext context,
                                                 CUpti_ActivityKind kind) noexcept {
  if (auto* m = Mux()) return m->ClientDisableContext(context, kind);
  auto next = Next<decltype(&cuptiActivityDisableContext)>("cuptiActivityDisableContext");
  return next ? next(context, kind) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUptiResult CUPTIAPI ActivityFlushAllEntry(uint32_t flag) noexcept {
  if (auto* m = Mux()) return m->ClientFlushAll(flag);
  auto next = Next<decltype(&cuptiActivityFlushAll)>("cuptiActivityFlushAll");
  return next ? next(flag) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUptiResult CUPTIAPI ActivityGetNumDroppedRecordsEntry(CUcontext context, uint32_t streamId,
                                                       size_t* dropped) noexcept {
  if (auto* m = Mux()) return m->ClientGetNumDroppedRecords(context, streamId, dropped);
  auto next =
      Next<decltype(&cuptiActivityGetNumDroppedRecords)>("cuptiActivityGetNumDroppedRecords");
  return next ? next(context, streamId, dropped) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUptiResult CUPTIAPI
ActivityRegisterTimestampCallbackEntry(CUpti_TimestampCallbackFunc funcTimestamp) noexcept {
  if (auto* m = Mux()) return m->ClientRegisterTimestampCallback(funcTimestamp);
  auto next = Next<decltype(&cuptiActivityRegisterTimestampCallback)>(
      "cuptiActivityRegisterTimestampCallback");
  return next ? next(funcTimestamp) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUptiResult CUPTIAPI FinalizeEntry(void) noexcept {
  if (auto* m = Mux()) return m->ClientFinalize();
  auto next = Next<decltype(&cuptiFinalize)>("cuptiFinalize");
  return next ? next() : CUPTI_ERROR_NOT_INITIALIZED;
}

}  // namespace

std::vector<ImportRebinding> InterposedEntryPoints() {
  return {
      {"cuptiActivityRegisterCallbacks", reinterpret_cast<void*>(&ActivityRegisterCallbacksEntry)},
      {"cuptiActivityEnable", reinterpret_cast<void*>(&ActivityEnableEntry)},
      {"cuptiActivityDisable", reinterpret_cast<void*>(&ActivityDisableEntry)},
      {"cuptiActivityEnableContext", reinterpret_cast<void*>(&ActivityEnableContextEntry)},
      {"cuptiActivityDisableContext", reinterpret_cast<void*>(&ActivityDisableContextEntry)},
      {"cuptiActivityFlushAll", reinterpret_cast<void*>(&ActivityFlushAllEntry)},
      {"cuptiActivityGetNumDroppedRecords",
       reinterpret_cast<void*>(&ActivityGetNumDroppedRecordsEntry)},
      {"cuptiActivityRegisterTimestampCallback",
       reinterpret_cast<void*>(&ActivityRegisterTimestampCallbackEntry)},
      {"cuptiFinalize", reinterpret_cast<void*>(&FinalizeEntry)},
  };
}

}  // namespace cupmon

CUPMON_INTERPOSE CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                               CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) {
  return cupmon::ActivityRegisterCallbacksEntry(funcBufferRequested, funcBufferCompleted);
}

CUPMON_INTERPOSE CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  return cupmon::ActivityEnableEntry(kind);
}

CUPMON_INTERPOSE CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  return cupmon::ActivityDisableEntry(kind);
}

CUPMON_INTERPOSE CUptiResult CUPTIAPI cuptiActivityEnableContext(CUcontext context,
                                                                 CUpti_ActivityKind kind) {
  return cupmon::ActivityEnableContextEntry(context, kind);
}

CUPMON_INTERPOSE CUptiResult CUPTIAPI cuptiActivityDisableContext(CUcontext context,
                                                                  CUpti_ActivityKind kind) {
  return cupmon::ActivityDisableContextEntry(context, kind);
}

CUPMON_INTERPOSE CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  return cupmon::ActivityFlushAllEntry(flag);
}

CUPMON_INTERPOSE CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context,
                                                                        uint32_t streamId,
                                                                        size_t* dropped) {
  return cupmon::ActivityGetNumDroppedRecordsEntry(context, streamId, dropped);
}

CUPMON_INTERPOSE CUptiResult CUPTIAPI
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp) {
  return cupmon::ActivityRegisterTimestampCallbackEntry(funcTimestamp);
}

CUPMON_INTERPOSE CUptiResult CUPTIAPI cuptiFinalize(void) { return cupmon::FinalizeEntry(); }

// The real CuptiApi: libcupti loaded at run time with dlopen, so a missing libcupti is a clear
// message instead of a failed program start.
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/cupti_library.h"

namespace cupmon {
namespace {

struct CuptiSymbols {
  decltype(&cuptiGetVersion) get_version = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityFlushPeriod) flush_period = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
  decltype(&cuptiActivitySetAttribute) set_attribute = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiActivityEnableRuntimeApi) enable_runtime_api = nullptr;
  decltype(&cuptiActivityEnableDriverApi) enable_driver_api = nullptr;
  decltype(&cuptiActivityPushExternalCorrelationId) push_external = nullptr;
  decltype(&cuptiActivityPopExternalCorrelationId) pop_external = nullptr;
  decltype(&cuptiGetCallbackName) callback_name = nullptr;
  decltype(&cuptiActivityEnableContext) enable_context = nullptr;
  decltype(&cuptiActivityDisableContext) disable_context = nullptr;
  decltype(&cuptiFinalize) finalize = nullptr;
  decltype(&cuptiActivityRegisterTimestampCallback) register_timestamp = nullptr;
};

class DlCupti final : public CuptiApi {
 public:
  explicit DlCupti(const CuptiSymbols& s) : s_(s) {}
  CUptiResult GetVersion(uint32_t* v) override { return s_.get_version(v); }
  CUptiResult ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
                                        CUpti_BuffersCallbackCompleteFunc c) override {
    return s_.register_callbacks(r, c);
  }
  CUptiResult ActivityEnable(CUpti_ActivityKind k) override { return s_.enable(k); }
  CUptiResult ActivityDisable(CUpti_ActivityKind k) override { return s_.disable(k); }
  CUptiResult ActivityFlushAll(uint32_t flag) override { return s_.flush_all(flag); }
  CUptiResult ActivityFlushPeriod(uint32_t ms) override { return s_.flush_period(ms); }
  CUptiResult ActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t* d) override {
    return s_.dropped(ctx, stream, d);
  }
  CUptiResult ActivitySetAttribute(CUpti_ActivityAttribute a, size_t* size, void* v) override {
    return s_.set_attribute(a, size, v);
  }
  CUptiResult ActivityGetNextRecord(uint8_t* b, size_t valid, CUpti_Activity** r) override {
    return s_.next_record(b, valid, r);
  }
  CUptiResult GetTimestamp(uint64_t* t) override { return s_.timestamp(t); }
  // The window and annotation calls are optional symbols (cbid filters arrived in CUDA 12.5): a
  // libcupti without them answers NOT_SUPPORTED and the monitor says so.
  CUptiResult ActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) override {
    return s_.enable_runtime_api ? s_.enable_runtime_api(cbid, enable) : CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult ActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) override {
    return s_.enable_driver_api ? s_.enable_driver_api(cbid, enable) : CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult ActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                uint64_t id) override {
    return s_.push_external ? s_.push_external(kind, id) : CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult ActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                               uint64_t* last_id) override {
    return s_.pop_external ? s_.pop_external(kind, last_id) : CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult GetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                              const char** name) override {
    return s_.callback_name ? s_.callback_name(domain, cbid, name) : CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult ActivityEnableContext(CUcontext ctx, CUpti_ActivityKind k) override {
    return s_.enable_context ? s_.enable_context(ctx, k) : CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult ActivityDisableContext(CUcontext ctx, CUpti_ActivityKind k) override {
    return s_.disable_context ? s_.disable_context(ctx, k) : CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult Finalize() override {
    return s_.finalize ? s_.finalize() : CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult ActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) override {
    return s_.register_timestamp ? s_.register_timestamp(fn) : CUPTI_ERROR_NOT_SUPPORTED;
  }
  const char* ResultString(CUptiResult r) override {
    const char* str = nullptr;
    if (s_.result_string(r, &str) != CUPTI_SUCCESS || !str) return "unknown CUPTI error";
    return str;
  }

 private:
  CuptiSymbols s_;
};

template <typename T>
bool Bind(void* lib, const char* name, T* out, std::string* missing) {
  *out = reinterpret_cast<T>(dlsym(lib, name));
  if (!*out) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *out != nullptr;
}

}  // namespace

Expected<std::unique_ptr<CuptiApi>> LoadCupti() {
  const std::vector<std::string> candidates = CuptiLibraryCandidates();
  void* lib = nullptr;
  std::string tried;
  for (const auto& c : candidates) {
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    tried += (tried.empty() ? "" : ", ") + c;
  }
  if (!lib)
    return MakeError("libcupti not found (tried " + tried +
                     "); set LD_LIBRARY_PATH or CUDA_HOME to the CUDA toolkit");
  CuptiSymbols s;
  std::string missing;
  Bind(lib, "cuptiGetVersion", &s.get_version, &missing);
  Bind(lib, "cuptiActivityRegisterCallbacks", &s.register_callbacks, &missing);
  Bind(lib, "cuptiActivityEnable", &s.enable, &missing);
  Bind(lib, "cuptiActivityDisable", &s.disable, &missing);
  Bind(lib, "cuptiActivityFlushAll", &s.flush_all, &missing);
  Bind(lib, "cuptiActivityFlushPeriod", &s.flush_period, &missing);
  Bind(lib, "cuptiActivityGetNumDroppedRecords", &s.dropped, &missing);
  Bind(lib, "cuptiActivitySetAttribute", &s.set_attribute, &missing);
  Bind(lib, "cuptiActivityGetNextRecord", &s.next_record, &missing);
  Bind(lib, "cuptiGetTimestamp", &s.timestamp, &missing);
  Bind(lib, "cuptiGetResultString", &s.result_string, &missing);
  if (!missing.empty()) return MakeError("libcupti lacks " + missing);
  std::string optional_missing;  // checked where used
  Bind(lib, "cuptiActivityEnableRuntimeApi", &s.enable_runtime_api, &optional_missing);
  Bind(lib, "cuptiActivityEnableDriverApi", &s.enable_driver_api, &optional_missing);
  Bind(lib, "cuptiActivityPushExternalCorrelationId", &s.push_external, &optional_missing);
  Bind(lib, "cuptiActivityPopExternalCorrelationId", &s.pop_external, &optional_missing);
  Bind(lib, "cuptiGetCallbackName", &s.callback_name, &optional_missing);
  Bind(lib, "cuptiActivityEnableContext", &s.enable_context, &optional_missing);
  Bind(lib, "cuptiActivityDisableContext", &s.disable_context, &optional_missing);
  Bind(lib, "cuptiFinalize", &s.finalize, &optional_missing);
  Bind(lib, "cuptiActivityRegisterTimestampCallback", &s.register_timestamp, &optional_missing);
  // Never dlclose'd: see the header.
  return std::unique_ptr<CuptiApi>(new DlCupti(s));
}

}  // namespace cupmon

// The handful of CUPTI calls the monitor makes, behind an interface so that tests can drive the
// whole monitor with a test double (monitor/testing/fake_cupti.h) on machines without a GPU.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <memory>

#include "cupmon/base/error.h"

// What libcupmon-preload.so defines and libcupmon.so uses (the CUPTI loader and multiplexer,
// docs/COEXISTENCE.md): default visibility also where the rest of a library is built hidden.
#define CUPMON_PRELOAD_API __attribute__((visibility("default")))

namespace cupmon {

// Thread-safety: implementations are called from the control thread, the writer thread (never) and
// from whichever thread calls cupmon_stop/cupmon_flush. The real one forwards to libcupti, which is
// thread-safe. Calls that may invoke the buffer callbacks (flush, enable, disable, dropped-record
// queries) are never made while the monitor holds a lock that its callbacks take.
class CuptiApi {
 public:
  virtual ~CuptiApi() = default;

  virtual CUptiResult GetVersion(uint32_t* version) = 0;
  virtual CUptiResult ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                CUpti_BuffersCallbackCompleteFunc complete) = 0;
  virtual CUptiResult ActivityEnable(CUpti_ActivityKind kind) = 0;
  virtual CUptiResult ActivityDisable(CUpti_ActivityKind kind) = 0;
  virtual CUptiResult ActivityFlushAll(uint32_t flag) = 0;
  virtual CUptiResult ActivityFlushPeriod(uint32_t period_ms) = 0;
  virtual CUptiResult ActivityGetNumDroppedRecords(CUcontext context, uint32_t stream_id,
                                                   size_t* dropped) = 0;
  virtual CUptiResult ActivitySetAttribute(CUpti_ActivityAttribute attr, size_t* value_size,
                                           void* value) = 0;
  virtual CUptiResult ActivityGetNextRecord(uint8_t* buffer, size_t valid_size,
                                            CUpti_Activity** record) = 0;
  virtual CUptiResult GetTimestamp(uint64_t* timestamp) = 0;
  // Trace windows: per-cbid filters, applied after the RUNTIME/DRIVER kind is enabled (enabling the
  // kind afterwards overrides them). Control thread only.
  virtual CUptiResult ActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) = 0;
  virtual CUptiResult ActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) = 0;
  // Annotations: CUPTI keeps one stack of external ids per thread and kind. Called on the
  // application's thread that annotates (cupmon_annotation_push/pop).
  virtual CUptiResult ActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                        uint64_t id) = 0;
  virtual CUptiResult ActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                       uint64_t* last_id) = 0;
  // The API's name for a cbid ("cudaGetDevice_v3020", "cuCtxGetCurrent"); works without a GPU.
  virtual CUptiResult GetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                      const char** name) = 0;
  // Never returns null.
  virtual const char* ResultString(CUptiResult result) = 0;
  // Only the CUPTI multiplexer (monitor/src/cupti_mux.h) forwards these, for another CUPTI client
  // in the process; the monitor itself never calls them. Defaults: per-context calls act
  // process-wide, cuptiFinalize is not supported.
  virtual CUptiResult ActivityEnableContext(CUcontext /*context*/, CUpti_ActivityKind kind) {
    return ActivityEnable(kind);
  }
  virtual CUptiResult ActivityDisableContext(CUcontext /*context*/, CUpti_ActivityKind kind) {
    return ActivityDisable(kind);
  }
  virtual CUptiResult Finalize() { return CUPTI_ERROR_NOT_SUPPORTED; }
  virtual CUptiResult ActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc /*fn*/) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
};

// Loads libcupti with dlopen (RTLD_NOW | RTLD_LOCAL) so that libcupmon.so does not need it at link
// time: "libcupti.so.13", "libcupti.so", then $CUDA_HOME and /usr/local/cuda library folders.
// The library is never unloaded (dlclose without cuptiFinalize has crashed CUPTI 13.0-13.1).
CUPMON_PRELOAD_API Expected<std::unique_ptr<CuptiApi>> LoadCupti();

}  // namespace cupmon

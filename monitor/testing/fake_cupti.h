// TEST DOUBLE: a fake CUPTI for CPU-only tests. It produces byte-exact activity records from the real
// structs in the toolkit's cupti_activity.h, but no GPU is involved and every value is synthetic.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cupmon/base/thread_annotations.h"
#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/monitor_clock.h"

namespace cupmon::testing {

// Behaves like CUPTI 13 as the monitor sees it:
//  - each Producer is one application thread with its own activity buffer (CUDA 13 uses per-thread
//    buffers); it calls the buffer-request callback on its own thread when it needs a buffer;
//  - full buffers are completed on the fake's own worker thread (like CUPTI's), concurrently with
//    requests on the producer threads;
//  - when the request callback gives no buffer, the record is dropped and counted in the global
//    queue (context nullptr, stream 0); ActivityGetNumDroppedRecords returns (and resets) the count
//    of the queue it is asked for, as CUPTI does (AddDropped puts drops into any queue);
//  - ActivityFlushAll blocks until the completion callbacks ran; a forced flush also hands back
//    empty buffers, a non-forced one only buffers holding records;
//  - kernel and MARKER records point to name strings that the fake owns;
//  - API and MARKER records carry process id 1 and their producer's thread id;
//  - a kind must be enabled for its records to be produced;
//  - RUNTIME/DRIVER API records honour per-cbid filters (ActivityEnableRuntimeApi/DriverApi), and
//    enabling the kind clears that kind's filters, as real CUPTI's kind setting overrides them;
//  - external ids pushed on a thread (per thread and kind, like CUPTI) produce an
//    EXTERNAL_CORRELATION record before each API record of that thread while the kind is on;
//  - RegisterCallbacks/Enable/Disable/EnableRuntimeApi/EnableDriverApi/SetAttribute calls are
//    logged in order (calls()); SetAttribute checks the value size as CUPTI does (uint8_t for
//    flags, size_t for sizes and counts) and records nothing else about its effect.
// The fake calls callbacks while holding its own producer lock, as real CUPTI holds its lock.
class FakeCupti final : public CuptiApi {
 public:
  // GetTimestamp reads `clock`'s wall time (not owned; it outlives the fake), running
  // `drift_ppb` parts per billion fast from the moment of construction: real CUPTI's default clock
  // is CLOCK_REALTIME, and a test of long recordings lets it drift as a device clock would.
  explicit FakeCupti(MonitorClock& clock = RealClock(), int64_t drift_ppb = 0);
  ~FakeCupti() override;

  class Producer {
   public:
    // Each returns true when the record went into a buffer, false when it was dropped (no buffer)
    // or its kind is disabled.
    bool Kernel(uint32_t name_index, uint64_t start_ns, uint64_t end_ns);
    bool Memcpy(uint64_t bytes, uint8_t copy_kind, uint64_t start_ns, uint64_t end_ns);
    bool Memset(uint64_t bytes, uint32_t value, uint64_t start_ns, uint64_t end_ns);
    // A peer-to-peer copy (kind MEMCPY2, CUpti_ActivityMemcpyPtoP4) on `src_device`.
    bool PeerCopy(uint64_t bytes, uint32_t src_device, uint32_t dst_device, uint64_t start_ns,
                  uint64_t end_ns);
    // One API record (kind RUNTIME or DRIVER) with `cbid` and `correlation_id`; produced only
    // while the kind is on and the cbid is not filtered. An external correlation record for the
    // calling thread's pushed id (if any, and the kind is on) comes first.
    bool Api(uint32_t kind, uint32_t cbid, uint32_t correlation_id, uint64_t start_ns,
             uint64_t end_ns);
    // A kernel launch as CUPTI reports it: a runtime cudaLaunchKernel API record (when RUNTIME is
    // on) then the kernel, both with `correlation_id`. Returns whether the kernel was recorded.
    bool Launch(uint32_t name_index, uint32_t correlation_id, uint64_t start_ns, uint64_t end_ns);
    // One MARKER record (CUpti_ActivityMarker2, objectKind THREAD with this producer's process
    // and thread ids), as CUPTI writes for an NVTX call: `flags` CUPTI_ACTIVITY_FLAG_MARKER_START
    // with the message `name_index` (a name the fake owns), _END with the START's `id` and no
    // name, or _INSTANTANEOUS for a mark.
    bool Marker(uint32_t flags, uint32_t id, uint64_t timestamp_ns, int64_t name_index = -1);

   private:
    friend class FakeCupti;
    Producer(FakeCupti* fake, uint32_t thread_id) : fake_(fake), thread_id_(thread_id) {}
    bool Append(uint32_t kind, const void* record, size_t size);
    FakeCupti* fake_;
    const uint32_t thread_id_;  // in its API and MARKER records (process id 1)
    Mutex mu_;
    uint8_t* buffer_ CUPMON_GUARDED_BY(mu_) = nullptr;
    size_t size_ CUPMON_GUARDED_BY(mu_) = 0;
    size_t used_ CUPMON_GUARDED_BY(mu_) = 0;
  };

  // The returned producer lives as long as the fake. Thread-compatible: one thread per producer.
  // `thread_id` is the CUPTI thread id its API and MARKER records carry.
  Producer* NewProducer(uint32_t thread_id = 1);
  // Interns a kernel name the fake owns; records point at its characters.
  uint32_t AddKernelName(const std::string& name);
  const char* KernelNamePointer(uint32_t index) const;

  // Counters for tests (exact).
  uint64_t produced() const { return produced_.load(); }
  uint64_t dropped_total() const { return dropped_total_.load(); }
  uint64_t produced_of_kind(uint32_t kind) const;
  // Fails the next RegisterCallbacks/Enable with this error (e.g. MULTIPLE_SUBSCRIBERS).
  void FailRegisterWith(CUptiResult r) { fail_register_ = r; }
  void FailEnableWith(CUptiResult r) { fail_enable_ = r; }
  // Fails every later SetAttribute of `attr` with `r` (a libcupti that does not know it).
  void FailSetAttributeWith(CUpti_ActivityAttribute attr, CUptiResult r) {
    fail_attribute_ = attr;
    fail_attribute_result_ = r;
  }
  bool kind_enabled(uint32_t kind) const;
  uint64_t forced_flushes() const { return forced_flushes_.load(); }
  // Test-double behaviour: `n` records dropped in queue (context, stream), as real CUPTI counts
  // per context and stream. Counted in dropped_total().
  void AddDropped(CUcontext context, uint32_t stream, uint64_t n);
  // A CUPTI whose worker is behind: each non-forced ActivityFlushAll sleeps this long (real time)
  // before it returns, as cuptiActivityFlushAll(0) does while CUPTI's worker cannot keep up.
  void SetFlushDelay(std::chrono::milliseconds d) { flush_delay_ms_.store(d.count()); }
  // ActivityGetNumDroppedRecords calls made from inside a buffer callback the fake was running
  // (CUPTI_NOTES.md: never do that while holding a lock the callbacks take).
  uint64_t dropped_queries_inside_callbacks() const { return dropped_in_callback_.load(); }
  // "RegisterCallbacks", "Enable(5)", "Disable(5)", "EnableRuntimeApi(17,0)",
  // "EnableDriverApi(9,0)", "SetAttribute(0,33554432)" (attribute, value), in call order.
  std::vector<std::string> calls() const;
  bool api_filtered(uint32_t kind, uint32_t cbid) const;
  // Test-double behaviour: GetTimestamp returns CLOCK_REALTIME + `shift_ns` from now on, as real
  // CUPTI's clock moves to another domain when a client registers a timestamp callback
  // (cuptiActivityRegisterTimestampCallback). Records keep the times the test gives them.
  void ShiftTimestampDomain(int64_t shift_ns) { timestamp_shift_.store(shift_ns); }
  // The CUPTI time GetTimestamp gives at wall time `realtime_ns` (shift aside), and the exact
  // inverse: the wall time at which the fake's CUPTI clock read `cupti_ns`. Any thread.
  uint64_t CuptiNsAt(int64_t realtime_ns) const;
  int64_t RealtimeNsAt(uint64_t cupti_ns) const;
  // GetTimestamp without the test hooks (delay, shift): the CUPTI time now.
  uint64_t CuptiNow() const { return CuptiNsAt(clock_.RealtimeNs()); }
  // Test-double behaviour: the next `calls` GetTimestamp calls take `delay_us` before they read
  // the clock (a first cuptiGetTimestamp that initializes, or a thread descheduled mid-read).
  void DelayNextTimestamps(int calls, int delay_us) {
    timestamp_delay_us_.store(delay_us);
    delayed_timestamps_.store(calls);
  }
  // ActivityRegisterTimestampCallback is accepted and counted; the fake keeps its own clock. It
  // notes how many records sat in producer buffers (not yet completed) at each call: the records
  // whose timestamps real CUPTI would convert with the new clock.
  uint64_t timestamp_callbacks() const { return timestamp_callbacks_.load(); }
  uint64_t records_pending_at_last_timestamp_callback() const { return pending_at_ts_.load(); }

  // CuptiApi
  CUptiResult GetVersion(uint32_t* version) override;
  CUptiResult ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                        CUpti_BuffersCallbackCompleteFunc complete) override;
  CUptiResult ActivityEnable(CUpti_ActivityKind kind) override;
  CUptiResult ActivityDisable(CUpti_ActivityKind kind) override;
  CUptiResult ActivityFlushAll(uint32_t flag) override;
  CUptiResult ActivityFlushPeriod(uint32_t period_ms) override;
  CUptiResult ActivityGetNumDroppedRecords(CUcontext context, uint32_t stream_id,
                                           size_t* dropped) override;
  CUptiResult ActivitySetAttribute(CUpti_ActivityAttribute attr, size_t* value_size,
                                   void* value) override;
  CUptiResult ActivityGetNextRecord(uint8_t* buffer, size_t valid_size,
                                    CUpti_Activity** record) override;
  CUptiResult GetTimestamp(uint64_t* timestamp) override;
  CUptiResult ActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) override;
  CUptiResult ActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) override;
  CUptiResult ActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) override;
  CUptiResult ActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                uint64_t id) override;
  CUptiResult ActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                               uint64_t* last_id) override;
  // Knows the cbids of the default API filter plus cudaLaunchKernel and cuLaunchKernel, under the
  // names real CUPTI 13.0 gives them; other cbids are INVALID_PARAMETER.
  CUptiResult GetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                              const char** name) override;
  const char* ResultString(CUptiResult result) override;

 private:
  struct Completed {
    uint8_t* buffer;
    size_t size;
    size_t valid;
  };
  void Complete(uint8_t* buffer, size_t size, size_t valid);  // queue to the worker
  void WorkerLoop();
  static uint32_t RecordSize(uint32_t kind);

  MonitorClock& clock_;
  const int64_t drift_ppb_;
  const int64_t drift_origin_ns_;  // wall time at which the drifting clock equals the wall clock
  std::atomic<CUpti_BuffersCallbackRequestFunc> request_{nullptr};
  std::atomic<CUpti_BuffersCallbackCompleteFunc> complete_{nullptr};
  std::atomic<uint64_t> enabled_mask_lo_{0}, enabled_mask_hi_{0};
  std::atomic<uint64_t> produced_{0}, dropped_total_{0}, dropped_in_callback_{0};
  std::atomic<uint64_t> produced_by_kind_[64] = {};
  std::atomic<uint64_t> forced_flushes_{0};
  std::atomic<int64_t> flush_delay_ms_{0};
  std::atomic<int64_t> timestamp_shift_{0};
  std::atomic<int> delayed_timestamps_{0}, timestamp_delay_us_{0};
  std::atomic<uint64_t> timestamp_callbacks_{0}, pending_at_ts_{0};
  CUptiResult fail_register_ = CUPTI_SUCCESS;
  CUptiResult fail_enable_ = CUPTI_SUCCESS;
  CUpti_ActivityAttribute fail_attribute_ = CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_FORCE_INT;
  CUptiResult fail_attribute_result_ = CUPTI_SUCCESS;

  mutable Mutex calls_mu_;
  std::vector<std::string> calls_ CUPMON_GUARDED_BY(calls_mu_);
  // (kind, cbid) switched off.
  std::set<std::pair<uint32_t, uint32_t>> filters_ CUPMON_GUARDED_BY(calls_mu_);
  std::map<std::pair<std::thread::id, uint32_t>, std::vector<uint64_t>> external_
      CUPMON_GUARDED_BY(calls_mu_);
  Mutex dropped_mu_;
  // Per queue, until read.
  std::map<std::pair<CUcontext, uint32_t>, uint64_t> dropped_unread_ CUPMON_GUARDED_BY(dropped_mu_);

  mutable Mutex producers_mu_;
  std::vector<std::unique_ptr<Producer>> producers_ CUPMON_GUARDED_BY(producers_mu_);
  std::deque<std::string> names_ CUPMON_GUARDED_BY(producers_mu_);  // stable addresses

  Mutex worker_mu_;
  std::condition_variable worker_cv_;
  std::deque<Completed> pending_ CUPMON_GUARDED_BY(worker_mu_);
  uint64_t queued_ CUPMON_GUARDED_BY(worker_mu_) = 0;
  uint64_t delivered_ CUPMON_GUARDED_BY(worker_mu_) = 0;
  bool worker_exit_ CUPMON_GUARDED_BY(worker_mu_) = false;
  std::thread worker_;
};

}  // namespace cupmon::testing

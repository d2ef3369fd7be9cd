// CuptiMux: shares CUPTI's activity API between cupmon and one other CUPTI client in the process
// (torch.profiler/Kineto, a tool's injection), when libcupmon.so is preloaded and the client's
// cuptiActivity* calls reach cupti_interpose.cc instead of libcupti. docs/COEXISTENCE.md.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <utility>

#include "cupmon/base/thread_annotations.h"
#include "cupmon/monitor/cupti_api.h"

namespace cupmon {

// Two faces over the real CUPTI (`real`, the dlopen'd libcupti, or FakeCupti in tests):
//  - cupmon's face is the CuptiApi interface: the monitor is started with the mux as its CuptiApi.
//    Its RegisterCallbacks attaches the mux (the mux's own trampolines go to real CUPTI and call
//    cupmon's callbacks); its Enable/Disable are reference-counted against the client's.
//  - the client's face is the Client* methods, called by the interposed C entry points.
// Only cupmon's callbacks are ever registered with real CUPTI while attached. Each buffer CUPTI
// completes is first copied, record by record, for the kinds the client enabled (in their original
// order), into buffers the client's own request callback handed out; then cupmon's completed
// callback gets the buffer as before.
//
// The client's buffers: the mux holds at most one ("pending") buffer of the client while the client
// has kinds on, as CUPTI would. Kineto relies on that: it flushes only while it has a buffer
// outstanding. The pending buffer is handed back to the client's completed callback when full, at
// the client's FlushAll, when it registers other callbacks, at its cuptiFinalize and at Detach;
// the mux never frees it and never keeps it past those points.
//
// Kinds: per kind, cupmon's count (always-on kinds and open trace windows), whether the client has
// it on, and whether real CUPTI has it on (= cupmon's count > 0 or the client has it). A kind the
// client disables keeps "draining" (its records still go to the client) until the client's next
// FlushAll, because clients disable first and flush afterwards (Kineto does). When delivery starts
// (the client's first kind of a session, or its callbacks, arrive), the mux first runs a
// non-forced flush, so that complete records made before the session go to cupmon only.
//
// Thread-safety and locks:
//  - toggle_mu_ guards kinds_, the client's callbacks and attached_; it is held while calling
//    real Enable/Disable/RegisterCallbacks so that the reference counts and CUPTI's state change
//    together. CUPTI may call the buffer callbacks from inside those calls: the mux's callbacks
//    never take toggle_mu_, and no code takes deliver_mu_ while holding toggle_mu_.
//  - deliver_mu_ guards the pending client buffer; held while calling the client's request and
//    completed callbacks (on CUPTI's thread, or on the thread of a client call). Never held while
//    calling real CUPTI, except ActivityGetNextRecord, which only walks memory.
//  - drops_ has its own lock, never held while calling CUPTI; GetNumDroppedRecords is never
//    called with deliver_mu_ held (a client asking from inside its callback is answered from
//    drops_ alone).
//  - FlushAll is never called with a lock of ours held. A client that calls cuptiActivityFlushAll
//    from inside its own buffer callback (while the mux delivers) gets success without a flush.
//  - the delivery mask and the client's callbacks are atomics, read by the completed trampoline.
// Only one mux exists per process at a time (the trampolines reach it through a global).
// Dropped-record counts shared by two readers. CUPTI's cuptiActivityGetNumDroppedRecords resets
// its count on every read, so two clients forwarding their reads would each see only the drops
// since the other's read. DropShare keeps, per (context, stream) queue, the running total read from
// CUPTI and each reader's mark; a reader gets total - mark and moves its mark to the total. Every
// drop reaches each reader exactly once, whoever's read took it out of CUPTI.
// Thread-safety: any thread; mu_ guards queues_ and is never held while CUPTI is called (the
// caller reads CUPTI first, then calls Take).
class CUPMON_PRELOAD_API DropShare {
 public:
  enum Reader : int { kCupmon = 0, kClient = 1 };
  // At most this many queues are tracked; reads of further queues get only what they read from
  // CUPTI themselves (no sharing). cupmon reads the global queue (nullptr, 0) only.
  static constexpr size_t kMaxQueues = 1024;
  // Adds `read_from_cupti` (what this reader just read from CUPTI for the queue) to the total and
  // returns the reader's share.
  uint64_t Take(Reader who, CUcontext context, uint32_t stream, uint64_t read_from_cupti);
  // The reader starts now (cupmon attaches; the client registers its callbacks): drops read from
  // CUPTI before are not its own and are not handed to it.
  void Restart(Reader who);

 private:
  struct Queue {
    uint64_t total = 0;
    std::array<uint64_t, 2> seen{};
  };
  Mutex mu_;
  std::map<std::pair<CUcontext, uint32_t>, Queue> queues_ CUPMON_GUARDED_BY(mu_);
};

class CUPMON_PRELOAD_API CuptiMux final : public CuptiApi {
 public:
  static constexpr uint32_t kMaxKinds = 256;  // CUPTI 13.0 has about 60 kinds

  explicit CuptiMux(CuptiApi& real);
  ~CuptiMux() override;
  CuptiMux(const CuptiMux&) = delete;
  CuptiMux& operator=(const CuptiMux&) = delete;

  // The mux the trampolines and the interposed entry points reach; null when none exists.
  static CuptiMux* Current() noexcept;

  // ---- cupmon's face (CuptiApi) ----
  CUptiResult GetVersion(uint32_t* version) override { return real_.GetVersion(version); }
  // Attaches: remembers cupmon's callbacks and registers the mux's trampolines with real CUPTI.
  CUptiResult ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                        CUpti_BuffersCallbackCompleteFunc complete) override;
  CUptiResult ActivityEnable(CUpti_ActivityKind kind) override;
  CUptiResult ActivityDisable(CUpti_ActivityKind kind) override;
  CUptiResult ActivityFlushAll(uint32_t flag) override { return real_.ActivityFlushAll(flag); }
  CUptiResult ActivityFlushPeriod(uint32_t ms) override { return real_.ActivityFlushPeriod(ms); }
  // cupmon's share of the drops of queue (ctx, stream): every drop since cupmon's last call, even
  // those the client's calls read from CUPTI meanwhile (DropShare below). Not from a callback.
  CUptiResult ActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream,
                                           size_t* dropped) override;
  CUptiResult ActivitySetAttribute(CUpti_ActivityAttribute a, size_t* size, void* v) override {
    return real_.ActivitySetAttribute(a, size, v);
  }
  CUptiResult ActivityGetNextRecord(uint8_t* b, size_t valid, CUpti_Activity** r) override {
    return real_.ActivityGetNextRecord(b, valid, r);
  }
  CUptiResult GetTimestamp(uint64_t* t) override { return real_.GetTimestamp(t); }
  CUptiResult ActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) override {
    return real_.ActivityEnableRuntimeApi(cbid, enable);
  }
  CUptiResult ActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) override {
    return real_.ActivityEnableDriverApi(cbid, enable);
  }
  CUptiResult ActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                uint64_t id) override {
    return real_.ActivityPushExternalCorrelationId(kind, id);
  }
  CUptiResult ActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                               uint64_t* last_id) override {
    return real_.ActivityPopExternalCorrelationId(kind, last_id);
  }
  CUptiResult GetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                              const char** name) override {
    return real_.GetCallbackName(domain, cbid, name);
  }
  const char* ResultString(CUptiResult r) override { return real_.ResultString(r); }

  // cupmon stopped (after Monitor::Stop): the pending buffer goes back to the client, the client's
  // callbacks are registered with real CUPTI and only the client's kinds stay on. From then on the
  // client's calls go to real CUPTI unchanged, until cupmon registers again. Any thread but the
  // callbacks'.
  void Detach() noexcept;
  bool attached() const noexcept { return attached_.load(std::memory_order_acquire); }
  // pthread_atfork child handler: the child's monitor is off, so the mux stops delivering and
  // forwards the client's calls. Takes no lock.
  void AbandonInForkedChild() noexcept;
  // At exit, before cupmon's final flush: the client's callbacks are never called again by the
  // mux on its own (the client's statics may already be destroyed); its outstanding buffer is
  // left to the exiting process. Takes no lock.
  void ForgetClientAtExit() noexcept;
  // The mux's trampolines registered again and every kind that should be on enabled again, in
  // real CUPTI, without touching the counts: for cupmon's reclaim after a client bypassed the
  // interposition (dlsym on its own libcupti handle). Control thread.
  CUptiResult Reassert() noexcept;

  // ---- the other client's face (interposed entry points; any application thread) ----
  // All are noexcept and return what real CUPTI would for the client. Not attached: forwarded to
  // real CUPTI (the mux still remembers the client's callbacks and kinds).
  CUptiResult ClientRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                      CUpti_BuffersCallbackCompleteFunc complete) noexcept;
  CUptiResult ClientEnable(CUpti_ActivityKind kind) noexcept;
  CUptiResult ClientDisable(CUpti_ActivityKind kind) noexcept;
  // Per-context enables are accounted as process-wide: while cupmon has the kind on, the client
  // receives the kind's records of every context.
  CUptiResult ClientEnableContext(CUcontext context, CUpti_ActivityKind kind) noexcept;
  CUptiResult ClientDisableContext(CUcontext context, CUpti_ActivityKind kind) noexcept;
  // Real FlushAll with the same flag (cupmon's completed callback feeds the client), then the
  // pending buffer goes to the client (a forced flush hands it back even when empty).
  CUptiResult ClientFlushAll(uint32_t flag) noexcept;
  // The client's share of the drops of queue (context, stream_id): every drop since its last call,
  // including those cupmon's polls read from CUPTI. From inside the client's own buffer callback
  // while the mux delivers (Kineto asks there), CUPTI is not asked (a lock of ours is held): the
  // answer holds the drops read from CUPTI so far, so those since cupmon's last poll come at the
  // client's next call.
  CUptiResult ClientGetNumDroppedRecords(CUcontext context, uint32_t stream_id,
                                         size_t* dropped) noexcept;
  // While attached, CUPTI is not torn down: the client's own kinds go off, its pending buffer goes
  // back, its callbacks are forgotten. Success.
  CUptiResult ClientFinalize() noexcept;
  // A client's own clock for CUPTI's timestamps (Kineto registers rdtsc at every session). Records
  // still inside CUPTI are first completed by a forced flush, then the callback is registered:
  // CUPTI converts GPU timestamps into the new clock when it post-processes a buffer, and records
  // captured before the switch but post-processed after it come out with zero timestamps.
  CUptiResult ClientRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) noexcept;

  // Counters (exact, cumulative).
  struct Counters {
    uint64_t client_buffers = 0;       // client buffers handed back to its completed callback
    uint64_t client_records = 0;       // records copied into them
    uint64_t undelivered_records = 0;  // client-kind records it could not get (no/small buffer)
    uint64_t null_client_buffers = 0;  // request callback answered with no usable buffer
    uint64_t unwalkable_buffers = 0;   // buffers the walk stopped in (unknown record kind)
    uint64_t reentrant_flushes = 0;    // FlushAll from inside the client's own callback
    uint64_t timestamp_callbacks = 0;  // cuptiActivityRegisterTimestampCallback calls forwarded
  };
  Counters counters() const noexcept;
  // Test hooks: whether the client has `kind` on / CUPTI has it on as far as the mux knows.
  bool client_kind(uint32_t kind) const;
  bool real_kind(uint32_t kind) const;

  // The trampolines registered with real CUPTI (public for the C callbacks in cupti_mux.cc).
  void OnRequest(uint8_t** buffer, size_t* size, size_t* max_records) noexcept;
  void OnComplete(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size,
                  size_t valid) noexcept;

 private:
  struct KindState {
    uint32_t cupmon = 0;    // cupmon's enables minus disables
    bool client = false;    // the client has it on
    bool draining = false;  // the client turned it off; records still go to it until its flush
    bool real = false;      // on in real CUPTI (as far as the mux made it so)
  };
  // Kind toggles: under toggle_mu_.
  CUptiResult ClientToggle(CUcontext context, bool use_context, CUpti_ActivityKind kind,
                           bool enable) noexcept;
  void UpdateMaskLocked() CUPMON_REQUIRES(toggle_mu_);
  bool ClientHasKindsLocked() const CUPMON_REQUIRES(toggle_mu_);
  bool Delivers(uint32_t kind) const noexcept;
  bool Delivering() const noexcept;  // any kind delivered to the client now
  // Under deliver_mu_.
  void EnsurePendingLocked() CUPMON_REQUIRES(deliver_mu_);
  void RequestPendingLocked() CUPMON_REQUIRES(deliver_mu_);
  void CompletePendingLocked(bool even_if_empty) CUPMON_REQUIRES(deliver_mu_);
  // Take deliver_mu_ (never with toggle_mu_ held).
  void Deliver(const uint8_t* buffer, size_t valid) CUPMON_EXCLUDES(deliver_mu_, toggle_mu_);
  void EnsurePending() CUPMON_EXCLUDES(deliver_mu_, toggle_mu_);
  void CompletePending(bool even_if_empty) CUPMON_EXCLUDES(deliver_mu_, toggle_mu_);

  CuptiApi& real_;

  mutable Mutex toggle_mu_;
  std::array<KindState, kMaxKinds> kinds_ CUPMON_GUARDED_BY(toggle_mu_){};
  std::atomic<bool> attached_{false};
  std::atomic<CUpti_BuffersCallbackRequestFunc> cupmon_request_{nullptr};
  std::atomic<CUpti_BuffersCallbackCompleteFunc> cupmon_complete_{nullptr};
  std::atomic<CUpti_BuffersCallbackRequestFunc> client_request_{nullptr};
  std::atomic<CUpti_BuffersCallbackCompleteFunc> client_complete_{nullptr};
  std::atomic<bool> client_wants_buffer_{false};  // registered and has kinds on (not draining)
  std::array<std::atomic<uint64_t>, kMaxKinds / 64> deliver_mask_{};

  Mutex deliver_mu_;
  uint8_t* pending_ CUPMON_GUARDED_BY(deliver_mu_) = nullptr;
  size_t pending_size_ CUPMON_GUARDED_BY(deliver_mu_) = 0;
  size_t pending_used_ CUPMON_GUARDED_BY(deliver_mu_) = 0;
  size_t pending_max_records_ CUPMON_GUARDED_BY(deliver_mu_) = 0;  // 0: no limit
  size_t pending_records_ CUPMON_GUARDED_BY(deliver_mu_) = 0;
  // The completed callback to hand the pending buffer to.
  CUpti_BuffersCallbackCompleteFunc pending_owner_ CUPMON_GUARDED_BY(deliver_mu_) = nullptr;

  DropShare drops_;

  std::atomic<uint64_t> client_buffers_{0}, client_records_{0}, undelivered_{0}, null_buffers_{0},
      unwalkable_{0}, reentrant_flushes_{0}, registered_timestamp_callbacks_{0};
};

}  // namespace cupmon

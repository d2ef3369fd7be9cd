// CuptiMux: reference-counted kinds and record fan-out from cupmon's buffers to another CUPTI
// client's buffers (see cupti_mux.h).
#include "cupti_mux.h"

#include <cstring>

#include "cupmon/base/check.h"

namespace cupmon {
namespace {

std::atomic<CuptiMux*> g_mux{nullptr};
// True while this thread runs the client's callbacks for the mux (re-entrant FlushAll guard).
thread_local bool t_delivering = false;

struct DeliveringScope {
  DeliveringScope() : was(t_delivering) { t_delivering = true; }
  ~DeliveringScope() { t_delivering = was; }
  bool was;
};

void CUPTIAPI MuxRequestTrampoline(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  if (CuptiMux* m = g_mux.load(std::memory_order_acquire)) m->OnRequest(buffer, size, max_records);
}

void CUPTIAPI MuxCompleteTrampoline(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size,
                                    size_t valid) noexcept {
  if (CuptiMux* m = g_mux.load(std::memory_order_acquire))
    m->OnComplete(ctx, stream, buffer, size, valid);
}

}  // namespace

CuptiMux::CuptiMux(CuptiApi& real) : real_(real) {
  CuptiMux* expected = nullptr;
  CUPMON_CHECK(g_mux.compare_exchange_strong(expected, this, std::memory_order_acq_rel));
}

CuptiMux::~CuptiMux() {
  CuptiMux* self = this;
  g_mux.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);
}

CuptiMux* CuptiMux::Current() noexcept { return g_mux.load(std::memory_order_acquire); }

// ---- cupmon's face ----

CUptiResult CuptiMux::ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                CUpti_BuffersCallbackCompleteFunc complete) {
  CUptiResult r;
  {
    MutexLock lk(toggle_mu_);
    r = real_.ActivityRegisterCallbacks(MuxRequestTrampoline, MuxCompleteTrampoline);
    if (r != CUPTI_SUCCESS) return r;
    cupmon_request_.store(request, std::memory_order_release);
    cupmon_complete_.store(complete, std::memory_order_release);
    attached_.store(true, std::memory_order_release);
    UpdateMaskLocked();
  }
  drops_.Restart(DropShare::kCupmon);
  EnsurePending();
  return r;
}

CUptiResult CuptiMux::ActivityEnable(CUpti_ActivityKind kind) {
  const uint32_t k = static_cast<uint32_t>(kind);
  if (k >= kMaxKinds) return real_.ActivityEnable(kind);
  MutexLock lk(toggle_mu_);
  KindState& s = kinds_[k];
  if (!s.real) {
    const CUptiResult r = real_.ActivityEnable(kind);
    if (r != CUPTI_SUCCESS) return r;
    s.real = true;
  }
  ++s.cupmon;
  return CUPTI_SUCCESS;
}

CUptiResult CuptiMux::ActivityDisable(CUpti_ActivityKind kind) {
  const uint32_t k = static_cast<uint32_t>(kind);
  if (k >= kMaxKinds) return real_.ActivityDisable(kind);
  MutexLock lk(toggle_mu_);
  KindState& s = kinds_[k];
  if (s.cupmon == 0) {
    // Not ours to count (cannot happen in the monitor): only switch it off if the client does not
    // use it either.
    if (s.client || s.draining) return CUPTI_SUCCESS;
    s.real = false;
    return real_.ActivityDisable(kind);
  }
  if (--s.cupmon == 0 && !s.client && s.real) {
    const CUptiResult r = real_.ActivityDisable(kind);
    if (r == CUPTI_SUCCESS) s.real = false;
    return r;
  }
  return CUPTI_SUCCESS;
}

void CuptiMux::Detach() noexcept {
  try {
    {
      MutexLock lk(toggle_mu_);
      if (!attached_.load(std::memory_order_acquire)) return;
      attached_.store(false, std::memory_order_release);
      cupmon_request_.store(nullptr, std::memory_order_release);
      cupmon_complete_.store(nullptr, std::memory_order_release);
      UpdateMaskLocked();  // delivery stops: nothing new lands in a pending buffer
      auto req = client_request_.load(std::memory_order_acquire);
      auto comp = client_complete_.load(std::memory_order_acquire);
      // CUPTI goes back to the client as if cupmon had never been there.
      if (req && comp) real_.ActivityRegisterCallbacks(req, comp);
      for (uint32_t k = 0; k < kMaxKinds; ++k) {
        KindState& s = kinds_[k];
        s.cupmon = 0;
        s.draining = false;
        if (s.real && !s.client &&
            real_.ActivityDisable(static_cast<CUpti_ActivityKind>(k)) == CUPTI_SUCCESS)
          s.real = false;
      }
    }
    CompletePending(/*even_if_empty=*/true);
  } catch (...) {
  }
}

void CuptiMux::AbandonInForkedChild() noexcept {
  // Only the forking thread exists here and a lock may be held by a thread that does not: touch
  // atomics only. Delivery stops and the client's calls go straight to CUPTI.
  attached_.store(false, std::memory_order_release);
  client_wants_buffer_.store(false, std::memory_order_release);
  for (auto& m : deliver_mask_) m.store(0, std::memory_order_release);
}

void CuptiMux::ForgetClientAtExit() noexcept {
  client_request_.store(nullptr, std::memory_order_release);
  client_complete_.store(nullptr, std::memory_order_release);
  client_wants_buffer_.store(false, std::memory_order_release);
  for (auto& m : deliver_mask_) m.store(0, std::memory_order_release);
}

CUptiResult CuptiMux::Reassert() noexcept {
  try {
    MutexLock lk(toggle_mu_);
    if (!attached_.load(std::memory_order_acquire)) return CUPTI_ERROR_INVALID_OPERATION;
    const CUptiResult r =
        real_.ActivityRegisterCallbacks(MuxRequestTrampoline, MuxCompleteTrampoline);
    for (uint32_t k = 0; k < kMaxKinds; ++k)
      if (kinds_[k].real) real_.ActivityEnable(static_cast<CUpti_ActivityKind>(k));
    return r;
  } catch (...) {
    return CUPTI_ERROR_UNKNOWN;
  }
}

// ---- the client's face ----

CUptiResult CuptiMux::ClientRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                              CUpti_BuffersCallbackCompleteFunc complete) noexcept {
  try {
    if (request && complete && attached_.load(std::memory_order_acquire)) {
      bool flush_first = false;
      {
        MutexLock lk(toggle_mu_);
        flush_first = !Delivering() && ClientHasKindsLocked();
      }
      // Delivery would start with these callbacks: records made before go to cupmon only.
      if (flush_first) real_.ActivityFlushAll(0);
    }
    {
      MutexLock lk(toggle_mu_);
      if (!attached_.load(std::memory_order_acquire)) {
        const CUptiResult r = real_.ActivityRegisterCallbacks(request, complete);
        if (r == CUPTI_SUCCESS) {
          if (request != client_request_.load(std::memory_order_acquire) ||
              complete != client_complete_.load(std::memory_order_acquire))
            drops_.Restart(DropShare::kClient);
          client_request_.store(request, std::memory_order_release);
          client_complete_.store(complete, std::memory_order_release);
          UpdateMaskLocked();
        }
        return r;
      }
      // As real CUPTI answers.
      if (!request || !complete) return CUPTI_ERROR_INVALID_PARAMETER;
      // Kineto registers the same callbacks at every session start: nothing changes.
      if (request == client_request_.load(std::memory_order_acquire) &&
          complete == client_complete_.load(std::memory_order_acquire))
        return CUPTI_SUCCESS;
      drops_.Restart(DropShare::kClient);  // drops before its session were cupmon's alone
      client_request_.store(request, std::memory_order_release);
      client_complete_.store(complete, std::memory_order_release);
      UpdateMaskLocked();
    }
    // A pending buffer of the previous callbacks goes back to its owner; then one from the new.
    CompletePending(/*even_if_empty=*/true);
    EnsurePending();
    return CUPTI_SUCCESS;
  } catch (...) {
    return CUPTI_ERROR_UNKNOWN;
  }
}

CUptiResult CuptiMux::ClientEnable(CUpti_ActivityKind kind) noexcept {
  return ClientToggle(nullptr, false, kind, true);
}
CUptiResult CuptiMux::ClientDisable(CUpti_ActivityKind kind) noexcept {
  return ClientToggle(nullptr, false, kind, false);
}
CUptiResult CuptiMux::ClientEnableContext(CUcontext context, CUpti_ActivityKind kind) noexcept {
  return ClientToggle(context, true, kind, true);
}
CUptiResult CuptiMux::ClientDisableContext(CUcontext context, CUpti_ActivityKind kind) noexcept {
  return ClientToggle(context, true, kind, false);
}

CUptiResult CuptiMux::ClientToggle(CUcontext context, bool use_context, CUpti_ActivityKind kind,
                                   bool enable) noexcept {
  try {
    const uint32_t k = static_cast<uint32_t>(kind);
    auto real_call = [&] {
      if (use_context)
        return enable ? real_.ActivityEnableContext(context, kind)
                      : real_.ActivityDisableContext(context, kind);
      return enable ? real_.ActivityEnable(kind) : real_.ActivityDisable(kind);
    };
    // Kinds the mux cannot track are the client's business alone.
    if (k >= kMaxKinds) return real_call();
    if (enable && attached_.load(std::memory_order_acquire)) {
      bool flush_first = false;
      {
        MutexLock lk(toggle_mu_);
        flush_first = !Delivering() && client_request_.load(std::memory_order_acquire) &&
                      client_complete_.load(std::memory_order_acquire);
      }
      // The client's session starts (delivery goes from nothing to something): the complete
      // records cupmon's buffers already hold were made before it and go to cupmon only. Outside
      // our locks: the flush runs our completed callback.
      if (flush_first) real_.ActivityFlushAll(0);
    }
    CUptiResult r = CUPTI_SUCCESS;
    {
      MutexLock lk(toggle_mu_);
      KindState& s = kinds_[k];
      if (!attached_.load(std::memory_order_acquire)) {
        // cupmon is not running: CUPTI sees the call unchanged; the mux only keeps count.
        r = real_call();
        if (r == CUPTI_SUCCESS) {
          s.client = enable;
          s.draining = false;
          s.real = enable || s.cupmon > 0;
        }
      } else if (enable) {
        if (!s.real) {
          r = real_call();
          if (r == CUPTI_SUCCESS) s.real = true;
        }
        if (r == CUPTI_SUCCESS) {
          s.client = true;
          s.draining = false;
        }
      } else if (s.client) {
        s.client = false;
        s.draining = true;  // until the client's next flush
        if (s.cupmon == 0 && s.real) {
          r = real_call();
          if (r == CUPTI_SUCCESS) s.real = false;
        }
      }
      UpdateMaskLocked();
    }
    if (enable && r == CUPTI_SUCCESS) EnsurePending();
    return r;
  } catch (...) {
    return CUPTI_ERROR_UNKNOWN;
  }
}

CUptiResult CuptiMux::ClientFlushAll(uint32_t flag) noexcept {
  try {
    if (t_delivering) {
      reentrant_flushes_.fetch_add(1, std::memory_order_relaxed);
      return CUPTI_SUCCESS;
    }
    // No lock of ours is held: CUPTI calls the mux's completed callback, which feeds the client.
    const CUptiResult r = real_.ActivityFlushAll(flag);
    if (!attached_.load(std::memory_order_acquire)) return r;
    CompletePending(/*even_if_empty=*/(flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0);
    {
      MutexLock lk(toggle_mu_);
      for (KindState& s : kinds_) s.draining = false;
      UpdateMaskLocked();
    }
    EnsurePending();
    return r;
  } catch (...) {
    return CUPTI_ERROR_UNKNOWN;
  }
}

CUptiResult CuptiMux::ClientRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) noexcept {
  try {
    if (attached_.load(std::memory_order_acquire)) ClientFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    registered_timestamp_callbacks_.fetch_add(1, std::memory_order_relaxed);
    return real_.ActivityRegisterTimestampCallback(fn);
  } catch (...) {
    return CUPTI_ERROR_UNKNOWN;
  }
}

uint64_t DropShare::Take(Reader who, CUcontext context, uint32_t stream, uint64_t read_from_cupti) {
  MutexLock lk(mu_);
  auto it = queues_.find({context, stream});
  if (it == queues_.end()) {
    if (queues_.size() >= kMaxQueues) return read_from_cupti;
    it = queues_.emplace(std::make_pair(context, stream), Queue{}).first;
  }
  Queue& q = it->second;
  q.total += read_from_cupti;
  const uint64_t share = q.total - q.seen[who];
  q.seen[who] = q.total;
  return share;
}

void DropShare::Restart(Reader who) {
  MutexLock lk(mu_);
  for (auto& [key, q] : queues_) q.seen[who] = q.total;
}

CUptiResult CuptiMux::ActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream,
                                                   size_t* dropped) {
  if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t read = 0;
  const CUptiResult r = real_.ActivityGetNumDroppedRecords(ctx, stream, &read);
  if (r != CUPTI_SUCCESS) return r;
  *dropped = static_cast<size_t>(drops_.Take(DropShare::kCupmon, ctx, stream, read));
  return CUPTI_SUCCESS;
}

CUptiResult CuptiMux::ClientGetNumDroppedRecords(CUcontext context, uint32_t stream_id,
                                                 size_t* dropped) noexcept {
  try {
    if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
    size_t read = 0;
    // Inside the client's callback as delivered by the mux, deliver_mu_ is held (and CUPTI's own
    // lock too when CUPTI's thread delivers): CUPTI is not asked; cupmon's polls feed drops_.
    if (!t_delivering) {
      const CUptiResult r = real_.ActivityGetNumDroppedRecords(context, stream_id, &read);
      if (r != CUPTI_SUCCESS) return r;
    }
    *dropped = static_cast<size_t>(drops_.Take(DropShare::kClient, context, stream_id, read));
    return CUPTI_SUCCESS;
  } catch (...) {
    return CUPTI_ERROR_UNKNOWN;
  }
}

CUptiResult CuptiMux::ClientFinalize() noexcept {
  try {
    {
      MutexLock lk(toggle_mu_);
      if (!attached_.load(std::memory_order_acquire)) {
        const CUptiResult r = real_.Finalize();
        if (r == CUPTI_SUCCESS) {
          // CUPTI forgot everything; cupmon is not attached, so nothing of ours was on.
          for (KindState& s : kinds_) s = KindState{};
          client_request_.store(nullptr, std::memory_order_release);
          client_complete_.store(nullptr, std::memory_order_release);
          UpdateMaskLocked();
        }
        return r;
      }
      for (uint32_t k = 0; k < kMaxKinds; ++k) {
        KindState& s = kinds_[k];
        if (!s.client && !s.draining) continue;
        s.client = false;
        s.draining = false;
        if (s.cupmon == 0 && s.real &&
            real_.ActivityDisable(static_cast<CUpti_ActivityKind>(k)) == CUPTI_SUCCESS)
          s.real = false;
      }
      client_request_.store(nullptr, std::memory_order_release);
      client_complete_.store(nullptr, std::memory_order_release);
      UpdateMaskLocked();
    }
    CompletePending(/*even_if_empty=*/true);
    return CUPTI_SUCCESS;
  } catch (...) {
    return CUPTI_ERROR_UNKNOWN;
  }
}

CuptiMux::Counters CuptiMux::counters() const noexcept {
  Counters c;
  c.client_buffers = client_buffers_.load(std::memory_order_relaxed);
  c.client_records = client_records_.load(std::memory_order_relaxed);
  c.undelivered_records = undelivered_.load(std::memory_order_relaxed);
  c.null_client_buffers = null_buffers_.load(std::memory_order_relaxed);
  c.unwalkable_buffers = unwalkable_.load(std::memory_order_relaxed);
  c.reentrant_flushes = reentrant_flushes_.load(std::memory_order_relaxed);
  c.timestamp_callbacks = registered_timestamp_callbacks_.load(std::memory_order_relaxed);
  return c;
}

bool CuptiMux::client_kind(uint32_t kind) const {
  MutexLock lk(toggle_mu_);
  return kind < kMaxKinds && kinds_[kind].client;
}

bool CuptiMux::real_kind(uint32_t kind) const {
  MutexLock lk(toggle_mu_);
  return kind < kMaxKinds && kinds_[kind].real;
}

// ---- kinds ----

bool CuptiMux::ClientHasKindsLocked() const {
  for (const KindState& s : kinds_)
    if (s.client) return true;
  return false;
}

void CuptiMux::UpdateMaskLocked() {
  const bool deliver = attached_.load(std::memory_order_acquire) &&
                       client_request_.load(std::memory_order_acquire) &&
                       client_complete_.load(std::memory_order_acquire);
  std::array<uint64_t, kMaxKinds / 64> mask{};
  bool any_on = false;
  for (uint32_t k = 0; k < kMaxKinds; ++k) {
    const KindState& s = kinds_[k];
    if (deliver && (s.client || s.draining)) mask[k / 64] |= uint64_t{1} << (k % 64);
    any_on = any_on || s.client;
  }
  for (size_t i = 0; i < mask.size(); ++i)
    deliver_mask_[i].store(mask[i], std::memory_order_release);
  client_wants_buffer_.store(deliver && any_on, std::memory_order_release);
}

bool CuptiMux::Delivering() const noexcept {
  for (const auto& m : deliver_mask_)
    if (m.load(std::memory_order_acquire) != 0) return true;
  return false;
}

bool CuptiMux::Delivers(uint32_t kind) const noexcept {
  return kind < kMaxKinds &&
         ((deliver_mask_[kind / 64].load(std::memory_order_acquire) >> (kind % 64)) & 1);
}

// ---- callbacks and delivery ----

void CuptiMux::OnRequest(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  if (auto request = cupmon_request_.load(std::memory_order_acquire))
    request(buffer, size, max_records);
}

void CuptiMux::OnComplete(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size,
                          size_t valid) noexcept {
  if (buffer && valid > 0 && Delivering()) {
    try {
      Deliver(buffer, valid);
    } catch (...) {
    }
  }
  // Then cupmon's own path, exactly as without the mux (the writer recycles the buffer later).
  if (auto complete = cupmon_complete_.load(std::memory_order_acquire))
    complete(ctx, stream, buffer, size, valid);
}

void CuptiMux::Deliver(const uint8_t* buffer, size_t valid) {
  MutexLock lk(deliver_mu_);
  DeliveringScope scope;
  if (pending_ && pending_owner_ != client_complete_.load(std::memory_order_acquire))
    CompletePendingLocked(true);  // the client re-registered: its old buffer goes to its old owner
  bool request_failed = false;
  auto copy = [&](const uint8_t* rec, size_t size) CUPMON_REQUIRES(deliver_mu_) {
    uint32_t kind = 0;
    std::memcpy(&kind, rec, sizeof(kind));
    if (!Delivers(kind)) return;
    if (pending_ && (pending_used_ + size > pending_size_ ||
                     (pending_max_records_ && pending_records_ >= pending_max_records_)))
      CompletePendingLocked(false);
    if (!pending_ && !request_failed) {
      RequestPendingLocked();
      request_failed = pending_ == nullptr;  // ask once per buffer, not once per record
    }
    if (!pending_ || pending_used_ + size > pending_size_) {
      undelivered_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::memcpy(pending_ + pending_used_, rec, size);
    pending_used_ += size;
    ++pending_records_;
    client_records_.fetch_add(1, std::memory_order_relaxed);
  };
  // Walked with CUPTI's own walker: it knows every kind the library writes. A record's size is the
  // distance to the next one; the last one ends at `valid`.
  uint8_t* base = const_cast<uint8_t*>(buffer);
  CUpti_Activity* record = nullptr;
  const uint8_t* prev = nullptr;
  for (;;) {
    const CUptiResult r = real_.ActivityGetNextRecord(base, valid, &record);
    if (r != CUPTI_SUCCESS) {
      if (prev && r == CUPTI_ERROR_MAX_LIMIT_REACHED) {
        copy(prev, valid - static_cast<size_t>(prev - buffer));
      } else if (r != CUPTI_ERROR_MAX_LIMIT_REACHED) {
        // A kind this libcupti cannot walk: the rest of the buffer is lost to the client.
        unwalkable_.fetch_add(1, std::memory_order_relaxed);
        if (prev) {
          uint32_t kind = 0;
          std::memcpy(&kind, prev, sizeof(kind));
          if (Delivers(kind)) undelivered_.fetch_add(1, std::memory_order_relaxed);
        }
      }
      break;
    }
    const uint8_t* cur = reinterpret_cast<const uint8_t*>(record);
    if (prev) copy(prev, static_cast<size_t>(cur - prev));
    prev = cur;
  }
}

void CuptiMux::RequestPendingLocked() {
  auto request = client_request_.load(std::memory_order_acquire);
  auto complete = client_complete_.load(std::memory_order_acquire);
  if (!request || !complete) return;
  uint8_t* b = nullptr;
  size_t size = 0, max_records = 0;
  request(&b, &size, &max_records);
  if (!b) {
    null_buffers_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (size < sizeof(uint64_t) || reinterpret_cast<uintptr_t>(b) % ACTIVITY_RECORD_ALIGNMENT != 0) {
    // Unusable (CUPTI needs 8-byte aligned buffers): handed straight back, empty, never kept.
    null_buffers_.fetch_add(1, std::memory_order_relaxed);
    complete(nullptr, 0, b, size, 0);
    return;
  }
  pending_ = b;
  pending_size_ = size;
  pending_used_ = 0;
  pending_max_records_ = max_records;
  pending_records_ = 0;
  pending_owner_ = complete;
}

void CuptiMux::CompletePendingLocked(bool even_if_empty) {
  if (!pending_ || (pending_used_ == 0 && !even_if_empty)) return;
  uint8_t* b = pending_;
  const size_t size = pending_size_, used = pending_used_;
  auto owner = pending_owner_;
  pending_ = nullptr;
  pending_owner_ = nullptr;
  pending_size_ = pending_used_ = pending_records_ = pending_max_records_ = 0;
  client_buffers_.fetch_add(1, std::memory_order_relaxed);
  owner(nullptr, 0, b, size, used);
}

void CuptiMux::EnsurePendingLocked() {
  if (pending_ && pending_owner_ != client_complete_.load(std::memory_order_acquire))
    CompletePendingLocked(true);
  if (!pending_ && client_wants_buffer_.load(std::memory_order_acquire)) RequestPendingLocked();
}

void CuptiMux::EnsurePending() {
  if (!client_wants_buffer_.load(std::memory_order_acquire)) return;
  MutexLock lk(deliver_mu_);
  DeliveringScope scope;
  EnsurePendingLocked();
}

void CuptiMux::CompletePending(bool even_if_empty) {
  MutexLock lk(deliver_mu_);
  DeliveringScope scope;
  CompletePendingLocked(even_if_empty);
}

}  // namespace cupmon

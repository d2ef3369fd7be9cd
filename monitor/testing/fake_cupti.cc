// TEST DOUBLE: fake CUPTI producing byte-exact, synthetic records (see fake_cupti.h).
#include "monitor/testing/fake_cupti.h"

#include <time.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "cupmon/base/check.h"

namespace cupmon::testing {
namespace {
// True while this thread runs a buffer callback for the fake.
thread_local bool t_in_callback = false;
struct InCallbackScope {
  InCallbackScope() : was(t_in_callback) { t_in_callback = true; }
  ~InCallbackScope() { t_in_callback = was; }
  bool was;
};
}  // namespace

FakeCupti::FakeCupti(MonitorClock& clock, int64_t drift_ppb)
    : clock_(clock),
      drift_ppb_(drift_ppb),
      drift_origin_ns_(clock.RealtimeNs()),
      worker_([this] { WorkerLoop(); }) {}

uint64_t FakeCupti::CuptiNsAt(int64_t realtime_ns) const {
  // 128-bit intermediates: a week at any drift stays exact to the nanosecond (floor division).
  const __int128 since = static_cast<__int128>(realtime_ns) - drift_origin_ns_;
  __int128 extra = since * drift_ppb_;
  extra = extra >= 0 ? extra / 1'000'000'000 : -((-extra + 999'999'999) / 1'000'000'000);
  return static_cast<uint64_t>(static_cast<__int128>(realtime_ns) + extra);
}

int64_t FakeCupti::RealtimeNsAt(uint64_t cupti_ns) const {
  // The smallest wall time whose CUPTI time reaches cupti_ns (CuptiNsAt is non-decreasing).
  const __int128 since = static_cast<__int128>(cupti_ns) - drift_origin_ns_;
  int64_t wall = static_cast<int64_t>(drift_origin_ns_ +
                                      since * 1'000'000'000 / (1'000'000'000 + drift_ppb_));
  while (CuptiNsAt(wall) > cupti_ns) --wall;
  while (CuptiNsAt(wall) < cupti_ns) ++wall;
  return wall;
}

FakeCupti::~FakeCupti() {
  {
    MutexLock lk(worker_mu_);
    worker_exit_ = true;
  }
  worker_cv_.notify_all();
  worker_.join();
}

FakeCupti::Producer* FakeCupti::NewProducer(uint32_t thread_id) {
  MutexLock lk(producers_mu_);
  producers_.push_back(std::unique_ptr<Producer>(new Producer(this, thread_id)));
  return producers_.back().get();
}

uint32_t FakeCupti::AddKernelName(const std::string& name) {
  MutexLock lk(producers_mu_);
  names_.push_back(name);
  return static_cast<uint32_t>(names_.size() - 1);
}

const char* FakeCupti::KernelNamePointer(uint32_t index) const {
  MutexLock lk(producers_mu_);
  return names_.at(index).c_str();
}

uint32_t FakeCupti::RecordSize(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: return sizeof(CUpti_ActivityCudaEvent2);
    case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
    default: return 0;
  }
}

bool FakeCupti::kind_enabled(uint32_t kind) const {
  if (kind >= 128) return false;
  const auto& mask = kind < 64 ? enabled_mask_lo_ : enabled_mask_hi_;
  return (mask.load() >> (kind % 64)) & 1;
}

uint64_t FakeCupti::produced_of_kind(uint32_t kind) const {
  return kind < 64 ? produced_by_kind_[kind].load() : 0;
}

bool FakeCupti::Producer::Append(uint32_t kind, const void* record, size_t size) {
  if (!fake_->kind_enabled(kind)) return false;
  MutexLock lk(mu_);
  if (buffer_ && used_ + size > size_) {
    fake_->Complete(buffer_, size_, used_);
    buffer_ = nullptr;
  }
  if (!buffer_) {
    uint8_t* b = nullptr;
    size_t s = 0, max_records = 0;
    if (auto request = fake_->request_.load()) {
      InCallbackScope in_callback;
      request(&b, &s, &max_records);
    }
    if (!b || s < size) {
      fake_->AddDropped(nullptr, 0, 1);
      return false;
    }
    // Real CUPTI zeroes each buffer it is given (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER at
    // its default 0); the monitor's takeover check relies on it (callback_watch.h).
    std::memset(b, 0, s);
    buffer_ = b;
    size_ = s;
    used_ = 0;
  }
  std::memcpy(buffer_ + used_, record, size);
  used_ += size;
  fake_->produced_.fetch_add(1);
  fake_->produced_by_kind_[kind].fetch_add(1);
  return true;
}

bool FakeCupti::Producer::Kernel(uint32_t name_index, uint64_t start_ns, uint64_t end_ns) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start_ns;
  k.end = end_ns;
  k.gridX = 1;
  k.blockX = 32;
  k.correlationId = static_cast<uint32_t>(start_ns);
  k.name = fake_->KernelNamePointer(name_index);
  return Append(k.kind, &k, sizeof(k));
}

bool FakeCupti::Producer::Memcpy(uint64_t bytes, uint8_t copy_kind, uint64_t start_ns,
                                 uint64_t end_ns) {
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = copy_kind;
  m.bytes = bytes;
  m.start = start_ns;
  m.end = end_ns;
  return Append(m.kind, &m, sizeof(m));
}

bool FakeCupti::Producer::PeerCopy(uint64_t bytes, uint32_t src_device, uint32_t dst_device,
                                   uint64_t start_ns, uint64_t end_ns) {
  CUpti_ActivityMemcpyPtoP4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  m.bytes = bytes;
  m.start = start_ns;
  m.end = end_ns;
  m.deviceId = src_device;
  m.srcDeviceId = src_device;
  m.dstDeviceId = dst_device;
  return Append(m.kind, &m, sizeof(m));
}

bool FakeCupti::Producer::Memset(uint64_t bytes, uint32_t value, uint64_t start_ns,
                                 uint64_t end_ns) {
  CUpti_ActivityMemset4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.value = value;
  m.bytes = bytes;
  m.start = start_ns;
  m.end = end_ns;
  return Append(m.kind, &m, sizeof(m));
}

bool FakeCupti::Producer::Api(uint32_t kind, uint32_t cbid, uint32_t correlation_id,
                              uint64_t start_ns, uint64_t end_ns) {
  if (!fake_->kind_enabled(kind) || fake_->api_filtered(kind, cbid)) return false;
  uint64_t external_id = 0;
  bool have_external = false;
  {
    MutexLock lk(fake_->calls_mu_);
    auto it = fake_->external_.find({std::this_thread::get_id(),
                                     CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1});
    if (it != fake_->external_.end() && !it->second.empty()) {
      have_external = true;
      external_id = it->second.back();
    }
  }
  if (have_external) {
    CUpti_ActivityExternalCorrelation e{};
    e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;
    e.externalId = external_id;
    e.correlationId = correlation_id;
    Append(e.kind, &e, sizeof(e));  // dropped silently when the kind is off
  }
  CUpti_ActivityAPI a{};
  a.kind = static_cast<CUpti_ActivityKind>(kind);
  a.cbid = cbid;
  a.start = start_ns;
  a.end = end_ns;
  a.processId = 1;
  a.threadId = thread_id_;
  a.correlationId = correlation_id;
  return Append(kind, &a, sizeof(a));
}

bool FakeCupti::Producer::Launch(uint32_t name_index, uint32_t correlation_id, uint64_t start_ns,
                                 uint64_t end_ns) {
  Api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, correlation_id,
      start_ns, start_ns + 1);
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start_ns;
  k.end = end_ns;
  k.gridX = 1;
  k.blockX = 32;
  k.correlationId = correlation_id;
  k.name = fake_->KernelNamePointer(name_index);
  return Append(k.kind, &k, sizeof(k));
}

bool FakeCupti::Producer::Marker(uint32_t flags, uint32_t id, uint64_t timestamp_ns,
                                 int64_t name_index) {
  CUpti_ActivityMarker2 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = static_cast<CUpti_ActivityFlag>(flags);
  m.timestamp = timestamp_ns;
  m.id = id;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = 1;
  m.objectId.pt.threadId = thread_id_;
  if (name_index >= 0) m.name = fake_->KernelNamePointer(static_cast<uint32_t>(name_index));
  return Append(m.kind, &m, sizeof(m));
}

std::vector<std::string> FakeCupti::calls() const {
  MutexLock lk(calls_mu_);
  return calls_;
}

bool FakeCupti::api_filtered(uint32_t kind, uint32_t cbid) const {
  MutexLock lk(calls_mu_);
  return filters_.contains({kind, cbid});
}

CUptiResult FakeCupti::ActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  MutexLock lk(calls_mu_);
  calls_.push_back("EnableRuntimeApi(" + std::to_string(cbid) + "," + std::to_string(enable) + ")");
  if (enable) filters_.erase({CUPTI_ACTIVITY_KIND_RUNTIME, cbid});
  else filters_.insert({CUPTI_ACTIVITY_KIND_RUNTIME, cbid});
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::ActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  MutexLock lk(calls_mu_);
  calls_.push_back("EnableDriverApi(" + std::to_string(cbid) + "," + std::to_string(enable) + ")");
  if (enable) filters_.erase({CUPTI_ACTIVITY_KIND_DRIVER, cbid});
  else filters_.insert({CUPTI_ACTIVITY_KIND_DRIVER, cbid});
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::ActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                         uint64_t id) {
  MutexLock lk(calls_mu_);
  external_[{std::this_thread::get_id(), static_cast<uint32_t>(kind)}].push_back(id);
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::ActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                        uint64_t* last_id) {
  MutexLock lk(calls_mu_);
  auto& stack = external_[{std::this_thread::get_id(), static_cast<uint32_t>(kind)}];
  if (stack.empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  if (last_id) *last_id = stack.back();
  stack.pop_back();
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::GetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                       const char** name) {
  struct Entry {
    CUpti_CallbackDomain domain;
    uint32_t cbid;
    const char* name;
  };
#define CUPMON_FAKE_RT(n) {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##n, #n}
#define CUPMON_FAKE_DRV(n) {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##n, #n}
  static constexpr Entry kNames[] = {
      CUPMON_FAKE_RT(cudaGetDevice_v3020),         CUPMON_FAKE_RT(cudaSetDevice_v3020),
      CUPMON_FAKE_RT(cudaGetLastError_v3020),      CUPMON_FAKE_RT(cudaEventCreate_v3020),
      CUPMON_FAKE_RT(cudaEventCreateWithFlags_v3020), CUPMON_FAKE_RT(cudaEventDestroy_v3020),
      CUPMON_FAKE_RT(cudaLaunchKernel_v7000),      CUPMON_FAKE_DRV(cuCtxGetCurrent),
      CUPMON_FAKE_DRV(cuDevicePrimaryCtxGetState), CUPMON_FAKE_DRV(cuKernelGetAttribute),
      CUPMON_FAKE_DRV(cuLaunchKernel),             CUPMON_FAKE_RT(cudaDeviceGetAttribute_v5000),
      CUPMON_FAKE_DRV(cuKernelGetName),            CUPMON_FAKE_DRV(cuKernelGetFunction),
      CUPMON_FAKE_DRV(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags),
  };
#undef CUPMON_FAKE_RT
#undef CUPMON_FAKE_DRV
  for (const Entry& e : kNames) {
    if (e.domain == domain && e.cbid == cbid) {
      *name = e.name;
      return CUPTI_SUCCESS;
    }
  }
  return CUPTI_ERROR_INVALID_PARAMETER;
}

void FakeCupti::Complete(uint8_t* buffer, size_t size, size_t valid) {
  {
    MutexLock lk(worker_mu_);
    pending_.push_back({buffer, size, valid});
    ++queued_;
  }
  worker_cv_.notify_all();
}

void FakeCupti::WorkerLoop() {
  MutexLock lk(worker_mu_);
  for (;;) {
    while (pending_.empty() && !worker_exit_) lk.Wait(worker_cv_);
    if (pending_.empty()) return;
    const Completed c = pending_.front();
    pending_.pop_front();
    lk.Unlock();
    if (auto complete = complete_.load()) {
      InCallbackScope in_callback;
      complete(nullptr, 0, c.buffer, c.size, c.valid);
    }
    lk.Lock();
    ++delivered_;
    worker_cv_.notify_all();
  }
}

CUptiResult FakeCupti::GetVersion(uint32_t* version) {
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                 CUpti_BuffersCallbackCompleteFunc complete) {
  if (fail_register_ != CUPTI_SUCCESS) return fail_register_;
  if (!request || !complete) return CUPTI_ERROR_INVALID_PARAMETER;
  request_ = request;
  complete_ = complete;
  MutexLock lk(calls_mu_);
  calls_.push_back("RegisterCallbacks");
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::ActivityEnable(CUpti_ActivityKind kind) {
  if (fail_enable_ != CUPTI_SUCCESS) return fail_enable_;
  const uint32_t k = static_cast<uint32_t>(kind);
  if (k >= 128) return CUPTI_ERROR_INVALID_KIND;
  {
    MutexLock lk(calls_mu_);
    calls_.push_back("Enable(" + std::to_string(k) + ")");
    // Real CUPTI: the kind setting overrides per-cbid filters made before it.
    std::erase_if(filters_, [&](const auto& f) { return f.first == k; });
  }
  (k < 64 ? enabled_mask_lo_ : enabled_mask_hi_).fetch_or(uint64_t{1} << (k % 64));
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::ActivityDisable(CUpti_ActivityKind kind) {
  const uint32_t k = static_cast<uint32_t>(kind);
  if (k >= 128) return CUPTI_ERROR_INVALID_KIND;
  {
    MutexLock lk(calls_mu_);
    calls_.push_back("Disable(" + std::to_string(k) + ")");
  }
  (k < 64 ? enabled_mask_lo_ : enabled_mask_hi_).fetch_and(~(uint64_t{1} << (k % 64)));
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::ActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) {
  if (!fn) return CUPTI_ERROR_INVALID_PARAMETER;
  uint64_t pending = 0;
  std::vector<Producer*> producers;
  {
    MutexLock lk(producers_mu_);
    for (auto& p : producers_) producers.push_back(p.get());
  }
  for (Producer* p : producers) {
    MutexLock lk(p->mu_);
    for (size_t at = 0; p->buffer_ && at < p->used_;) {
      const auto* r = reinterpret_cast<const CUpti_Activity*>(p->buffer_ + at);
      const uint32_t size = RecordSize(r->kind);
      if (size == 0) break;
      at += size;
      ++pending;
    }
  }
  pending_at_ts_.store(pending);
  timestamp_callbacks_.fetch_add(1);
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::ActivityFlushAll(uint32_t flag) {
  const bool forced = flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED;
  if (forced) forced_flushes_.fetch_add(1);
  std::vector<Producer*> producers;
  {
    MutexLock lk(producers_mu_);
    for (auto& p : producers_) producers.push_back(p.get());
  }
  for (Producer* p : producers) {
    MutexLock lk(p->mu_);
    if (p->buffer_ && (forced || p->used_ > 0)) {
      Complete(p->buffer_, p->size_, p->used_);
      p->buffer_ = nullptr;
    }
  }
  // Blocking, like cuptiActivityFlushAll: returns once everything queued so far was delivered.
  {
    MutexLock lk(worker_mu_);
    const uint64_t target = queued_;
    while (delivered_ < target) lk.Wait(worker_cv_);
  }
  if (const int64_t delay = flush_delay_ms_.load(); !forced && delay > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::ActivityFlushPeriod(uint32_t) { return CUPTI_SUCCESS; }

void FakeCupti::AddDropped(CUcontext context, uint32_t stream, uint64_t n) {
  MutexLock lk(dropped_mu_);
  dropped_unread_[{context, stream}] += n;
  dropped_total_.fetch_add(n);
}

CUptiResult FakeCupti::ActivityGetNumDroppedRecords(CUcontext context, uint32_t stream_id,
                                                    size_t* dropped) {
  if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
  if (t_in_callback) dropped_in_callback_.fetch_add(1);
  MutexLock lk(dropped_mu_);
  auto it = dropped_unread_.find({context, stream_id});
  *dropped = it == dropped_unread_.end() ? 0 : static_cast<size_t>(it->second);
  if (it != dropped_unread_.end()) it->second = 0;  // read resets, as in CUPTI
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::ActivitySetAttribute(CUpti_ActivityAttribute attr, size_t* value_size,
                                            void* value) {
  if (!value_size || !value) return CUPTI_ERROR_INVALID_PARAMETER;
  if (attr == fail_attribute_ && fail_attribute_result_ != CUPTI_SUCCESS)
    return fail_attribute_result_;
  // cupti_activity.h: these two are uint8_t flags; the others used here are size_t.
  const bool flag = attr == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER ||
                    attr == CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER ||
                    attr == CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED;
  if (*value_size != (flag ? sizeof(uint8_t) : sizeof(size_t)))
    return CUPTI_ERROR_INVALID_PARAMETER;
  uint64_t v = 0;
  if (flag) v = *static_cast<const uint8_t*>(value);
  else v = *static_cast<const size_t*>(value);
  MutexLock lk(calls_mu_);
  calls_.push_back("SetAttribute(" + std::to_string(static_cast<int>(attr)) + "," +
                   std::to_string(v) + ")");
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::ActivityGetNextRecord(uint8_t* buffer, size_t valid_size,
                                             CUpti_Activity** record) {
  // Same contract as the real one: null *record means "first record".
  size_t off = 0;
  if (*record) {
    const uint8_t* cur = reinterpret_cast<const uint8_t*>(*record);
    uint32_t kind;
    std::memcpy(&kind, cur, 4);
    off = static_cast<size_t>(cur - buffer) + RecordSize(kind);
  }
  if (off + 4 > valid_size) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  uint32_t kind;
  std::memcpy(&kind, buffer + off, 4);
  const uint32_t size = RecordSize(kind);
  if (size == 0) return CUPTI_ERROR_INVALID_KIND;
  if (off + size > valid_size) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + off);
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::GetTimestamp(uint64_t* timestamp) {
  if (delayed_timestamps_.load() > 0 && delayed_timestamps_.fetch_sub(1) > 0)
    std::this_thread::sleep_for(std::chrono::microseconds(timestamp_delay_us_.load()));
  *timestamp = CuptiNow() + static_cast<uint64_t>(timestamp_shift_.load());
  return CUPTI_SUCCESS;
}

const char* FakeCupti::ResultString(CUptiResult result) {
  switch (result) {
    case CUPTI_SUCCESS: return "CUPTI_SUCCESS";
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    case CUPTI_ERROR_UNKNOWN: return "CUPTI_ERROR_UNKNOWN";
    case CUPTI_ERROR_QUEUE_EMPTY: return "CUPTI_ERROR_QUEUE_EMPTY";
    default: return "fake CUPTI error";
  }
}

}  // namespace cupmon::testing

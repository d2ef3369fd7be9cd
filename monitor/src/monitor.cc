// Monitor: CUPTI callbacks -> buffer queue -> writer thread -> RecordingWriter, plus the control
// thread's periodic flush, dropped-record polling, stats and calibration.
#include "cupmon/monitor/monitor.h"

#include <cupti.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <random>

#include <boost/asio/post.hpp>

#include "cupmon/control/protocol.h"
#include "cupmon/format/check.h"
#include "cupmon/format/recording_writer.h"
#include "callback_watch.h"
#include "cupti_mux.h"

#ifndef CUPMON_VERSION_STRING
#define CUPMON_VERSION_STRING "0.0.0"
#endif

namespace cupmon {
namespace {

// The monitor the CUPTI callbacks reach. Set by Start(), cleared at the end of Stop().
std::atomic<Monitor*> g_active{nullptr};
// Set in a forked child: nothing of the parent's monitor may run there.
std::atomic<bool> g_forked_child{false};

constexpr size_t kMaxStringBytes = 1u << 20;  // longer names are cut (templates can be huge)
// Distinct annotation labels kept (each lives until exit: its address is its id). Beyond this a
// push is refused, so a label built from an unbounded counter cannot grow memory without end.
constexpr size_t kMaxLabels = 1u << 20;
constexpr size_t kMaxLabelBytes = 4096;
static_assert(TraceWindow::kMaxWindowMs == control::kMaxWindowMs);

uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

std::string UpperKindName(uint32_t kind) {
  std::string s = KindName(kind);
  if (s == "unknown") return "KIND_" + std::to_string(kind);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

int64_t ClockNs(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void CUPTIAPI RequestTrampoline(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  if (g_forked_child.load(std::memory_order_relaxed)) return;
  if (Monitor* m = g_active.load(std::memory_order_acquire)) m->OnBufferRequested(buffer, size);
}

void CUPTIAPI CompleteTrampoline(CUcontext, uint32_t, uint8_t* buffer, size_t,
                                 size_t valid_size) noexcept {
  if (g_forked_child.load(std::memory_order_relaxed)) return;
  if (Monitor* m = g_active.load(std::memory_order_acquire))
    m->OnBufferCompleted(buffer, valid_size);
}

uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

std::string ReadSmallFile(const char* path) {
  std::string out;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (1u << 20)) break;
  }
  close(fd);
  return out;
}

int64_t ProcessStartUnixNs() {
  // /proc/self/stat field 22 is the start time in clock ticks after boot; /proc/stat has btime.
  const std::string stat = ReadSmallFile("/proc/self/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  size_t pos = paren + 2;  // field 3 starts here
  for (int field = 3; field < 22 && pos < stat.size(); ++field) {
    pos = stat.find(' ', pos);
    if (pos == std::string::npos) return 0;
    ++pos;
  }
  const unsigned long long ticks = std::strtoull(stat.c_str() + pos, nullptr, 10);
  const std::string pstat = ReadSmallFile("/proc/stat");
  const size_t b = pstat.find("btime ");
  if (b == std::string::npos) return 0;
  const long long btime = std::strtoll(pstat.c_str() + b + 6, nullptr, 10);
  const long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) return 0;
  return btime * 1'000'000'000LL + static_cast<int64_t>(ticks) * (1'000'000'000LL / hz);
}

std::string HostName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  return host;
}

}  // namespace

Monitor::Monitor(MonitorOptions options)
    : options_(std::move(options)),
      cupti_(*options_.cupti),
      work_(boost::asio::make_work_guard(io_)) {}

Monitor::~Monitor() {
  Stop();
}

void Monitor::Warn(const std::string& line) { std::fprintf(stderr, "cupmon: %s\n", line.c_str()); }

bool Monitor::RunOnControl(std::function<void()> task) {
  // Never started (a refused second start) or already joined: nothing would run the task.
  if (!control_thread_.joinable()) return false;
  if (std::this_thread::get_id() == control_thread_.get_id()) {
    task();
    return true;
  }
  // The task usually refers to the caller's stack, so it may run only while the caller waits:
  // `state` goes queued -> running (control thread) or queued -> abandoned (caller, once the
  // io_context stopped), never both. A task already running is waited for even after a stop.
  enum : int { kQueued, kRunning, kAbandoned };
  struct Shared {
    std::atomic<int> state{kQueued};
    std::promise<void> done;
  };
  auto shared = std::make_shared<Shared>();
  std::future<void> finished = shared->done.get_future();
  boost::asio::post(io_, [task = std::move(task), shared]() noexcept {
    int expected = kQueued;
    if (!shared->state.compare_exchange_strong(expected, kRunning)) return;
    try {
      task();
    } catch (...) {
    }
    shared->done.set_value();
  });
  // A stopped io_context never runs a queued task: do not wait for it forever.
  while (finished.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) {
    int expected = kQueued;
    if (io_.stopped() && shared->state.compare_exchange_strong(expected, kAbandoned)) return false;
  }
  return true;
}

void Monitor::DisableInForkedChild() noexcept {
  g_forked_child.store(true, std::memory_order_relaxed);
}

bool Monitor::InForkedChild() noexcept { return g_forked_child.load(std::memory_order_relaxed); }

Expected<std::unique_ptr<Monitor>> Monitor::Start(MonitorOptions options) {
  if (!options.cupti) return MakeError("no CUPTI implementation given");
  if (InForkedChild())
    return MakeError("this is a forked child of a monitored process; monitoring stays off here");
  static std::once_flag fork_handler_once;
  std::call_once(fork_handler_once, [] {
    // The child keeps the parent's memory but none of its threads: mark the monitor off there, so
    // it never writes into the parent's files nor flushes CUPTI (a child hung there in HPCToolkit).
    pthread_atfork(nullptr, nullptr, [] { DisableInForkedChild(); });
  });
  std::unique_ptr<Monitor> m(new Monitor(std::move(options)));
  Monitor* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, m.get(), std::memory_order_acq_rel))
    return MakeError("a monitor is already running in this process (a second start is refused)");
  if (auto r = m->Init(); !r) {
    m->Abandon();
    return std::unexpected(r.error());
  }
  return m;
}

void Monitor::ProbeRecordSizes() {
  // One synthetic record per kind, walked with cuptiActivityGetNextRecord: the second call returns
  // the record after the first, so the distance is the size compiled into this libcupti.
  alignas(8) static uint8_t probe[8192];
  for (uint32_t kind = 1; kind < RecordSizeTable::kMaxKind; ++kind) {
    std::memset(probe, 0, sizeof(probe));
    for (size_t off = 0; off + 8 <= sizeof(probe); off += 8) std::memcpy(probe + off, &kind, 4);
    CUpti_Activity* rec = nullptr;
    if (cupti_.ActivityGetNextRecord(probe, sizeof(probe), &rec) != CUPTI_SUCCESS) continue;
    if (cupti_.ActivityGetNextRecord(probe, sizeof(probe), &rec) != CUPTI_SUCCESS) continue;
    const auto size = reinterpret_cast<uint8_t*>(rec) - probe;
    if (size > 0 && size < 4096 && size % 8 == 0) sizes_.Set(kind, static_cast<uint32_t>(size));
  }
  if (sizes_.Empty()) {
    Warn("could not probe CUPTI record sizes with cuptiActivityGetNextRecord; "
         "using the CUPTI 13.0 table");
    sizes_ = RecordSizeTable::Cupti13();
  } else {
    sizes_probed_ = true;
  }
  // String pointers are read at the offsets of the structs this library was compiled with, only
  // when the loaded libcupti's size for the kind matches (else the layout may differ).
  if (sizes_.Size(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == sizeof(CUpti_ActivityKernel10))
    kernel_name_offset_ = offsetof(CUpti_ActivityKernel10, name);
  else
    Warn("kernel record size differs from CUpti_ActivityKernel10; kernel names are not captured");
  if (sizes_.Size(CUPTI_ACTIVITY_KIND_MARKER) == sizeof(CUpti_ActivityMarker2)) {
    marker_name_offset_ = offsetof(CUpti_ActivityMarker2, name);
    marker_domain_offset_ = offsetof(CUpti_ActivityMarker2, domain);
  }
}

Expected<void> Monitor::Init() {
  std::vector<std::string> warnings;
  NormalizeConfig(&options_.config, &warnings);
  for (const auto& w : warnings) Warn(w);
  MonitorConfig& c = options_.config;

  if (CUptiResult r = cupti_.GetVersion(&cupti_version_); r != CUPTI_SUCCESS)
    return MakeError(std::string("cuptiGetVersion failed: ") + cupti_.ResultString(r));
  ProbeRecordSizes();

  auto pool = BufferPool::Create(c.buffer_bytes, c.pool_bytes / c.buffer_bytes);
  if (!pool) return std::unexpected(pool.error());
  pool_ = std::move(*pool);

  std::vector<std::string> unknown_apis;
  ResolveApiFilter(cupti_, c.api_filter, &runtime_filter_, &driver_filter_, &unknown_apis);
  for (const auto& name : unknown_apis)
    Warn("API filter: no CUDA runtime or driver API is named '" + name + "'; ignored");
  if (!c.metrics_address.empty()) {
    track_busy_ = true;
    // Field offsets of the structs this library was compiled with, used only when the loaded
    // libcupti's record size for the kind matches (as for kernel names).
    if (sizes_.Size(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == sizeof(CUpti_ActivityKernel10))
      kernel_offsets_ = {offsetof(CUpti_ActivityKernel10, start),
                         offsetof(CUpti_ActivityKernel10, end),
                         offsetof(CUpti_ActivityKernel10, deviceId),
                         offsetof(CUpti_ActivityKernel10, streamId)};
    if (sizes_.Size(CUPTI_ACTIVITY_KIND_MEMCPY) == sizeof(CUpti_ActivityMemcpy6))
      memcpy_offsets_ = {offsetof(CUpti_ActivityMemcpy6, start), offsetof(CUpti_ActivityMemcpy6, end),
                         offsetof(CUpti_ActivityMemcpy6, deviceId),
                         offsetof(CUpti_ActivityMemcpy6, streamId)};
    if (sizes_.Size(CUPTI_ACTIVITY_KIND_MEMCPY2) == sizeof(CUpti_ActivityMemcpyPtoP4))
      memcpy2_offsets_ = {offsetof(CUpti_ActivityMemcpyPtoP4, start),
                          offsetof(CUpti_ActivityMemcpyPtoP4, end),
                          offsetof(CUpti_ActivityMemcpyPtoP4, deviceId),
                          offsetof(CUpti_ActivityMemcpyPtoP4, streamId)};
    if (sizes_.Size(CUPTI_ACTIVITY_KIND_MEMSET) == sizeof(CUpti_ActivityMemset4))
      memset_offsets_ = {offsetof(CUpti_ActivityMemset4, start), offsetof(CUpti_ActivityMemset4, end),
                         offsetof(CUpti_ActivityMemset4, deviceId),
                         offsetof(CUpti_ActivityMemset4, streamId)};
  }

  std::random_device rd;
  recording_id_ = (uint64_t{rd()} << 32) ^ rd() ^ static_cast<uint64_t>(ClockNs(CLOCK_REALTIME));
  *start_calibration_.add_samples() = TakeCalibrationSample();
  NoteCalibrationWritten(start_calibration_.samples(0));

  writer_thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "cupmon-writer");
    WriterLoop();
  });
  control_thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "cupmon-control");
    for (;;) {
      try {
        io_.run();
        return;
      } catch (...) {
        // A handler threw: keep the control thread alive (the handlers catch their own errors).
      }
    }
  });

  if (CUptiResult r = cupti_.ActivityRegisterCallbacks(RequestTrampoline, CompleteTrampoline);
      r != CUPTI_SUCCESS) {
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      return MakeError("another CUPTI client (nsys, ncu, torch.profiler, ...) already holds this "
                       "process");
    return MakeError(std::string("cuptiActivityRegisterCallbacks failed: ") +
                     cupti_.ResultString(r));
  }
  if (c.zero_buffers) {
    uint8_t one = 1;
    size_t size = sizeof(one);
    if (CUptiResult r = cupti_.ActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
                                                    &size, &one);
        r != CUPTI_SUCCESS) {
      Warn(std::string("cannot set ZEROED_OUT_ACTIVITY_BUFFER: ") + cupti_.ResultString(r) +
           "; CUPTI zeroes buffers itself");
      c.zero_buffers = false;
    }
  }
  std::string failed;
  for (uint32_t kind : c.kinds) {
    const CUptiResult r = cupti_.ActivityEnable(static_cast<CUpti_ActivityKind>(kind));
    if (r == CUPTI_SUCCESS) {
      enabled_kinds_.push_back(kind);
      continue;
    }
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      return MakeError("another CUPTI client (nsys, ncu, torch.profiler, ...) already holds this "
                       "process");
    failed += std::string(failed.empty() ? "" : ", ") + KindName(kind) + " (" +
              cupti_.ResultString(r) + ")";
  }
  if (enabled_kinds_.empty())
    return MakeError("no activity kind could be enabled: " + failed + "; no GPU or driver?");
  if (!failed.empty()) Warn("could not enable " + failed + "; continuing without them");

  TraceWindow::Options wo;
  wo.default_kinds = c.window_kinds;
  wo.always_on = enabled_kinds_;
  wo.runtime_filter = runtime_filter_;
  wo.driver_filter = driver_filter_;
  TraceWindow::Hooks hooks;
  hooks.write_marker = [this](const pb::WindowMarker& marker) {
    PostToWriter([marker](RecordingWriter& w) { w.WriteWindowMarker(marker); });
  };
  hooks.flush = [this] {
    cupti_.ActivityFlushAll(0);
    PollDropped();
  };
  window_ = std::make_unique<TraceWindow>(io_, cupti_, std::move(wo), std::move(hooks));

  watch_ = std::make_unique<CallbackWatch>(c.reclaim_ms);
  ScheduleFlush();
  ScheduleStats();
  RunOnControl([this] { StartControl(); });
  // The API entry point opens the first file now; injection waits for the first buffer (or stop),
  // because device properties cannot be read while cuInit is still running.
  if (options_.entry_point != "injection") PostToWriter([](RecordingWriter&) {});
  return {};
}

void Monitor::Abandon() {
  // Start failed: undo what Init() did, without creating files.
  for (uint32_t kind : enabled_kinds_) cupti_.ActivityDisable(static_cast<CUpti_ActivityKind>(kind));
  if (!enabled_kinds_.empty()) cupti_.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  enabled_kinds_.clear();
  abandoned_ = true;
  stopped_ = true;
  StopThreads();
  Monitor* self = this;
  g_active.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);
}

void Monitor::StopThreads() {
  work_.reset();
  io_.stop();
  if (control_thread_.joinable()) control_thread_.join();
  {
    std::lock_guard<std::mutex> lk(queue_mu_);
    writer_exit_ = true;
  }
  queue_cv_.notify_one();
  if (writer_thread_.joinable()) writer_thread_.join();
}

void Monitor::Stop() {
  std::lock_guard<std::mutex> g(stop_mu_);
  if (InForkedChild()) return;  // the parent's threads and files do not exist here
  if (stopped_.exchange(true)) return;
  // On the control thread: an open window ends with note "stop" (its kinds disabled, its records
  // flushed, END written), the socket and the signal trigger go away, then the metrics endpoint.
  RunOnControl([this] { ShutdownControl(); });
  // The control thread must not flush concurrently with the final forced flush.
  work_.reset();
  io_.stop();
  if (control_thread_.joinable()) control_thread_.join();
  if (watch_ && watch_->in_gap()) {
    uint64_t now_cupti = 0;
    cupti_.GetTimestamp(&now_cupti);
    WriteGapMarker(false, watch_->gaps(), now_cupti, "recording stopped during the gap");
  }
  // Disable first, so that nothing new lands in buffers after the forced flush.
  for (uint32_t kind : enabled_kinds_) cupti_.ActivityDisable(static_cast<CUpti_ActivityKind>(kind));
  cupti_.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  PollDropped();
  PostToWriter([this](RecordingWriter& w) {
    FillMonitorStats(&w.stats());
    w.WriteCalibration(TakeCalibration());
    w.WriteStats(ClockNs(CLOCK_REALTIME));
    w.Close(ClockNs(CLOCK_REALTIME));
  });
  StopThreads();
  if (pool_ && pool_->in_use() > 0)
    Warn(std::to_string(pool_->in_use()) + " activity buffers were still held by CUPTI at stop");
  Monitor* self = this;
  g_active.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);
}

void Monitor::FlushAndWait() {
  if (stopped_.load() || InForkedChild()) return;
  cupti_.ActivityFlushAll(0);
  PollDropped();
  std::promise<void> done;
  std::future<void> written = done.get_future();
  const bool posted = PostToWriter([this, &done](RecordingWriter& w) {
    FillMonitorStats(&w.stats());
    w.WriteStats(ClockNs(CLOCK_REALTIME));
    // Publish now, not at the end of the writer's batch: GetStats and the metrics endpoint read
    // the published copy, and the caller reads them as soon as this returns.
    PublishSnapshot();
    done.set_value();
  });
  if (posted) written.wait();
}

bool Monitor::PostToWriter(std::function<void(RecordingWriter&)> task) {
  QueueItem item;
  item.task = std::move(task);
  {
    std::lock_guard<std::mutex> lk(queue_mu_);
    if (writer_exit_) return false;
    queue_.push_back(std::move(item));
  }
  queue_cv_.notify_one();
  return true;
}

void Monitor::OnBufferRequested(uint8_t** buffer, size_t* size) noexcept {
  // Hot path (application thread): one lock-free pool claim and one relaxed count (per buffer).
  callback_calls_.fetch_add(1, std::memory_order_relaxed);
  uint8_t* b = pool_->Acquire();
  if (!b) return;  // CUPTI drops records and counts them; the pool counts the event
  *buffer = b;
  *size = pool_->buffer_bytes();
}

void Monitor::OnBufferCompleted(uint8_t* buffer, size_t valid_size) noexcept {
  callback_calls_.fetch_add(1, std::memory_order_relaxed);
  if (!pool_->Owns(buffer)) {
    foreign_buffers_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  try {
    QueueItem item;
    item.buffer = buffer;
    item.valid = valid_size;
    {
      // Interning and queueing under one lock keeps every string ahead of the first buffer that
      // uses it, even when CUPTI completes buffers on two threads at once.
      std::lock_guard<std::mutex> lk(queue_mu_);
      if (writer_exit_) {
        pool_->Release(buffer);
        return;
      }
      InternStrings(buffer, valid_size, &item.strings);
      queue_.push_back(std::move(item));
    }
    queue_cv_.notify_one();
  } catch (...) {
    // Out of memory while copying names: lose this buffer rather than throw into CUPTI.
    lost_buffers_.fetch_add(1, std::memory_order_relaxed);
    pool_->Release(buffer);
  }
}

void Monitor::InternStrings(const uint8_t* buffer, size_t valid,
                            std::vector<pb::StringEntry>* out) {
  if (!kernel_name_offset_ && !marker_name_offset_) return;
  WalkRecords({buffer, valid}, sizes_, [&](uint32_t kind, std::span<const uint8_t> rec) {
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      if (kernel_name_offset_) Intern(Load64(rec.data() + kernel_name_offset_), out);
    } else if (kind == CUPTI_ACTIVITY_KIND_MARKER && marker_name_offset_) {
      Intern(Load64(rec.data() + marker_name_offset_), out);
      Intern(Load64(rec.data() + marker_domain_offset_), out);
    }
  });
}

void Monitor::Intern(uint64_t pointer, std::vector<pb::StringEntry>* out) {
  if (pointer == 0 || pointer == last_pointer_) return;
  if (string_ids_.contains(pointer)) {
    last_pointer_ = pointer;
    return;
  }
  // The string belongs to CUPTI and is alive while the completion callback runs: copy it now.
  const char* text = reinterpret_cast<const char*>(pointer);
  const uint32_t id = next_string_id_++;
  string_ids_.emplace(pointer, id);
  last_pointer_ = pointer;
  pb::StringEntry& e = out->emplace_back();
  e.set_id(id);
  e.set_pointer(pointer);
  e.set_text(std::string(text, strnlen(text, kMaxStringBytes)));
  strings_.fetch_add(1, std::memory_order_relaxed);
}

void Monitor::WriterLoop() {
  std::vector<QueueItem> batch;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(queue_mu_);
      queue_cv_.wait(lk, [&] { return !queue_.empty() || writer_exit_; });
      if (queue_.empty()) break;  // writer_exit_ and drained
      batch.swap(queue_);
    }
    if (!writer_ && !abandoned_) OpenWriter();
    for (QueueItem& item : batch) {
      if (item.buffer) {
        if (writer_) {
          if (!item.strings.empty()) writer_->AddStrings(item.strings);
          if (item.valid > 0) writer_->WriteRawBuffer({item.buffer, item.valid}, 0, 0);
        }
        // Off the application's path: with zero_buffers, CUPTI skips zeroing on the launch thread.
        if (track_busy_ && item.valid > 0) AccumulateBusy(item.buffer, item.valid);
        if (options_.config.zero_buffers) std::memset(item.buffer, 0, pool_->buffer_bytes());
        pool_->Release(item.buffer);
      } else if (writer_) {
        // Annotation labels arrive as a strings-only item, ahead of any record using them.
        if (!item.strings.empty()) writer_->AddStrings(item.strings);
        if (item.task) item.task(*writer_);
      }
    }
    batch.clear();
    PublishSnapshot();
  }
}

void Monitor::PublishSnapshot() {
  if (writer_) {
    std::lock_guard<std::mutex> lk(stats_mu_);
    stats_snapshot_ = writer_->stats();
    current_file_ = writer_->current_file();
    last_write_error_ = writer_->last_error();
  }
  if (track_busy_) PublishBusy();
}

pb::CalibrationSample Monitor::TakeCalibrationSample() {
  pb::CalibrationSample s;
  uint64_t cupti_ns = 0;
  const int64_t before = ClockNs(CLOCK_REALTIME);
  cupti_.GetTimestamp(&cupti_ns);
  s.set_cupti_ns(cupti_ns);
  // The realtime reading brackets the CUPTI one: use the midpoint.
  s.set_realtime_ns(before + (ClockNs(CLOCK_REALTIME) - before) / 2);
  s.set_monotonic_ns(ClockNs(CLOCK_MONOTONIC));
  return s;
}

pb::Calibration Monitor::TakeCalibration() {
  pb::Calibration c;
  *c.add_samples() = TakeCalibrationSample();
  return c;
}

void Monitor::NoteCalibrationWritten(const pb::CalibrationSample& s) {
  cal_prev_ = cal_last_;
  cal_last_ = s;
  cal_written_ = std::min(cal_written_ + 1, 2);
}

void Monitor::CheckClockDomain() {
  // Another CUPTI client's timestamp callback (Kineto registers one at each profiler session; on
  // x86-64 it returns TSC ticks) moves CUPTI's records and cuptiGetTimestamp() to its clock for the
  // rest of the process. The decoder maps each clock domain with its own samples
  // (decoder/.../clock_map.h), so a domain needs samples soon after it begins. One CUPTI and two
  // CLOCK_REALTIME readings per tick: the sample is written when CUPTI time is more than 1 ms away
  // from where the last written samples predict it (their rate when the last two lie in one
  // domain, else one CUPTI unit per ns). A TSC domain thus gets two samples in two ticks, then
  // only the periodic ones.
  if (cal_written_ == 0) return;
  const pb::CalibrationSample now = TakeCalibrationSample();
  const auto& a = cal_last_;
  double rate = 1.0;
  if (cal_written_ == 2) {
    const double dc = static_cast<double>(a.cupti_ns()) - static_cast<double>(cal_prev_.cupti_ns());
    const double dw = static_cast<double>(a.realtime_ns() - cal_prev_.realtime_ns());
    if (dw >= 1e8 && dc > 0 && dc / dw >= 1.0 / 128 && dc / dw <= 128) rate = dc / dw;
  }
  const double predicted = static_cast<double>(a.cupti_ns()) +
                           rate * static_cast<double>(now.realtime_ns() - a.realtime_ns());
  if (std::fabs(static_cast<double>(now.cupti_ns()) - predicted) <= 1e6) return;
  NoteCalibrationWritten(now);
  pb::Calibration cal;
  *cal.add_samples() = now;
  PostToWriter([cal = std::move(cal)](RecordingWriter& w) { w.WriteCalibration(cal); });
}

void Monitor::OpenWriter() {
  const MonitorConfig& c = options_.config;
  const DriverInfo driver = options_.driver_probe ? options_.driver_probe()
                                                 : ProbeCudaDriver(options_.entry_point == "api");
  pb::RecordingHeader h;
  h.set_recording_id(recording_id_);
  h.set_host(HostName());
  h.set_pid(static_cast<uint32_t>(getpid()));
  {
    // The launcher's rank environment (torchrun, else Slurm): cupmon-decode merges ranks by it.
    auto env = [](const char* name, const char* fallback) -> const char* {
      const char* v = std::getenv(name);
      return v && *v ? v : fallback ? std::getenv(fallback) : nullptr;
    };
    auto number = [](const char* v, auto set) {
      if (!v || !*v) return;
      char* end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (*end == '\0' && n >= 0 && n <= INT32_MAX) set(static_cast<int32_t>(n));
    };
    number(env("RANK", "SLURM_PROCID"), [&](int32_t n) { h.set_rank(n); });
    number(env("LOCAL_RANK", "SLURM_LOCALID"), [&](int32_t n) { h.set_local_rank(n); });
    number(env("WORLD_SIZE", "SLURM_NTASKS"), [&](int32_t n) { h.set_world_size(n); });
    const char* run_id = std::getenv("TORCHELASTIC_RUN_ID");  // torchrun's default is "none"
    const char* job = run_id && *run_id && std::strcmp(run_id, "none") != 0 ? run_id
                                                                             : std::getenv("SLURM_JOB_ID");
    if (job && *job) h.set_job_id(job);
  }
  const std::string cmdline = ReadSmallFile("/proc/self/cmdline");
  for (size_t pos = 0; pos < cmdline.size();) {
    const size_t end = cmdline.find('\0', pos);
    h.add_command_line(cmdline.substr(pos, end == std::string::npos ? end : end - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  h.set_process_start_unix_ns(ProcessStartUnixNs());
  h.set_cupti_api_version(cupti_version_);
  h.set_cuda_driver_version(driver.driver_version);
  h.set_cuda_runtime_version(driver.runtime_version);
  for (const auto& d : driver.devices) *h.add_devices() = d;
  for (uint32_t k : enabled_kinds_) h.add_enabled_kinds(k);
  for (uint32_t kind = 0; kind < RecordSizeTable::kMaxKind; ++kind) {
    if (!sizes_.Size(kind)) continue;
    pb::RecordSize* rs = h.add_record_sizes();
    rs->set_kind(kind);
    rs->set_size(sizes_.Size(kind));
  }
  pb::Config* pc = h.mutable_config();
  pc->set_output_dir(c.output_dir);
  for (uint32_t k : c.kinds) pc->add_always_on_kinds(k);
  pc->set_buffer_bytes(c.buffer_bytes);
  pc->set_pool_bytes(c.pool_bytes);
  pc->set_flush_period_ms(c.flush_ms);
  pc->set_file_bytes(c.file_bytes);
  pc->set_retention_bytes(c.retention_bytes);
  pc->set_retention_files(c.retention_files);
  pc->set_zstd_level(c.zstd_level);
  pc->set_encoding(static_cast<uint32_t>(c.encoding));
  pc->set_entry_point(options_.entry_point);
  h.set_cupmon_version(CUPMON_VERSION_STRING);
  h.set_synthetic(options_.synthetic);

  RecordingWriterOptions wo;
  wo.files.directory = c.output_dir;
  char stamp[32] = {};
  const time_t now = time(nullptr);
  tm utc{};
  gmtime_r(&now, &utc);
  strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &utc);
  wo.files.prefix = std::string("cupmon-") + stamp + "-" + h.host() + "-" + std::to_string(h.pid());
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    file_prefix_ = wo.files.prefix;
  }
  wo.files.file_bytes = c.file_bytes;
  wo.files.retention_bytes = c.retention_bytes;
  wo.files.retention_files = c.retention_files;
  wo.encoding = c.encoding;
  wo.zstd_level = c.zstd_level;
  FileSystem& fs = options_.fs ? *options_.fs : PosixFileSystem();
  writer_ = std::make_unique<RecordingWriter>(std::move(wo), std::move(h), fs);
  if (auto r = writer_->Open(); !r)
    Warn("cannot write into " + c.output_dir + ": " + r.error().message +
         "; the application continues, and lost data is counted");
  writer_->WriteCalibration(start_calibration_);
}

void Monitor::FillMonitorStats(pb::Stats* s) {
  s->set_dropped_records(dropped_.load(std::memory_order_relaxed));
  s->set_pool_exhausted(pool_->exhausted());
  s->set_buffers_in_flight(pool_->in_use());
  s->set_buffers_free(pool_->free_count());
  if (window_) s->set_windows_opened(window_->windows_opened());
  s->set_cupti_gaps(cupti_gaps_.load(std::memory_order_relaxed));
  s->set_foreign_buffers(foreign_buffers_.load(std::memory_order_relaxed));
  s->set_stranded_buffers(stranded_buffers_.load(std::memory_order_relaxed));
  if (auto* mux = dynamic_cast<CuptiMux*>(&cupti_)) {
    const CuptiMux::Counters mc = mux->counters();
    s->set_shared_client_records(mc.client_records);
    s->set_shared_client_undelivered(mc.undelivered_records);
  }
}

void Monitor::WriteGapMarker(bool begin, uint32_t gap, uint64_t cupti_ns, const std::string& note) {
  pb::WindowMarker m;
  m.set_window_id(gap);
  m.set_edge(begin ? pb::WindowMarker::GAP_BEGIN : pb::WindowMarker::GAP_END);
  m.set_cupti_ns(cupti_ns);
  m.set_realtime_ns(ClockNs(CLOCK_REALTIME));
  m.set_note(note);
  PostToWriter([m](RecordingWriter& w) { w.WriteWindowMarker(m); });
}

void Monitor::CheckCallbacks() {
  // Control thread, after the periodic non-forced flush (callback_watch.h explains the signal).
  if (!watch_ || !pool_) return;
  uint64_t now_cupti = 0;
  cupti_.GetTimestamp(&now_cupti);
  const uint64_t calls = callback_calls_.load(std::memory_order_relaxed);
  const uint64_t in_flight = pool_->in_use();
  // Did CUPTI write into any of our buffers since the last tick? (About 12 KiB read per buffer.)
  bool grew = false;
  fill_.resize(pool_->count(), 0);
  for (size_t slot = 0; slot < pool_->count(); ++slot) {
    const uint8_t* b = pool_->BufferIfInUse(slot);
    const size_t filled = b ? FilledPrefixBytes(b, pool_->buffer_bytes()) : 0;
    grew = grew || filled > fill_[slot];
    fill_[slot] = filled;
  }
  const int64_t now_ms = ClockNs(CLOCK_MONOTONIC) / 1'000'000;
  const uint64_t since = last_active_cupti_ns_ ? last_active_cupti_ns_ : now_cupti;
  const CallbackWatch::Action action = watch_->Tick(calls, in_flight, grew, now_ms);
  if (!watch_->in_gap()) last_active_cupti_ns_ = now_cupti;
  const uint32_t gap = watch_->gaps();
  switch (action) {
    case CallbackWatch::Action::kNone:
      return;
    case CallbackWatch::Action::kGapBegins: {
      cupti_gaps_.store(gap, std::memory_order_relaxed);
      // The gap began after the last tick that saw cupmon's callbacks run.
      WriteGapMarker(true, gap, since,
                     "for " + std::to_string(options_.config.flush_ms) +
                         " ms no cupmon buffer came back or grew while " +
                         std::to_string(in_flight) +
                         " were inside CUPTI: another CUPTI client probably registered its own "
                         "activity callbacks");
      if (!gap_warned_) {
        gap_warned_ = true;
        const uint32_t reclaim = options_.config.reclaim_ms;
        Warn("another CUPTI client (torch.profiler, ...) seems to have taken CUPTI's activity "
             "callbacks: cupmon records nothing until " +
             (reclaim ? "it takes them back in " + std::to_string(reclaim) + " ms"
                      : std::string("stop (CUPMON_RECLAIM_MS=0)")) +
             "; the gap is marked in the recording. To share CUPTI instead, run with "
             "cupmon-run --preload (docs/COEXISTENCE.md)");
      }
      return;
    }
    case CallbackWatch::Action::kGapEnds:
      WriteGapMarker(false, gap, now_cupti, "cupmon's buffer callbacks ran again");
      return;
    case CallbackWatch::Action::kReclaim: {
      const int64_t held_ms = now_ms - watch_->gap_start_ms();
      std::string note;
      CUptiResult r;
      if (auto* mux = dynamic_cast<CuptiMux*>(&cupti_)) {
        r = mux->Reassert();
      } else {
        r = cupti_.ActivityRegisterCallbacks(RequestTrampoline, CompleteTrampoline);
        // Clients switch their kinds off when their session ends; cupmon's go on again.
        for (uint32_t kind : enabled_kinds_)
          cupti_.ActivityEnable(static_cast<CUpti_ActivityKind>(kind));
      }
      watch_->Reclaimed(pool_->in_use());
      stranded_buffers_.store(watch_->stranded(), std::memory_order_relaxed);
      note = r == CUPTI_SUCCESS
                 ? "cupmon registered its callbacks and kinds again " + std::to_string(held_ms) +
                       " ms after the gap was noticed; " + std::to_string(watch_->stranded()) +
                       " cupmon buffers stayed with the other client"
                 : std::string("taking CUPTI back failed: ") + cupti_.ResultString(r);
      WriteGapMarker(false, gap, now_cupti, note);
      return;
    }
  }
}

void Monitor::PollDropped() {
  size_t dropped = 0;
  if (cupti_.ActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS)
    dropped_.fetch_add(dropped, std::memory_order_relaxed);
}

void Monitor::ScheduleFlush() {
  const uint32_t ms = options_.config.flush_ms;
  if (ms == 0) return;
  flush_timer_.expires_after(std::chrono::milliseconds(ms));
  flush_timer_.async_wait([this](const boost::system::error_code& ec) noexcept {
    if (ec || stopped_.load()) return;
    // Before the flush, so that the sample precedes the records it completes in the stream.
    try {
      CheckClockDomain();
    } catch (...) {
    }
    // Non-forced: only buffers whose records are complete come back.
    cupti_.ActivityFlushAll(0);
    PollDropped();
    try {
      CheckCallbacks();
      ScheduleFlush();
    } catch (...) {
    }
  });
}

void Monitor::ScheduleStats() {
  const uint32_t ms = options_.config.stats_ms;
  if (ms == 0) return;
  stats_timer_.expires_after(std::chrono::milliseconds(ms));
  stats_timer_.async_wait([this](const boost::system::error_code& ec) noexcept {
    if (ec || stopped_.load()) return;
    try {
      PollDropped();
      pb::Calibration cal = TakeCalibration();
      NoteCalibrationWritten(cal.samples(0));
      PostToWriter([this, cal = std::move(cal)](RecordingWriter& w) {
        FillMonitorStats(&w.stats());
        w.WriteCalibration(cal);
        w.WriteStats(ClockNs(CLOCK_REALTIME));
      });
      ScheduleStats();
    } catch (...) {
    }
  });
}

MonitorStats Monitor::GetStats() const {
  MonitorStats out;
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    const pb::Stats& s = stats_snapshot_;
    out.buffers_completed = s.buffers_completed();
    out.records = s.records();
    out.raw_bytes = s.raw_bytes();
    out.compressed_bytes = s.compressed_bytes();
    out.zero_timestamp_records = s.zero_timestamp_records();
    out.write_errors = s.write_errors();
    out.chunks_lost = s.chunks_lost();
    out.current_file = current_file_;
    out.last_write_error = last_write_error_;
  }
  out.dropped_records = dropped_.load(std::memory_order_relaxed);
  out.lost_buffers = lost_buffers_.load(std::memory_order_relaxed);
  if (pool_) {
    out.pool_exhausted = pool_->exhausted();
    out.buffers_free = pool_->free_count();
    out.buffers_in_flight = pool_->in_use();
  }
  out.strings = strings_.load(std::memory_order_relaxed);
  out.cupti_gaps = cupti_gaps_.load(std::memory_order_relaxed);
  out.foreign_buffers = foreign_buffers_.load(std::memory_order_relaxed);
  out.stranded_buffers = stranded_buffers_.load(std::memory_order_relaxed);
  if (window_) {
    out.windows_opened = window_->windows_opened();
    out.window_open = window_->is_open();
  }
  return out;
}


// ---- Control plane, trace windows, annotations, metrics ----

void Monitor::StartControl() {
  const MonitorConfig& c = options_.config;
  if (c.control) {
    control::ControlOptions co;
    co.control_dir = c.control_dir;
    co.registry_dir = c.registry_dir;
    co.signal_number = c.signal_number;
    co.default_window_ms = c.window_ms;
    control_ = std::make_unique<control::ControlPlane>(io_, std::move(co), *this);
    if (auto r = control_->Start(); !r) {
      Warn("control plane off: " + r.error().message +
           "; monitoring continues without the control socket and signal trigger");
      control_.reset();
    } else {
      control_socket_ = control_->socket_path();
      if (c.signal_number != 0 && !control_->signal_trigger_active())
        Warn("signal " + std::to_string(c.signal_number) +
             " already has a handler of the application; it does not open windows (use "
             "cupmonctl, or CUPMON_SIGNAL to pick another signal)");
    }
  }
  if (!c.metrics_address.empty()) {
    metrics::MetricsOptions base;
    base.allow_non_loopback = c.metrics_allow_remote;
    auto mo = metrics::ParseListenAddress(c.metrics_address, base);
    if (!mo) {
      Warn("CUPMON_METRICS_ADDRESS='" + c.metrics_address + "': " + mo.error().message +
           "; no metrics endpoint");
      return;
    }
    metrics_ = std::make_unique<metrics::MetricsServer>(io_, std::move(*mo), *this);
    if (auto r = metrics_->Start(); !r) {
      Warn("metrics endpoint off: " + r.error().message + "; monitoring continues");
      metrics_.reset();
    } else {
      metrics_port_ = metrics_->port();
    }
  }
}

void Monitor::ShutdownControl() noexcept {
  try {
    if (window_) window_->Shutdown();
  } catch (...) {
  }
  try {
    if (control_) control_->Stop();
    if (metrics_) metrics_->Stop();
  } catch (...) {
  }
}

std::string Monitor::control_socket_path() const { return control_socket_; }

Expected<uint32_t> Monitor::RequestWindow(uint32_t duration_ms, std::vector<uint32_t> kinds,
                                          pb::TriggerSource source) {
  if (stopped_.load() || InForkedChild()) return MakeError("cupmon is not running");
  Expected<uint32_t> result = MakeError("the control thread has stopped");
  TraceWindow::Request r;
  r.duration_ms = duration_ms ? duration_ms : options_.config.window_ms;
  r.kinds = std::move(kinds);
  r.source = source;
  RunOnControl([&] { result = window_->Open(r); });
  return result;
}

Expected<void> Monitor::RequestCloseWindow() {
  if (stopped_.load() || InForkedChild()) return MakeError("cupmon is not running");
  Expected<void> result = MakeError("the control thread has stopped");
  RunOnControl([&] { result = window_->Close("closed"); });
  return result;
}

Expected<uint64_t> Monitor::PushAnnotation(std::string_view label) {
  if (stopped_.load() || InForkedChild()) return MakeError("cupmon is not running");
  if (label.size() > kMaxLabelBytes)
    return MakeError("annotation label of " + std::to_string(label.size()) +
                     " bytes is longer than " + std::to_string(kMaxLabelBytes));
  uint64_t id = 0;
  {
    // queue_mu_ orders the label's string entry ahead of every buffer completed after this push,
    // so the decoder knows the label before it meets an external correlation record using it.
    std::lock_guard<std::mutex> lk(queue_mu_);
    auto it = labels_.find(std::string(label));
    if (it != labels_.end()) {
      id = it->second;
    } else {
      if (labels_.size() >= kMaxLabels)
        return MakeError("more than " + std::to_string(kMaxLabels) +
                         " distinct annotation labels; reuse labels (e.g. \"step\" instead of "
                         "\"step 1234\")");
      if (writer_exit_) return MakeError("cupmon is stopping");
      auto [node, inserted] = labels_.emplace(std::string(label), 0);
      // The id is the address of our copy of the label: unique, never reused (the copy lives until
      // exit), and the decoder's convention is "label = string entry whose pointer is the id".
      id = reinterpret_cast<uint64_t>(node->first.c_str());
      node->second = id;
      QueueItem item;
      pb::StringEntry& e = item.strings.emplace_back();
      e.set_id(next_string_id_++);
      e.set_pointer(id);
      e.set_text(node->first);
      queue_.push_back(std::move(item));
      strings_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  queue_cv_.notify_one();
  // Outside our lock: CUPTI calls must never be made while holding a lock its callbacks take.
  const CUptiResult r =
      cupti_.ActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, id);
  if (r != CUPTI_SUCCESS)
    return MakeError(std::string("cuptiActivityPushExternalCorrelationId failed: ") +
                     cupti_.ResultString(r));
  return id;
}

Expected<void> Monitor::PopAnnotation() {
  if (stopped_.load() || InForkedChild()) return MakeError("cupmon is not running");
  uint64_t last = 0;
  const CUptiResult r =
      cupti_.ActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, &last);
  if (r == CUPTI_ERROR_QUEUE_EMPTY)
    return MakeError("no annotation is pushed on this thread (pop without push)");
  if (r != CUPTI_SUCCESS)
    return MakeError(std::string("cuptiActivityPopExternalCorrelationId failed: ") +
                     cupti_.ResultString(r));
  return {};
}

pb::StatusReply Monitor::Status() {
  pb::StatusReply s;
  s.set_version(CUPMON_VERSION_STRING);
  s.set_pid(static_cast<uint32_t>(getpid()));
  for (uint32_t k : enabled_kinds_) s.add_enabled_kinds(UpperKindName(k));
  if (window_ && window_->is_open()) {
    for (uint32_t k : window_->kinds())
      if (std::find(enabled_kinds_.begin(), enabled_kinds_.end(), k) == enabled_kinds_.end())
        s.add_enabled_kinds(UpperKindName(k));
  }
  s.set_window_open(window_ && window_->is_open());
  s.set_window_id(window_ && window_->is_open() ? window_->id() : 0);
  const MonitorStats st = GetStats();
  s.set_buffers_free(st.buffers_free);
  s.set_buffers_in_flight(st.buffers_in_flight);
  s.set_bytes_written(st.compressed_bytes);
  s.set_dropped_records(st.dropped_records);
  s.set_current_file(st.current_file);
  s.set_output_dir(options_.config.output_dir);
  const std::string cmdline = ReadSmallFile("/proc/self/cmdline");
  for (size_t pos = 0; pos < cmdline.size();) {
    const size_t end = cmdline.find('\0', pos);
    s.add_command_line(cmdline.substr(pos, end == std::string::npos ? end : end - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    *s.mutable_stats() = stats_snapshot_;
  }
  FillMonitorStats(s.mutable_stats());
  return s;
}

Expected<uint32_t> Monitor::OpenWindow(const control::WindowRequest& request) {
  // Received on the control thread: the latency probe's first timestamp.
  const int64_t received = ClockNs(CLOCK_REALTIME);
  TraceWindow::Request r;
  r.duration_ms = request.duration_ms;
  r.source = request.source;
  r.received_realtime_ns = received;
  // Only the window kinds: ParseKinds alone would also take KERNEL (which serialises every
  // kernel) or a bare number from a caller that skipped the control plane's validation.
  auto names = control::NormalizeWindowKinds(request.kinds);
  if (!names) return std::unexpected(names.error());
  for (const std::string& name : *names) {
    std::string lower = name;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    std::vector<std::string> unknown;
    const std::vector<uint32_t> k = ParseKinds(lower, &unknown);
    if (k.empty()) return MakeError("unknown window kind '" + name + "'");
    r.kinds.push_back(k.front());
  }
  return window_->Open(r);
}

Expected<void> Monitor::CloseWindow() { return window_->Close("closed"); }

Expected<void> Monitor::Flush() {
  if (stopped_.load()) return MakeError("the monitor is stopping");
  // Non-forced and without waiting for the writer: this runs on the control thread.
  cupti_.ActivityFlushAll(0);
  PollDropped();
  PostToWriter([this](RecordingWriter& w) {
    FillMonitorStats(&w.stats());
    w.WriteStats(ClockNs(CLOCK_REALTIME));
  });
  return {};
}

Expected<void> Monitor::Rotate() {
  if (stopped_.load()) return MakeError("the monitor is stopping");
  if (!PostToWriter([](RecordingWriter& w) { w.Rotate(); }))
    return MakeError("the writer has stopped");
  return {};
}

metrics::MetricsSnapshot Monitor::Snapshot() {
  metrics::MetricsSnapshot m;
  m.version = CUPMON_VERSION_STRING;
  m.output_dir = options_.config.output_dir;
  std::string prefix;
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    const pb::Stats& s = stats_snapshot_;
    m.kernel_records = s.kernel_records();
    m.memcpy_records = s.memcpy_records();
    m.memset_records = s.memset_records();
    m.raw_bytes = s.raw_bytes();
    m.compressed_bytes = s.compressed_bytes();
    m.write_errors = s.write_errors();
    m.last_write_failed = !last_write_error_.empty();
    m.device_busy = device_busy_snapshot_;
    m.stream_busy = stream_busy_snapshot_;
    prefix = file_prefix_;
  }
  m.dropped_records = dropped_.load(std::memory_order_relaxed);
  m.pool_exhausted = pool_ ? pool_->exhausted() : 0;
  m.windows_opened = window_ ? window_->windows_opened() : 0;
  // Files of this recording on disk now (retention deletes old ones): one directory listing.
  if (!prefix.empty()) {
    if (DIR* d = opendir(options_.config.output_dir.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string_view name(e->d_name);
        if (!name.starts_with(prefix)) continue;
        struct stat st{};
        const std::string path = options_.config.output_dir + "/" + e->d_name;
        if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
          ++m.files;
          m.disk_bytes += static_cast<uint64_t>(st.st_size);
        }
      }
      closedir(d);
    }
  }
  return m;
}

void Monitor::AccumulateBusy(const uint8_t* buffer, size_t valid) {
  // Writer thread: the union of intervals, counted in arrival order. Exact when a device's (or a
  // stream's) records arrive in start order, which CUPTI's per-stream completion gives; an interval
  // that arrives late and lies entirely before what is already covered is not counted.
  auto add = [](BusySpan& span, uint64_t start, uint64_t end) {
    if (end <= span.covered_until) return;
    span.busy_ns += end - std::max(start, span.covered_until);
    span.covered_until = end;
  };
  WalkRecords({buffer, valid}, sizes_, [&](uint32_t kind, std::span<const uint8_t> rec) {
    const BusyOffsets* o = nullptr;
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL)
      o = &kernel_offsets_;
    else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY)
      o = &memcpy_offsets_;
    else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY2)  // peer copies: busy on the device that runs them
      o = &memcpy2_offsets_;
    else if (kind == CUPTI_ACTIVITY_KIND_MEMSET)
      o = &memset_offsets_;
    if (!o || o->end == 0) return;
    const uint64_t start = Load64(rec.data() + o->start);
    const uint64_t end = Load64(rec.data() + o->end);
    if (start == 0 || end <= start) return;  // unknown times are never shown as durations
    const uint32_t device = Load32(rec.data() + o->device);
    const uint32_t stream = Load32(rec.data() + o->stream);
    add(device_busy_[device], start, end);
    add(stream_busy_[{device, stream}], start, end);
  });
}

void Monitor::PublishBusy() {
  std::vector<metrics::DeviceBusy> devices;
  std::vector<metrics::StreamBusy> streams;
  for (const auto& [device, span] : device_busy_) devices.push_back({device, span.busy_ns});
  for (const auto& [key, span] : stream_busy_) streams.push_back({key.first, key.second, span.busy_ns});
  std::lock_guard<std::mutex> lk(stats_mu_);
  device_busy_snapshot_ = std::move(devices);
  stream_busy_snapshot_ = std::move(streams);
}

}  // namespace cupmon

// Monitor: CUPTI callbacks -> buffer queue -> writer thread -> RecordingWriter, plus the control
// thread's periodic flush, dropped-record polling, stats and calibration.
#include "cupmon/monitor/monitor.h"

#include <cupti.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <future>
#include <random>

#include <boost/asio/post.hpp>

#include "cupmon/format/check.h"
#include "cupmon/format/recording_writer.h"

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

  std::random_device rd;
  recording_id_ = (uint64_t{rd()} << 32) ^ rd() ^ static_cast<uint64_t>(ClockNs(CLOCK_REALTIME));
  *start_calibration_.add_samples() = TakeCalibrationSample();

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

  ScheduleFlush();
  ScheduleStats();
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
  // The control thread must not flush concurrently with the final forced flush.
  work_.reset();
  io_.stop();
  if (control_thread_.joinable()) control_thread_.join();
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

void Monitor::Flush() {
  if (stopped_.load() || InForkedChild()) return;
  cupti_.ActivityFlushAll(0);
  PollDropped();
  std::promise<void> done;
  std::future<void> written = done.get_future();
  const bool posted = PostToWriter([this, &done](RecordingWriter& w) {
    FillMonitorStats(&w.stats());
    w.WriteStats(ClockNs(CLOCK_REALTIME));
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
  // Hot path (application thread): one lock-free pool claim, nothing else.
  uint8_t* b = pool_->Acquire();
  if (!b) return;  // CUPTI drops records and counts them; the pool counts the event
  *buffer = b;
  *size = pool_->buffer_bytes();
}

void Monitor::OnBufferCompleted(uint8_t* buffer, size_t valid_size) noexcept {
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
        if (options_.config.zero_buffers) std::memset(item.buffer, 0, pool_->buffer_bytes());
        pool_->Release(item.buffer);
      } else if (item.task && writer_) {
        item.task(*writer_);
      }
    }
    batch.clear();
    if (writer_) {
      std::lock_guard<std::mutex> lk(stats_mu_);
      stats_snapshot_ = writer_->stats();
      current_file_ = writer_->current_file();
      last_write_error_ = writer_->last_error();
    }
  }
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

void Monitor::OpenWriter() {
  const MonitorConfig& c = options_.config;
  const DriverInfo driver = options_.driver_probe ? options_.driver_probe() : ProbeCudaDriver();
  pb::RecordingHeader h;
  h.set_recording_id(recording_id_);
  h.set_host(HostName());
  h.set_pid(static_cast<uint32_t>(getpid()));
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
    // Non-forced: only buffers whose records are complete come back.
    cupti_.ActivityFlushAll(0);
    PollDropped();
    try {
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
  return out;
}

}  // namespace cupmon

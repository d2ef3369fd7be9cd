// RecordingPipeline: the writer thread's loop, the recording header, and the published snapshot.
#include "recording_pipeline.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cupmon/format/recording_writer.h"

#ifndef CUPMON_VERSION_STRING
#define CUPMON_VERSION_STRING "0.0.0"
#endif

namespace cupmon {
namespace {

void Warn(const std::string& line) { std::fprintf(stderr, "cupmon: %s\n", line.c_str()); }

std::string HostName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  return host;
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

}  // namespace

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

std::vector<std::string> ProcessCommandLine() {
  std::vector<std::string> out;
  const std::string cmdline = ReadSmallFile("/proc/self/cmdline");
  for (size_t pos = 0; pos < cmdline.size();) {
    const size_t end = cmdline.find('\0', pos);
    out.push_back(cmdline.substr(pos, end == std::string::npos ? end : end - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

RecordingPipeline::RecordingPipeline(const SessionFacts& facts, BufferPool& pool,
                                     StringTable& strings, WriterQueue& queue,
                                     MonitorCounters& counters, Options options)
    : facts_(facts),
      pool_(pool),
      strings_(strings),
      queue_(queue),
      counters_(counters),
      options_(std::move(options)),
      busy_(facts),
      sums_(options_.auto_window && SumsSteps(facts.config)) {
  // Served as 0 from the first scrape on, before the writer's first publication.
  MutexLock lk(snapshot_mu_);
  snapshot_.steps.on = sums_;
}

RecordingPipeline::~RecordingPipeline() = default;

WriterItem RecordingPipeline::FinalTask(std::function<void(RecordingWriter&)> task) {
  WriterItem item;
  item.task = std::move(task);
  item.needs_file = true;
  return item;
}

void RecordingPipeline::Run() noexcept {
  thread_.BindToCurrentThread();
  std::vector<WriterItem> batch;
  for (;;) {
    try {
      if (!queue_.PopAll(&batch)) break;
    } catch (...) {
      counters_.writer_faults.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    for (WriterItem& item : batch) {
      try {
        MaybeFault(options_.faults, "writer.item");
        Process(item);
      } catch (...) {
        // The item is lost, the thread and the host process are not.
        counters_.writer_faults.fetch_add(1, std::memory_order_relaxed);
        if (item.buffer) counters_.lost_buffers.fetch_add(1, std::memory_order_relaxed);
        if (item.flush_mark) TakeFlushMark();
      }
      if (item.buffer) ReleaseBuffer(item.buffer);
      if (item.after) {
        try {
          item.after();
        } catch (...) {
          counters_.writer_faults.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
    batch.clear();
    try {
      Publish();
    } catch (...) {
      counters_.writer_faults.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // Buffers that were queued when the loop ended (a fault in PopAll's swap) go back to the pool.
  for (WriterItem& item : batch)
    if (item.buffer) ReleaseBuffer(item.buffer);
  {
    MutexLock lk(finished_mu_);
    finished_.store(true, std::memory_order_release);
  }
  finished_cv_.notify_all();
}

void RecordingPipeline::ReleaseBuffer(uint8_t* buffer) {
  pool_.Release(buffer);
  counters_.buffers_at_writer.fetch_sub(1, std::memory_order_relaxed);
}

void RecordingPipeline::Process(WriterItem& item) {
  CUPMON_DCHECK_THREAD(thread_);
  if (item.flush_mark) TakeFlushMark();  // first, even when discarding
  if (discard_.load(std::memory_order_acquire)) return;
  if (item.flush_mark) {
    if (steps_ && watching_) SettleSteps();
    return;
  }
  if (!writer_ && (item.buffer || item.needs_file)) OpenWriter();
  if (!writer_) {
    if (item.buffer) {
      // No file could be set up (OpenWriter threw): the buffer's records are lost, counted.
      counters_.lost_buffers.fetch_add(1, std::memory_order_relaxed);
    } else if (item.task && early_tasks_.size() < WriterQueue::kMaxTasks) {
      early_tasks_.push_back(std::move(item.task));  // runs once the first file is open
    }
    return;
  }
  if (item.buffer) {
    // Strings interned up to the completion of this buffer, ahead of its records.
    strings_.TakeNew(&new_strings_);
    if (!new_strings_.empty()) {
      writer_->AddStrings(new_strings_);
      NoteStepStrings();
      new_strings_.clear();
    }
    if (item.valid > 0) {
      writer_->WriteRawBuffer({item.buffer, item.valid}, 0, 0);
      NoteDeliveryLag(item.completed_steady_ns);
      if (facts_.track_busy) busy_.Add(item.buffer, item.valid);
      WatchSteps(item.buffer, item.valid);
    }
    // Off the application's path: with zero_buffers, CUPTI skips zeroing on the launch thread.
    if (facts_.config.zero_buffers) std::memset(item.buffer, 0, pool_.buffer_bytes());
    return;
  }
  strings_.TakeNew(&new_strings_);  // annotation labels, ahead of any record using them
  if (!new_strings_.empty()) {
    writer_->AddStrings(new_strings_);
    NoteStepStrings();
    new_strings_.clear();
  }
  if (item.task) item.task(*writer_);
}

void RecordingPipeline::NoteDeliveryLag(int64_t completed_steady_ns) {
  const uint64_t newest = writer_->last_buffer_newest_gpu_end_ns();
  const pb::Calibration& cal = writer_->recent_calibration();
  if (completed_steady_ns == 0 || newest == 0 || cal.samples_size() == 0) return;
  // A record that ended before the recording started is in another clock's time (a test's made-up
  // timestamps) or was held by CUPTI from before: not a measure of CUPTI's worker now.
  const pb::Calibration& start = facts_.start_calibration;
  if (start.samples_size() == 0 || newest < start.samples(0).cupti_ns()) return;
  // The record's end on the steady clock, through the latest calibration sample (the CUPTI clock's
  // drift since that sample, at most a stats period old, is far below the lags judged).
  const pb::CalibrationSample& s = cal.samples(cal.samples_size() - 1);
  const int64_t ended_steady =
      s.monotonic_ns() + (static_cast<int64_t>(newest) - static_cast<int64_t>(s.cupti_ns()));
  const uint64_t lag = completed_steady_ns > ended_steady
                           ? static_cast<uint64_t>(completed_steady_ns - ended_steady)
                           : 0;
  delivery_lag_ns_ = lag;
  std::atomic<uint64_t>& peak_ns = counters_.delivery_lag_peak_ns;
  uint64_t peak = peak_ns.load(std::memory_order_relaxed);
  if (lag > peak)
    counters_.delivery_lag_peak_ended_cupti_ns.store(newest, std::memory_order_relaxed);
  while (lag > peak && !peak_ns.compare_exchange_weak(peak, lag, std::memory_order_relaxed)) {
  }
}

void RecordingPipeline::TakeFlushMark() {
  if (!options_.auto_window || !options_.auto_window->MarkTaken()) return;
  // A flush came while this mark was queued: the next mark follows its buffers, which are queued
  // by now. Closed or full: the count bound still holds.
  WriterItem mark;
  mark.flush_mark = true;
  if (!queue_.Push(std::move(mark))) options_.auto_window->DropMark();
}

template <typename F>
void RecordingPipeline::CountSteps(F&& f) {
  const uint64_t timed = steps_->steps_timed(), refused = steps_->slow_refused();
  const StepSums* sums = steps_->sums();
  const uint64_t dropped = sums ? sums->intervals_dropped() : 0, cut = sums ? sums->steps_cut() : 0;
  f();
  counters_.auto_steps_timed.fetch_add(steps_->steps_timed() - timed, std::memory_order_relaxed);
  counters_.auto_windows_skipped.fetch_add(steps_->slow_refused() - refused,
                                           std::memory_order_relaxed);
  if (sums) {
    counters_.step_intervals_dropped.fetch_add(sums->intervals_dropped() - dropped,
                                               std::memory_order_relaxed);
    counters_.steps_cut.fetch_add(sums->steps_cut() - cut, std::memory_order_relaxed);
  }
}

bool RecordingPipeline::StepWatchOn() const {
  // CUPMON_AUTO_WINDOW, a one-shot arming, or step sums; once on, it stays on.
  return watching_ || sums_ || facts_.config.auto_window ||
         options_.auto_window->once_factor() > 0;
}

void RecordingPipeline::MakeStepWatch() {
  const MonitorConfig& c = facts_.config;
  StepWatch::Options o;
  o.factor = c.auto_window ? c.auto_window_factor : 0;
  o.min_steps = c.auto_window_min_steps;
  o.anchor_kernel = c.auto_window_anchor_kernel;
  o.sums = sums_;
  o.by = sums_ && c.auto_window ? c.auto_window_by : AutoWindowBy::kStep;
  steps_ = std::make_unique<StepWatch>(facts_, o, *options_.auto_window);
}

void RecordingPipeline::NoteStepStrings() {
  // An anchor, and the sums' collectives, name kernels by text, and a name's text is written once,
  // before its first record: the watch sees every string from the start, armed or not.
  if (!options_.auto_window || (facts_.config.auto_window_anchor_kernel.empty() && !sums_)) return;
  if (!steps_) MakeStepWatch();
  steps_->NoteStrings(new_strings_);
}

void RecordingPipeline::WatchSteps(const uint8_t* buffer, size_t valid) {
  if (!options_.auto_window) return;
  // Off until CUPMON_AUTO_WINDOW, a one-shot arming or step sums: then the watch starts here.
  if (!StepWatchOn()) return;
  watching_ = true;
  if (!steps_) MakeStepWatch();
  CountSteps([&] { steps_->Add(buffer, valid); });
}

void RecordingPipeline::SettleSteps() {
  CountSteps([&] { steps_->Settle(); });
}


pb::RecordingHeader RecordingPipeline::BuildHeader() {
  const MonitorConfig& c = facts_.config;
  // Never cuInit: a buffer has completed (CUDA is up) or the monitor is stopping.
  const DriverInfo driver = options_.driver_probe ? options_.driver_probe() : ProbeCudaDriver();
  pb::RecordingHeader h;
  h.set_recording_id(facts_.recording_id);
  h.set_host(HostName());
  h.set_pid(static_cast<uint32_t>(getpid()));
  // The launcher's rank environment (torchrun, else Slurm): cupmon-decode merges ranks by it.
  const LauncherIdentity& launcher = facts_.launcher;
  if (launcher.rank) h.set_rank(*launcher.rank);
  if (launcher.local_rank) h.set_local_rank(*launcher.local_rank);
  if (launcher.world_size) h.set_world_size(*launcher.world_size);
  if (!launcher.job_id.empty()) h.set_job_id(launcher.job_id);
  for (std::string& arg : ProcessCommandLine()) h.add_command_line(std::move(arg));
  h.set_process_start_unix_ns(ProcessStartUnixNs());
  h.set_cupti_api_version(facts_.cupti_version);
  h.set_cuda_driver_version(driver.driver_version);
  h.set_cuda_runtime_version(driver.runtime_version);
  for (const auto& d : driver.devices) *h.add_devices() = d;
  for (uint32_t k : facts_.enabled_kinds) h.add_enabled_kinds(k);
  for (uint32_t kind = 0; kind < RecordSizeTable::kMaxKind; ++kind) {
    if (!facts_.sizes.Size(kind)) continue;
    pb::RecordSize* rs = h.add_record_sizes();
    rs->set_kind(kind);
    rs->set_size(facts_.sizes.Size(kind));
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
  pc->set_entry_point(facts_.entry_point);
  const MonitorConfig::CuptiAttributes& a = c.cupti_attributes;
  if (a.per_thread_buffers) pc->set_cupti_per_thread_buffers(*a.per_thread_buffers);
  if (a.device_buffer_bytes) pc->set_cupti_device_buffer_bytes(*a.device_buffer_bytes);
  if (a.device_buffer_preallocate)
    pc->set_cupti_device_buffer_preallocate(*a.device_buffer_preallocate);
  if (a.device_buffer_pool_limit) pc->set_cupti_device_buffer_pool_limit(*a.device_buffer_pool_limit);
  pc->set_zero_buffers(c.zero_buffers);
  h.set_cupmon_version(CUPMON_VERSION_STRING);
  h.set_synthetic(facts_.synthetic);
  return h;
}

void RecordingPipeline::OpenWriter() {
  // A throw from here leaves writer_ null: the next buffer tries again (counted as a fault).
  MaybeFault(options_.faults, "writer.open");
  pb::RecordingHeader h = BuildHeader();
  const MonitorConfig& c = facts_.config;
  RecordingWriterOptions wo;
  wo.files.directory = c.output_dir;
  char stamp[32] = {};
  const time_t now = time(nullptr);
  tm utc{};
  gmtime_r(&now, &utc);
  strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &utc);
  const std::string prefix =
      std::string("cupmon-") + stamp + "-" + h.host() + "-" + std::to_string(h.pid());
  wo.files.prefix = prefix;
  wo.files.file_bytes = c.file_bytes;
  wo.files.retention_bytes = c.retention_bytes;
  wo.files.retention_files = c.retention_files;
  wo.encoding = c.encoding;
  wo.zstd_level = c.zstd_level;
  wo.time_layout = facts_.time_layout;
  fs_ = std::make_unique<ForkClosingFileSystem>(options_.fs ? *options_.fs : PosixFileSystem());
  auto writer = std::make_unique<RecordingWriter>(std::move(wo), std::move(h), *fs_);
  if (auto r = writer->Open(); !r)
    Warn("cannot write into " + c.output_dir + ": " + r.error().message +
         "; the application continues, and lost data is counted");
  writer->WriteCalibration(facts_.start_calibration);
  {
    MutexLock lk(snapshot_mu_);
    prefix_ = prefix;
  }
  writer_ = std::move(writer);
  // Tasks that came before the first buffer (window markers, calibration), in their order.
  std::vector<std::function<void(RecordingWriter&)>> early;
  early.swap(early_tasks_);
  for (auto& task : early) {
    try {
      task(*writer_);
    } catch (...) {
      counters_.writer_faults.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void RecordingPipeline::CountFiles(PipelineSnapshot* s) {
  // Files of this recording on disk now (retention deletes old ones): one directory listing at
  // most once a second, here on the writer thread (it does I/O anyway), never on the control
  // thread that serves scrapes.
  const auto now = std::chrono::steady_clock::now();
  std::string prefix;
  {
    MutexLock lk(snapshot_mu_);
    prefix = prefix_;
  }
  if (!prefix.empty() && now - last_listing_ >= std::chrono::seconds(1)) {
    last_listing_ = now;
    uint64_t files = 0, bytes = 0;
    const std::string& dir = facts_.config.output_dir;
    if (DIR* d = opendir(dir.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string_view name(e->d_name);
        if (!name.starts_with(prefix)) continue;
        struct stat st{};
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
          ++files;
          bytes += static_cast<uint64_t>(st.st_size);
        }
      }
      closedir(d);
    }
    files_ = files;
    disk_bytes_ = bytes;
  }
  s->files = files_;
  s->disk_bytes = disk_bytes_;
}

void RecordingPipeline::Publish() {
  CUPMON_DCHECK_THREAD(thread_);
  PipelineSnapshot s;
  if (writer_) {
    s.stats = writer_->stats();
    s.current_file = writer_->current_file();
    s.last_write_error = writer_->last_error();
    for (const pb::Device& d : writer_->header().devices())
      if (!d.uuid().empty()) s.gpu_uuids[d.id()] = d.uuid();
  }
  if (facts_.track_busy) {
    s.device_busy = busy_.Devices();
    s.stream_busy = busy_.Streams();
  }
  if (sums_) {
    if (steps_ && steps_->sums()) s.steps = steps_->sums()->totals();
    s.steps.on = true;  // served as 0 before the first step, so that rate() has a start
  }
  CountFiles(&s);
  s.cupti_delivery_lag_ns = delivery_lag_ns_;
  MutexLock lk(snapshot_mu_);
  snapshot_ = std::move(s);
}

PipelineSnapshot RecordingPipeline::Snapshot() const {
  MutexLock lk(snapshot_mu_);
  return snapshot_;
}

std::string RecordingPipeline::file_prefix() const {
  MutexLock lk(snapshot_mu_);
  return prefix_;
}

bool RecordingPipeline::WaitFinished(std::chrono::milliseconds timeout) {
  MutexLock lk(finished_mu_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!finished_.load()) {
    if (!lk.WaitUntil(finished_cv_, deadline)) return finished_.load();
  }
  return true;
}

}  // namespace cupmon

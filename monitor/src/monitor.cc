// The monitor session: start and stop order of the parts, the one-monitor-per-process rule, fork
// and the bounded stop. The parts themselves live in activity_intake, string_table,
// recording_pipeline and control_loop (one thread each).
#include "cupmon/monitor/monitor.h"

#include <cupti.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <thread>

#include "activity_intake.h"
#include "control_loop.h"
#include "cupmon/format/recording_writer.h"
#include "cupmon/monitor/buffer_pool.h"
#include "cupti_mux.h"
#include "monitor_counters.h"
#include "own_thread.h"
#include "recording_pipeline.h"
#include "session_facts.h"
#include "string_table.h"
#include "termination_signals.h"
#include "writer_queue.h"

namespace cupmon {
namespace {

void Warn(const std::string& line) { std::fprintf(stderr, "cupmon: %s\n", line.c_str()); }

constexpr auto kFlushWaitTimeout = std::chrono::seconds(10);

// Sets the CUPTI activity attributes the configuration names (starting thread, before the buffer
// callbacks are registered and any kind is enabled, as cupti_activity.h asks of
// PER_THREAD_ACTIVITY_BUFFER). One CUPTI refuses is warned about and dropped from `a`, so that
// the recording header lists only what was applied; the monitor starts either way.
void ApplyCuptiAttributes(CuptiApi& cupti, MonitorConfig::CuptiAttributes* a) {
  auto set = [&](auto* field, CUpti_ActivityAttribute attr, const char* name, auto value) {
    if (!*field) return;
    size_t size = sizeof(value);
    if (CUptiResult rv = cupti.ActivitySetAttribute(attr, &size, &value); rv != CUPTI_SUCCESS) {
      Warn(std::string("cannot set CUPTI_ACTIVITY_ATTR_") + name + ": " +
           cupti.ResultString(rv) + "; CUPTI's default stays");
      field->reset();
    }
  };
  // The value types of cupti_activity.h: uint8_t for the flag, size_t for sizes and counts.
  set(&a->per_thread_buffers, CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER,
      "PER_THREAD_ACTIVITY_BUFFER", uint8_t{a->per_thread_buffers.value_or(false)});
  set(&a->device_buffer_bytes, CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, "DEVICE_BUFFER_SIZE",
      static_cast<size_t>(a->device_buffer_bytes.value_or(0)));
  // The limit before the pre-allocation: the header wants pre-allocate below the limit.
  set(&a->device_buffer_pool_limit, CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT,
      "DEVICE_BUFFER_POOL_LIMIT", static_cast<size_t>(a->device_buffer_pool_limit.value_or(0)));
  set(&a->device_buffer_preallocate, CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE,
      "DEVICE_BUFFER_PRE_ALLOCATE_VALUE",
      static_cast<size_t>(a->device_buffer_preallocate.value_or(0)));
}

}  // namespace

Monitor::Monitor(MonitorOptions options)
    : options_(std::move(options)), cupti_(*options_.cupti) {}

Monitor::~Monitor() {
  Stop();
  // After a timed-out stop the threads may still run (a test's blocked file system): wait for
  // them here, since this object is about to go.
  if (writer_thread_ && writer_thread_->joinable()) writer_thread_->join();
  if (control_) control_->Join();
  if (intake_) intake_->Unpublish();
}

void Monitor::DisableInForkedChild() noexcept { ActivityIntake::DisableInForkedChild(); }
bool Monitor::InForkedChild() noexcept { return ActivityIntake::InForkedChild(); }

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
  Expected<void> r = MakeError("internal error during start");
  try {
    r = m->Init();
  } catch (const std::exception& e) {
    // Thread creation refused (a process limit), an allocation: the job runs on, unmonitored.
    r = MakeError(std::string("start failed: ") + e.what());
  } catch (...) {
    r = MakeError("start failed: unknown exception");
  }
  if (!r) {
    m->Abandon();
    // CUPTI may still hold one of the pool's buffers after a refused start: then the pool (and so
    // the monitor) must outlive the process; a few MiB of address space, never touched again.
    if (m->pool_ && m->pool_->in_use() > 0) (void)m.release();
    return std::unexpected(r.error());
  }
  return m;
}

Expected<void> Monitor::Init() {
  std::vector<std::string> warnings;
  NormalizeConfig(&options_.config, &warnings);
  uint32_t version = 0;
  if (CUptiResult rv = cupti_.GetVersion(&version); rv != CUPTI_SUCCESS)
    return MakeError(std::string("cuptiGetVersion failed: ") + cupti_.ResultString(rv));
  facts_ = std::make_unique<SessionFacts>(ProbeSessionFacts(
      cupti_, options_.config, options_.entry_point, options_.synthetic, &warnings, clock()));
  for (const auto& w : warnings) Warn(w);
  SessionFacts& f = *facts_;
  const MonitorConfig& c = f.config;

  counters_ = std::make_unique<MonitorCounters>();
  auto pool = BufferPool::Create(c.buffer_bytes, c.pool_bytes / c.buffer_bytes);
  if (!pool) return std::unexpected(pool.error());
  pool_ = std::move(*pool);
  strings_ = std::make_unique<StringTable>(StringTable::Limits{}, options_.fault_injector);
  queue_ = std::make_unique<WriterQueue>();
  intake_ = std::make_unique<ActivityIntake>(f, *pool_, *strings_, *queue_, *counters_, clock());
  // Published only now that everything the callbacks touch exists.
  if (!intake_->Publish())
    return MakeError("a monitor is already running in this process (a second start is refused)");
  published_ = true;

  ApplyCuptiAttributes(cupti_, &f.config.cupti_attributes);
  if (CUptiResult rv = cupti_.ActivityRegisterCallbacks(ActivityIntake::RequestCallback(),
                                                        ActivityIntake::CompleteCallback());
      rv != CUPTI_SUCCESS) {
    if (rv == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      return MakeError("another CUPTI client (nsys, ncu, torch.profiler, ...) already holds this "
                       "process");
    return MakeError(std::string("cuptiActivityRegisterCallbacks failed: ") +
                     cupti_.ResultString(rv));
  }
  if (c.zero_buffers) {
    uint8_t one = 1;
    size_t size = sizeof(one);
    if (CUptiResult rv = cupti_.ActivitySetAttribute(
            CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &one);
        rv != CUPTI_SUCCESS) {
      Warn(std::string("cannot set ZEROED_OUT_ACTIVITY_BUFFER: ") + cupti_.ResultString(rv) +
           "; CUPTI zeroes buffers itself");
      f.config.zero_buffers = false;
    }
  }
  std::string failed;
  for (uint32_t kind : c.kinds) {
    const CUptiResult rv = cupti_.ActivityEnable(static_cast<CUpti_ActivityKind>(kind));
    if (rv == CUPTI_SUCCESS) {
      enabled_kinds_.push_back(kind);
      continue;
    }
    if (rv == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      return MakeError("another CUPTI client (nsys, ncu, torch.profiler, ...) already holds this "
                       "process");
    failed += std::string(failed.empty() ? "" : ", ") + KindName(kind) + " (" +
              cupti_.ResultString(rv) + ")";
  }
  if (enabled_kinds_.empty())
    return MakeError("no activity kind could be enabled: " + failed + "; no GPU or driver?");
  if (!failed.empty()) Warn("could not enable " + failed + "; continuing without them");
  // The facts are complete: frozen from here on, before any of the monitor's threads starts.
  f.enabled_kinds = enabled_kinds_;

  RecordingPipeline::Options po;
  po.fs = options_.fs;
  po.driver_probe = options_.driver_probe;
  po.faults = options_.fault_injector;
  auto_window_ = std::make_unique<AutoWindowMailbox>();
  po.auto_window = auto_window_.get();
  pipeline_ = std::make_unique<RecordingPipeline>(f, *pool_, *strings_, *queue_, *counters_,
                                                  std::move(po));
  MaybeFault(options_.fault_injector, "start.writer_thread");
  writer_thread_ = std::make_unique<std::thread>(StartOwnThread([this] {
    pthread_setname_np(pthread_self(), "cupmon-writer");
    pipeline_->Run();
  }));
  ControlLoop::Parts parts{f,          cupti_,     *pool_, *queue_, *pipeline_, *counters_,
                           [this](pb::Stats* s) { FillStats(s); }, options_.fault_injector,
                           [this](int sig) { OnTerminationSignal(sig); }};
  parts.auto_window = auto_window_.get();
  parts.rebinder = options_.rebinder;
  parts.clock = &clock();
  control_ = std::make_unique<ControlLoop>(std::move(parts));
  control_->Start();
  return {};
}

void Monitor::OnTerminationSignal(int sig) {
  // Control thread. A second signal meanwhile ends the process at once (the default action is
  // back).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  // Whatever hangs below (CUPTI's forced flush, the stop, a hung file system), the process ends
  // with the default action at most CUPMON_EXIT_TIMEOUT_MS plus a second after the signal: a job
  // without cupmon would have ended at once. First, so that a flush hung on this thread is covered.
  const uint32_t bound_ms = facts_->config.exit_timeout_ms + kTermGraceMs;
  // Made now: then the thread neither allocates nor takes stderr's lock (the hung thread may hold
  // either), and it writes only when stderr takes the line at once.
  std::string note = "cupmon: the final flush after signal " + std::to_string(sig) +
                     " did not end within " + std::to_string(bound_ms) +
                     " ms; ending the process without it (CUPMON_EXIT_TIMEOUT_MS). Files written "
                     "before are intact; the last one may lack its footer\n";
  StartOwnThread([sig, bound_ms, note = std::move(note)]() noexcept {
    pthread_setname_np(pthread_self(), "cupmon-termdog");
    std::this_thread::sleep_for(std::chrono::milliseconds(bound_ms));
    pollfd out{STDERR_FILENO, POLLOUT, 0};
    if (::poll(&out, 1, 0) == 1 && (out.revents & POLLOUT)) {
      const ssize_t ignored = ::write(STDERR_FILENO, note.data(), note.size());
      (void)ignored;
    }
    TerminationSignals::RaiseDefault(sig);
  }).detach();  // throws when no thread can be made: the caller then raises at once
  MaybeFault(options_.fault_injector, "term.flush");
  // A SIGKILL may follow within milliseconds: at a Slurm time limit srun answers its own SIGTERM
  // by killing its tasks ("srun: forcing job termination"). So CUPTI's buffers go to the writer
  // first, here, forced (the process is ending: a kernel still running comes back without its
  // end, counted by the decoder); the orderly stop below flushes again what came after.
  cupti_.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  // The orderly stop needs the control thread to stop, so it runs on a thread of its own.
  StartOwnThread([this, sig]() noexcept {
    pthread_setname_np(pthread_self(), "cupmon-term");
    try {
      Warn(std::string("signal ") + strsignal(sig) + ": final flush (at most " +
           std::to_string(facts_->config.exit_timeout_ms) + " ms), then the default action");
      MaybeFault(options_.fault_injector, "term.stop");
      Stop(std::chrono::milliseconds(facts_->config.exit_timeout_ms));
    } catch (...) {
      // The orderly stop failed: what the forced flush above handed over is written already.
    }
    TerminationSignals::RaiseDefault(sig);
  }).detach();  // throws when no thread can be made: the caller then raises at once
}

void Monitor::Abandon() noexcept {
  // Start failed: undo what Init() did. No file is created: the writer (if it runs) is told to
  // drop what it is given, and buffers CUPTI returns go back to the pool.
  try {
    stopped_ = true;
    if (control_) {
      control_->Stop(kDefaultStopTimeout);
      control_->StopFlushThread(std::chrono::steady_clock::now() + kDefaultStopTimeout);
    }
    for (uint32_t kind : enabled_kinds_)
      cupti_.ActivityDisable(static_cast<CUpti_ActivityKind>(kind));
    if (!enabled_kinds_.empty()) cupti_.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    enabled_kinds_.clear();
    if (pipeline_) pipeline_->Discard();
    if (queue_) {
      queue_->Close();
      if (!writer_thread_) {
        std::vector<WriterItem> left;
        while (queue_->PopAll(&left))
          for (WriterItem& item : left)
            if (item.buffer) {
              pool_->Release(item.buffer);
              counters_->buffers_at_writer.fetch_sub(1, std::memory_order_relaxed);
            }
      }
    }
    if (writer_thread_ && writer_thread_->joinable()) writer_thread_->join();
    if (published_ && intake_) intake_->Unpublish();
  } catch (...) {
    // Nothing more can be undone; the job goes on unmonitored.
  }
}

bool Monitor::Stop(std::chrono::milliseconds timeout) {
  MutexLock g(stop_mu_);
  if (InForkedChild()) return true;  // the parent's threads and files do not exist here
  if (stopped_.exchange(true)) return !stop_timed_out_.load();
  if (!control_ || !pipeline_) return true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const bool control_in_time = control_->Stop(timeout);
  bool in_time = control_in_time;
  // A takeover the watch has not seen (a job shorter than a flush period, or one that ends before
  // the watch's tick) must not be a silent loss: it is marked below from the buffers that never
  // came back.
  const bool gap_marked = !control_in_time || control_->takeover()->in_gap();
  const uint64_t last_active_ns =
      control_in_time ? control_->takeover()->last_active_cupti_ns() : 0;
  // A periodic flush inside CUPTI is waited for a quarter of the stop's time at most: the final
  // flush below hands over the same records, if CUPTI lets it.
  if (!control_->StopFlushThread(
          std::min(deadline, std::chrono::steady_clock::now() + timeout / 4)))
    in_time = false;
  // An interval the control thread opened covers a flush that is still stuck.
  const bool behind_marked = control_in_time && control_->behind()->open();
  if (control_in_time) {
    control_->takeover()->EndOpenGap();
    control_->behind()->End();
  }
  // A periodic flush that has not returned for longer than a flush may take, not marked yet:
  // CUPTI is behind (or hung) from that flush's start to here.
  const uint64_t stuck_since =
      !behind_marked && control_->flush_running_for_ns() >
                            BehindWatch::ThresholdNs(facts_->config.flush_ms)
          ? control_->flush_running_since_cupti_ns()
          : 0;
  const bool flushed = FinalFlushWithin(deadline, timeout);
  if (!flushed) {
    in_time = false;
    Warn("CUPTI's final flush did not return within " + std::to_string(timeout.count()) +
         " ms (a hung GPU or driver?); closing the files without the records CUPTI still held "
         "(CUPMON_EXIT_TIMEOUT_MS)");
  }
  PollDroppedRecords(cupti_, *counters_);
  try {
    queue_->Push(RecordingPipeline::FinalTask([this, gap_marked, flushed, last_active_ns,
                                               stuck_since](RecordingWriter& w) {
      if (stuck_since) MarkStuckFlush(w, stuck_since);
      // Every buffer CUPTI completed to cupmon is written by now (this task comes after them).
      // Buffers an earlier, reclaimed gap left with the other client are counted already. After
      // a flush that never returned, CUPTI holds the rest itself: no takeover to mark.
      const uint64_t known = counters_->stranded_buffers.load(std::memory_order_relaxed);
      if (!gap_marked && flushed && pool_->in_use() > known)
        MarkBuffersNotReturned(w, pool_->in_use() - known, last_active_ns);
      FillStats(&w.stats());
      pb::Calibration cal;
      *cal.add_samples() = TakeCalibrationSample(cupti_, clock());
      w.WriteCalibration(cal);
      w.WriteStats(clock().RealtimeNs());
      w.Close(clock().RealtimeNs());
    }));
  } catch (...) {
    counters_->writer_faults.fetch_add(1, std::memory_order_relaxed);
  }
  queue_->Close();
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (!pipeline_->WaitFinished(std::max(left, std::chrono::milliseconds(0)))) {
    in_time = false;
    Warn("the writer did not finish within " + std::to_string(timeout.count()) +
         " ms (a slow or hung file system?); not waiting any longer. Files written before "
         "are intact; the last one may lack its footer (CUPMON_EXIT_TIMEOUT_MS)");
  } else {
    writer_thread_->join();
    if (pool_->in_use() > 0)
      Warn(std::to_string(pool_->in_use()) +
           " activity buffers did not come back from CUPTI at stop: their records are lost "
           "(another CUPTI client probably took CUPTI's activity callbacks)");
    // A stopped monitor is kept, not freed (entry_points.cc): it should not keep its buffers'
    // pages resident too.
    pool_->ReleaseMemory();
  }
  if (!in_time) stop_timed_out_ = true;
  // Another monitor may start now. A buffer CUPTI completes after this is not returned to the pool
  // (the monitor, never freed in the library, keeps it).
  intake_->Unpublish();
  return in_time;
}

bool Monitor::FinalFlushWithin(std::chrono::steady_clock::time_point deadline,
                               std::chrono::milliseconds timeout) {
  // CUPTI's calls are the one part of a stop that cupmon cannot bound itself, and a flush hung in
  // CUPTI (a hung GPU or driver) would hang the job's exit with it. So they run on a thread of
  // their own, waited for until a quarter of the stop's timeout before its deadline (that quarter
  // is the writer's, for the footer), and for at least a tenth of it (so that a slow control stop
  // does not cut a normal flush short). Disable first, so that nothing new lands in buffers after
  // the forced flush.
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> flushed = done->get_future();
  auto flush = [this, done]() noexcept {
    try {
      MaybeFault(options_.fault_injector, "stop.flush");
    } catch (...) {
    }
    for (uint32_t kind : enabled_kinds_) cupti_.ActivityDisable(static_cast<CUpti_ActivityKind>(kind));
    cupti_.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    done->set_value();
  };
  try {
    StartOwnThread([flush]() noexcept {
      pthread_setname_np(pthread_self(), "cupmon-flush");
      flush();
    }).detach();
  } catch (...) {
    flush();  // no thread can be made: here, unbounded, as before
  }
  const auto at_least = std::chrono::steady_clock::now() + timeout / 10;
  return flushed.wait_until(std::max(deadline - timeout / 4, at_least)) ==
         std::future_status::ready;
}

void Monitor::MarkStuckFlush(RecordingWriter& w, uint64_t since_cupti_ns) {
  const uint32_t id =
      static_cast<uint32_t>(counters_->cupti_behind.fetch_add(1, std::memory_order_relaxed) + 1);
  uint64_t now_cupti = 0;
  cupti_.GetTimestamp(&now_cupti);
  const std::string why =
      "at stop a periodic cuptiActivityFlushAll(0) had not returned for longer than a flush "
      "period: CUPTI was behind its own records (or hung) and may have lost some without "
      "counting them";
  Warn(why);
  w.WriteWindowMarker(BehindWatch::Marker(true, id, since_cupti_ns, why));
  w.WriteWindowMarker(BehindWatch::Marker(false, id, std::max(now_cupti, since_cupti_ns),
                                          "recording stopped while CUPTI was behind"));
}

void Monitor::MarkBuffersNotReturned(RecordingWriter& w, uint64_t held, uint64_t last_active_ns) {
  const uint32_t gap = static_cast<uint32_t>(counters_->cupti_gaps.fetch_add(1) + 1);
  counters_->stranded_buffers.fetch_add(held, std::memory_order_relaxed);
  uint64_t now_cupti = 0;
  cupti_.GetTimestamp(&now_cupti);
  // Since when: the last tick that saw cupmon's callbacks run, else the start of the session.
  // (Another client may have switched CUPTI's clock since: Kineto does. Then when the loss began
  // is not known, and the marker says so.)
  uint64_t since = last_active_ns;
  if (since == 0 && facts_->start_calibration.samples_size() > 0)
    since = facts_->start_calibration.samples(0).cupti_ns();
  const bool since_known = since != 0 && since <= now_cupti;
  if (!since_known) since = now_cupti;
  w.WriteWindowMarker(TakeoverWatch::GapMarker(
      true, gap, since,
      "at stop " + std::to_string(held) +
          " cupmon buffers had not come back from CUPTI after its forced flush: their records "
          "are lost; another CUPTI client probably registered its own activity callbacks "
          "(seen at stop, not by the takeover watch" +
          (since_known ? ")" : "; when it began is not known)")));
  w.WriteWindowMarker(
      TakeoverWatch::GapMarker(false, gap, now_cupti, "recording stopped during the gap"));
}

void Monitor::FlushAndWait() {
  if (stopped_.load() || InForkedChild()) return;
  cupti_.ActivityFlushAll(0);
  control_->MarkFlushed();
  PollDroppedRecords(cupti_, *counters_);
  // Shared, not on this stack: a writer slower than the wait below may still run the task.
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> written = done->get_future();
  WriterItem item;
  item.task = [this](RecordingWriter& w) {
    FillStats(&w.stats());
    w.WriteStats(clock().RealtimeNs());
  };
  // Also when there is no file yet (no buffer came so far) or the task faulted: the caller is
  // woken in every case. Publish now: GetStats and the metrics endpoint read the published copy,
  // and the caller reads them as soon as this returns.
  item.after = [this, done] {
    pipeline_->Publish();
    done->set_value();
  };
  if (!queue_->Push(std::move(item))) return;
  if (written.wait_for(kFlushWaitTimeout) != std::future_status::ready)
    Warn("flush: the writer did not finish within 10 s (a slow file system?); not waiting");
}

void Monitor::FillStats(pb::Stats* s) const {
  const MonitorCounters& c = *counters_;
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
#define CUPMON_FILL_ATOMIC(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  CUPMON_COUNTER_IF_ATOMIC_##source(s->set_##name(get(c.name));)
  CUPMON_COUNTERS(CUPMON_FILL_ATOMIC)
#undef CUPMON_FILL_ATOMIC
  // The PART rows of the counter list, from the part that keeps each.
  s->set_pool_exhausted(pool_->exhausted());
  s->set_buffers_in_flight(pool_->in_use());
  s->set_buffers_free(pool_->free_count());
  if (control_) {
    s->set_windows_opened(control_->windows_opened());
    s->set_windows_refused(control_->windows_refused());
    s->set_trigger_signals(control_->trigger_signals());
  }
  s->set_strings_refused(strings_->strings_refused());
  s->set_labels_refused(strings_->labels_refused());
  s->set_tasks_dropped(queue_->tasks_dropped());
  if (InForkedChild()) return;  // the multiplexer's counters sit behind its lock
  if (auto* mux = dynamic_cast<CuptiMux*>(&cupti_)) {
    const CuptiMux::Counters mc = mux->counters();
    s->set_shared_client_records(mc.client_records);
    s->set_shared_client_undelivered(mc.undelivered_records);
  }
}

MonitorStats Monitor::GetStats() const {
  MonitorStats out;
  if (!pipeline_) return out;
  // A forked child takes no lock (a parent thread may have held the snapshot's at the fork, and it
  // is never released there): only the counters that are atomics, as of the fork.
  const bool child = InForkedChild();
  const PipelineSnapshot snap = child ? PipelineSnapshot{} : pipeline_->Snapshot();
  pb::Stats s = snap.stats;
  FillStats(&s);
#define CUPMON_GET_COUNTER(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  out.name = s.name();
  CUPMON_COUNTERS(CUPMON_GET_COUNTER)
#undef CUPMON_GET_COUNTER
  out.strings = strings_->strings();
  out.current_file = snap.current_file;
  out.last_write_error = snap.last_write_error;
  out.stop_timed_out = stop_timed_out_.load();
  if (control_) {
    out.window_open = control_->window_open();
    out.auto_windows_opened = control_->auto_windows_opened();
  }
  return out;
}

Expected<uint32_t> Monitor::RequestWindow(uint32_t duration_ms, std::vector<uint32_t> kinds,
                                          pb::TriggerSource source) {
  if (stopped_.load() || InForkedChild()) return MakeError("cupmon is not running");
  return control_->RequestWindow(duration_ms, std::move(kinds), source);
}

Expected<void> Monitor::RequestCloseWindow() {
  if (stopped_.load() || InForkedChild()) return MakeError("cupmon is not running");
  return control_->RequestCloseWindow();
}

Expected<uint64_t> Monitor::PushAnnotation(std::string_view label) {
  if (stopped_.load() || InForkedChild()) return MakeError("cupmon is not running");
  // The label reaches the files ahead of any record using it: the writer drains the string table
  // before each buffer (string_table.h). No writer wake-up here.
  auto id = strings_->InternLabel(label);
  if (!id) return id;
  // Outside every lock of ours: CUPTI calls are never made while holding a lock its callbacks take.
  const CUptiResult r =
      cupti_.ActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, *id);
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

std::string Monitor::control_socket_path() const {
  return control_ ? control_->control_socket_path() : std::string();
}
uint16_t Monitor::metrics_port() const { return control_ ? control_->metrics_port() : 0; }
control::ControlTarget& Monitor::control_target() { return control_->control_target(); }
bool Monitor::RunOnControl(std::function<void()> task) {
  return control_ && control_->RunAndWait(std::move(task));
}
const MonitorConfig& Monitor::config() const { return facts_->config; }
const std::string& Monitor::entry_point() const { return options_.entry_point; }
const std::vector<uint32_t>& Monitor::enabled_kinds() const { return facts_->enabled_kinds; }
const RecordSizeTable& Monitor::record_sizes() const { return facts_->sizes; }
uint32_t Monitor::cupti_version() const { return facts_->cupti_version; }
size_t Monitor::buffers_in_flight() const { return pool_ ? pool_->in_use() : 0; }

}  // namespace cupmon

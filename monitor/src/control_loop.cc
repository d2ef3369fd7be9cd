// ControlLoop: the control thread's timers, trace windows, control plane and metrics adapters.
#include "control_loop.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <future>

#include <boost/asio/post.hpp>

#include "activity_intake.h"
#include "cupmon/control/protocol.h"
#include "cupmon/format/recording_writer.h"
#include "cupti_mux.h"
#include "own_thread.h"

#ifndef CUPMON_VERSION_STRING
#define CUPMON_VERSION_STRING "0.0.0"
#endif

namespace cupmon {
namespace {

static_assert(TraceWindow::kMaxWindowMs == control::kMaxWindowMs);

void Warn(const std::string& line) { std::fprintf(stderr, "cupmon: %s\n", line.c_str()); }

std::string UpperKindName(uint32_t kind) {
  std::string s = KindName(kind);
  if (s == "unknown") return "KIND_" + std::to_string(kind);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

ControlLoop::ControlLoop(Parts parts)
    : parts_(std::move(parts)), work_(boost::asio::make_work_guard(io_)), clock_(*parts_.clock) {}

ControlLoop::~ControlLoop() {
  if (thread_.joinable()) {
    work_.reset();
    io_.stop();
    thread_.join();
  }
}

void ControlLoop::Start() {
  const MonitorConfig& c = parts_.facts.config;
  TraceWindow::Options wo;
  wo.default_kinds = c.window_kinds;
  wo.always_on = parts_.facts.enabled_kinds;
  wo.runtime_filter = parts_.facts.runtime_filter;
  wo.driver_filter = parts_.facts.driver_filter;
  TraceWindow::Hooks hooks;
  hooks.write_marker = [this](const pb::WindowMarker& marker) {
    Post([marker](RecordingWriter& w) { w.WriteWindowMarker(marker); });
  };
  hooks.flush = [this] {
    parts_.cupti.ActivityFlushAll(0);
    MarkFlushed();
    PollDropped();
  };
  window_ =
      std::make_unique<TraceWindow>(io_, parts_.cupti, std::move(wo), std::move(hooks), clock_);
  watch_ = std::make_unique<CallbackWatch>(c.reclaim_ms);
  RebindImports(/*only_new=*/false);
  cal_last_ = parts_.facts.start_calibration.samples(0);
  cal_written_ = 1;
  MaybeFault(parts_.faults, "start.control_thread");
  flusher_ = std::make_unique<PeriodicFlush>(
      parts_.cupti, clock_, [this](PeriodicFlush::Done done) {
        // The buffers the flush handed back are queued by now.
        MarkFlushed();
        PollDropped();
        // The flush thread; the control thread itself on a virtual clock (periodic_flush.h).
        if (std::this_thread::get_id() == thread_.get_id()) AfterFlush(done);
        else boost::asio::post(io_, [this, done] { AfterFlush(done); });
      });
  flusher_->Start();
  thread_ = StartOwnThread([this] { Run(); });
  SchedulePeriodic(flush_timer_, parts_.facts.config.flush_ms, &ControlLoop::OnFlushTick);
  SchedulePeriodic(stats_timer_, parts_.facts.config.stats_ms, &ControlLoop::OnStatsTick);
  if (c.auto_window) RunAndWait([this] { StartAutoTimer(); });
  RunAndWait([this] { StartEndpoints(); });
}

void ControlLoop::Run() noexcept {
  pthread_setname_np(pthread_self(), "cupmon-control");
  for (;;) {
    try {
      io_.run();
      return;
    } catch (...) {
      // A handler threw past its own catch: count it and keep serving.
      parts_.counters.control_faults.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

bool ControlLoop::Stop(std::chrono::milliseconds timeout) {
  if (!thread_.joinable()) return true;
  stopping_ = true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // An open window ends with note "stop" (its kinds disabled, its records flushed, END written),
  // then the socket, the signal trigger and the endpoint go away. The task refers to nothing on
  // this stack, so it may outlive the wait.
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> shut = done->get_future();
  boost::asio::post(io_, [this, done]() noexcept {
    ShutdownEndpoints();
    done->set_value();
  });
  const bool shut_in_time = shut.wait_until(deadline) == std::future_status::ready;
  work_.reset();
  io_.stop();
  if (!shut_in_time) return false;
  // io_.run() returns within the handler that is running now; the join is then immediate.
  thread_.join();
  return true;
}

void ControlLoop::Join() {
  if (thread_.joinable()) thread_.join();
}

bool ControlLoop::RunAndWait(std::function<void()> task) {
  if (!thread_.joinable()) return false;
  if (std::this_thread::get_id() == thread_.get_id()) {
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
  boost::asio::post(io_, [task = std::move(task), shared, this]() noexcept {
    int expected = kQueued;
    if (!shared->state.compare_exchange_strong(expected, kRunning)) return;
    try {
      task();
    } catch (...) {
      parts_.counters.control_faults.fetch_add(1, std::memory_order_relaxed);
    }
    shared->done.set_value();
  });
  while (finished.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) {
    int expected = kQueued;
    if (io_.stopped() && shared->state.compare_exchange_strong(expected, kAbandoned)) return false;
  }
  return true;
}

void ControlLoop::Post(std::function<void(RecordingWriter&)> task) {
  WriterItem item;
  item.task = std::move(task);
  parts_.queue.Push(std::move(item));  // full or closed: dropped, counted by the queue
}

// ---- Timers ----

void ControlLoop::SchedulePeriodic(ClockTimer& timer, uint32_t period_ms,
                                   void (ControlLoop::*tick)()) {
  if (period_ms == 0) return;
  auto on_tick = [this, &timer, period_ms, tick](const boost::system::error_code& ec) noexcept {
    if (ec || stopping_.load()) return;
    // The tick's faults are counted and the timer re-armed: a fault never stops the flushing.
    try {
      (this->*tick)();
    } catch (...) {
      parts_.counters.control_faults.fetch_add(1, std::memory_order_relaxed);
    }
    try {
      SchedulePeriodic(timer, period_ms, tick);
    } catch (...) {
      parts_.counters.control_faults.fetch_add(1, std::memory_order_relaxed);
    }
  };
  timer.ExpiresAfterWait(std::chrono::milliseconds(period_ms), std::move(on_tick));
}

void ControlLoop::OnFlushTick() {
  MaybeFault(parts_.faults, "control.tick");
  // Before the flush, so that the sample precedes the records it completes in the stream.
  CheckClockDomain();
  // The flush runs on its own thread and reports to AfterFlush(); a tick that finds the last
  // one still inside CUPTI does not queue another.
  if (!flusher_->Request()) NoteFlushStillRunning();
  RebindImports(/*only_new=*/true);
}

void ControlLoop::AfterFlush(PeriodicFlush::Done done) {
  if (stopping_.load()) return;
  NoteFlushTime(done.took_ns, done.began_cupti_ns);
  CheckCallbacks();
  if (stats_after_flush_.exchange(false)) {
    Post([fill = parts_.fill_stats, now = clock_.RealtimeNs()](RecordingWriter& w) {
      fill(&w.stats());
      w.WriteStats(now);
    });
  }
}

bool ControlLoop::StopFlushThread(std::chrono::steady_clock::time_point deadline) {
  return !flusher_ || flusher_->Stop(deadline);
}

int64_t ControlLoop::BehindThresholdNs(uint32_t flush_ms) {
  // A non-forced flush only hands over what CUPTI completed; taking longer than the period that
  // calls it means CUPTI's own worker is behind. At least a second, so that a short period set
  // for a test or a burst does not read as a backlog.
  return std::max<int64_t>(flush_ms, 1000) * 1'000'000;
}

uint64_t ControlLoop::flush_running_since_cupti_ns() const {
  return flusher_ ? flusher_->running_since_cupti_ns() : 0;
}

int64_t ControlLoop::flush_running_for_ns() const {
  return flusher_ ? flusher_->running_for_ns() : 0;
}

pb::WindowMarker ControlLoop::BehindMarker(bool begin, uint32_t id, uint64_t cupti_ns,
                                           std::string note) {
  pb::WindowMarker m;
  m.set_window_id(id);
  m.set_edge(begin ? pb::WindowMarker::BEHIND_BEGIN : pb::WindowMarker::BEHIND_END);
  m.set_cupti_ns(cupti_ns);
  m.set_realtime_ns(RealClock().RealtimeNs());
  m.set_note(std::move(note));
  return m;
}

void ControlLoop::BeginBehind(uint64_t since_cupti_ns, const std::string& why) {
  behind_ = true;
  behind_id_ = static_cast<uint32_t>(
      parts_.counters.cupti_behind.fetch_add(1, std::memory_order_relaxed) + 1);
  const std::string note =
      why + ": CUPTI's worker is behind its own records and may lose some without counting them";
  Post([m = BehindMarker(true, behind_id_, since_cupti_ns, note)](RecordingWriter& w) {
    w.WriteWindowMarker(m);
  });
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    Warn(note + "; marked in the files (cupmon-decode info), counted as cupti_behind");
}

void ControlLoop::NoteFlushStillRunning() {
  // Marked while the flush is still inside CUPTI, so that the live counter and the files say so
  // before it returns (if ever); its return then finds the interval open.
  const int64_t running = flusher_->running_for_ns();
  const uint64_t since = flusher_->running_since_cupti_ns();
  if (behind_ || since == 0 || running <= BehindThresholdNs(parts_.facts.config.flush_ms)) return;
  BeginBehind(since, "a periodic cuptiActivityFlushAll(0) has not returned for " +
                         std::to_string(running / 1'000'000) + " ms (flush period " +
                         std::to_string(parts_.facts.config.flush_ms) + " ms)");
}

void ControlLoop::NoteFlushTime(int64_t took_ns, uint64_t began_cupti_ns) {
  const uint32_t flush_ms = parts_.facts.config.flush_ms;
  const int64_t threshold = BehindThresholdNs(flush_ms);
  const std::string took = std::to_string(took_ns / 1'000'000) + " ms";
  // Records without timestamps (start = end = 0) mean CUPTI's device buffers are full. After its
  // worker saturated, CUPTI was seen to stop recording most kernels while flushes were fast
  // again and only such records came: so they keep an interval open, and open one.
  const uint64_t zero_ts = parts_.pipeline.Snapshot().stats.zero_timestamp_records();
  const uint64_t new_zero_ts = zero_ts > zero_ts_seen_ ? zero_ts - zero_ts_seen_ : 0;
  zero_ts_seen_ = zero_ts;
  if (!behind_ && (took_ns > threshold || new_zero_ts > 0)) {
    BeginBehind(began_cupti_ns ? began_cupti_ns : 1,
                took_ns > threshold
                    ? "a periodic cuptiActivityFlushAll(0) took " + took + " (flush period " +
                          std::to_string(flush_ms) + " ms)"
                    : std::to_string(new_zero_ts) +
                          " records without timestamps since the last flush (CUPTI's device "
                          "buffers are full)");
  } else if (behind_ && took_ns < threshold / 2 && new_zero_ts == 0) {
    behind_ = false;
    uint64_t now_cupti = 0;
    parts_.cupti.GetTimestamp(&now_cupti);
    Post([m = BehindMarker(false, behind_id_, now_cupti,
                           "CUPTI caught up: a flush took " + took +
                               ", no record without timestamps since the last")](
             RecordingWriter& w) { w.WriteWindowMarker(m); });
  }
}

void ControlLoop::EndBehind() {
  if (!behind_) return;
  behind_ = false;
  uint64_t now_cupti = 0;
  parts_.cupti.GetTimestamp(&now_cupti);
  Post([m = BehindMarker(false, behind_id_, now_cupti,
                         "recording stopped while CUPTI was behind: what it still held is lost "
                         "unless the final flush delivered it")](RecordingWriter& w) {
    w.WriteWindowMarker(m);
  });
}

void ControlLoop::RebindImports(bool only_new) {
  if (!parts_.rebinder) return;
  const RebindCounts n = only_new ? parts_.rebinder->ScanIfLoaded() : parts_.rebinder->Scan();
  parts_.counters.imports_rebound.fetch_add(n.slots, std::memory_order_relaxed);
}

void ControlLoop::MarkFlushed() {
  // Only while the step trigger can fire or steps are summed; cuptiActivityFlushAll is blocking,
  // so the buffers it handed back are queued ahead of the mark.
  const MonitorConfig& c = parts_.facts.config;
  if (!parts_.auto_window ||
      !(c.auto_window || SumsSteps(c) || parts_.auto_window->once_factor() > 0))
    return;
  // One queued at a time; while one waits, the writer queues the next when it takes it.
  if (!parts_.auto_window->ClaimMark()) return;
  WriterItem mark;
  mark.flush_mark = true;
  // Full or closed: dropped (the count bound still holds); the next flush may queue one.
  if (!parts_.queue.Push(std::move(mark))) parts_.auto_window->DropMark();
}

void ControlLoop::StartAutoTimer() {
  if (auto_timer_running_ || !parts_.auto_window) return;
  auto_timer_running_ = true;
  SchedulePeriodic(auto_timer_, AutoPollMs(parts_.facts.config.flush_ms),
                   &ControlLoop::OnAutoTick);
}

void ControlLoop::OnAutoTick() {
  const std::optional<SlowStep> slow = parts_.auto_window->Take();
  if (!slow) return;
  const MonitorConfig& c = parts_.facts.config;
  const int64_t now = clock_.SteadyNs();
  // Never while a window is open (whoever opened it), and, for CUPMON_AUTO_WINDOW, at most one
  // per MIN_GAP: a job that stays slow gets one window, not one per step.
  const int64_t min_gap_ns = static_cast<int64_t>(c.auto_window_min_gap_ms) * 1'000'000;
  const bool in_gap = !slow->once && last_auto_ns_ && now - *last_auto_ns_ < min_gap_ns;
  if (window_->is_open() || in_gap) {
    parts_.counters.auto_windows_skipped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  TraceWindow::Request r;
  r.duration_ms = c.window_ms;
  if (slow->once && once_request_) r = *once_request_;  // cupmonctl's duration and kinds
  r.source = pb::TRIGGER_AUTO;
  r.received_realtime_ns = clock_.RealtimeNs();
  r.trigger_step = slow->step;
  r.trigger_step_ns = slow->duration_ns;
  r.trigger_median_ns = slow->median_ns;
  r.trigger_factor = slow->factor;
  if (auto opened = window_->Open(r); !opened) {
    parts_.counters.auto_windows_skipped.fetch_add(1, std::memory_order_relaxed);
    Warn("automatic trace window at step " + std::to_string(slow->step) +
         " not opened: " + opened.error().message);
    return;
  }
  last_auto_ns_ = now;
  auto_opened_.fetch_add(1, std::memory_order_relaxed);
  if (slow->once) {
    parts_.auto_window->Disarm();
    once_request_.reset();
  }
}

Expected<void> ControlLoop::ArmWhenSlower(double factor) {
  if (!parts_.auto_window) return MakeError("this monitor has no step watch");
  if (!(factor > 1.0) || factor > 1000.0)
    return MakeError("--when-slower " + std::to_string(factor) +
                     ": expected a factor above 1 and at most 1000, such as 1.5");
  if (parts_.facts.kernel.start == 0 || parts_.facts.kernel_name_offset == 0)
    return MakeError("the loaded CUPTI's kernel record layout is unknown to this cupmon, so steps "
                     "cannot be timed");
  parts_.auto_window->ArmOnce(factor);
  StartAutoTimer();
  return {};
}

void ControlLoop::OnStatsTick() {
  // Each flush polls them when it returns; while one is inside CUPTI, CUPTI is not asked here.
  if (flush_running_for_ns() == 0) PollDropped();
  pb::Calibration cal;
  *cal.add_samples() = TakeCalibrationSample(parts_.cupti, clock_);
  NoteCalibrationWritten(cal.samples(0));
  Post([fill = parts_.fill_stats, cal = std::move(cal), now = clock_.RealtimeNs()](
           RecordingWriter& w) {
    fill(&w.stats());
    w.WriteCalibration(cal);
    w.WriteStats(now);
  });
}

void ControlLoop::PollDropped() {
  size_t dropped = 0;
  if (parts_.cupti.ActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS)
    parts_.counters.dropped_records.fetch_add(dropped, std::memory_order_relaxed);
}

void ControlLoop::NoteCalibrationWritten(const pb::CalibrationSample& s) {
  cal_prev_ = cal_last_;
  cal_last_ = s;
  cal_written_ = std::min(cal_written_ + 1, 2);
}

void ControlLoop::CheckClockDomain() {
  // Another CUPTI client's timestamp callback (Kineto registers one at each profiler session; on
  // x86-64 it returns TSC ticks) moves CUPTI's records and cuptiGetTimestamp() to its clock for the
  // rest of the process. The decoder maps each clock domain with its own samples
  // (decoder/.../clock_map.h), so a domain needs samples soon after it begins. One CUPTI and two
  // CLOCK_REALTIME readings per tick: the sample is written when CUPTI time is more than 1 ms away
  // from where the last written samples predict it (their rate when the last two lie in one
  // domain, else one CUPTI unit per ns). A TSC domain thus gets two samples in two ticks, then
  // only the periodic ones.
  if (cal_written_ == 0) return;
  const pb::CalibrationSample now = TakeCalibrationSample(parts_.cupti, clock_);
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
  Post([cal = std::move(cal)](RecordingWriter& w) { w.WriteCalibration(cal); });
}

// ---- Takeover watch ----

pb::WindowMarker ControlLoop::GapMarker(bool begin, uint32_t gap, uint64_t cupti_ns,
                                        std::string note) {
  pb::WindowMarker m;
  m.set_window_id(gap);
  m.set_edge(begin ? pb::WindowMarker::GAP_BEGIN : pb::WindowMarker::GAP_END);
  m.set_cupti_ns(cupti_ns);
  m.set_realtime_ns(RealClock().RealtimeNs());
  m.set_note(std::move(note));
  return m;
}

void ControlLoop::WriteGapMarker(bool begin, uint32_t gap, uint64_t cupti_ns,
                                 const std::string& note) {
  Post([m = GapMarker(begin, gap, cupti_ns, note)](RecordingWriter& w) { w.WriteWindowMarker(m); });
}

void ControlLoop::EndOpenGap() {
  if (!watch_ || !watch_->in_gap()) return;
  uint64_t now_cupti = 0;
  parts_.cupti.GetTimestamp(&now_cupti);
  WriteGapMarker(false, watch_->gaps(), now_cupti, "recording stopped during the gap");
}

void ControlLoop::CheckCallbacks() {
  // After the periodic non-forced flush (callback_watch.h explains the signal).
  if (!watch_) return;
  BufferPool& pool = parts_.pool;
  uint64_t now_cupti = 0;
  parts_.cupti.GetTimestamp(&now_cupti);
  const uint64_t calls = parts_.counters.callback_calls.load(std::memory_order_relaxed);
  // Inside CUPTI: the pool's buffers less those the writer holds (a writer held up by the disk
  // while the job is idle must not read as a takeover).
  const uint64_t in_use = pool.in_use();
  const uint64_t at_writer = parts_.counters.buffers_at_writer.load(std::memory_order_relaxed);
  const uint64_t in_flight = in_use > at_writer ? in_use - at_writer : 0;
  // Did CUPTI write into any of our buffers since the last tick? (About 12 KiB read per buffer.)
  bool grew = false;
  fill_.resize(pool.count(), 0);
  for (size_t slot = 0; slot < pool.count(); ++slot) {
    const uint8_t* b = pool.BufferIfInUse(slot);
    const size_t filled = b ? FilledPrefixBytes(b, pool.buffer_bytes()) : 0;
    grew = grew || filled > fill_[slot];
    fill_[slot] = filled;
  }
  const int64_t now_ms = clock_.SteadyNs() / 1'000'000;
  const uint64_t since = last_active_cupti_ns_ ? last_active_cupti_ns_ : now_cupti;
  const CallbackWatch::Action action = watch_->Tick(calls, in_flight, grew, now_ms);
  if (!watch_->in_gap()) last_active_cupti_ns_ = now_cupti;
  const uint32_t gap = watch_->gaps();
  switch (action) {
    case CallbackWatch::Action::kNone:
      return;
    case CallbackWatch::Action::kGapBegins: {
      parts_.counters.cupti_gaps.store(gap, std::memory_order_relaxed);
      // The gap began after the last tick that saw cupmon's callbacks run.
      WriteGapMarker(true, gap, since,
                     "for " + std::to_string(parts_.facts.config.flush_ms) +
                         " ms no cupmon buffer came back or grew while " +
                         std::to_string(in_flight) +
                         " were inside CUPTI: another CUPTI client probably registered its own "
                         "activity callbacks");
      if (!gap_warned_) {
        gap_warned_ = true;
        const uint32_t reclaim = parts_.facts.config.reclaim_ms;
        Warn("another CUPTI client (torch.profiler, ...) seems to have taken CUPTI's activity "
             "callbacks: cupmon records nothing until " +
             (reclaim ? "it takes them back in " + std::to_string(reclaim) + " ms"
                      : std::string("stop (CUPMON_RECLAIM_MS=0)")) +
             "; the gap is marked in the recording. To share CUPTI instead, start the job with "
             "cupmon-run (it preloads libcupmon-preload.so unless --no-preload; "
             "docs/COEXISTENCE.md)");
      }
      return;
    }
    case CallbackWatch::Action::kGapEnds:
      WriteGapMarker(false, gap, now_cupti, "cupmon's buffer callbacks ran again");
      return;
    case CallbackWatch::Action::kReclaim: {
      const int64_t held_ms = now_ms - watch_->gap_start_ms();
      // Counted before cupmon's callbacks are back: from then on, the application's next
      // record may ask cupmon for a new buffer, which is not stranded.
      const uint64_t at_writer_now =
          parts_.counters.buffers_at_writer.load(std::memory_order_relaxed);
      const uint64_t held_by_other =
          pool.in_use() > at_writer_now ? pool.in_use() - at_writer_now : 0;
      CUptiResult r;
      if (auto* mux = dynamic_cast<CuptiMux*>(&parts_.cupti)) {
        r = mux->Reassert();
      } else {
        r = parts_.cupti.ActivityRegisterCallbacks(ActivityIntake::RequestCallback(),
                                                   ActivityIntake::CompleteCallback());
        // Clients switch their kinds off when their session ends; cupmon's go on again.
        for (uint32_t kind : parts_.facts.enabled_kinds)
          parts_.cupti.ActivityEnable(static_cast<CUpti_ActivityKind>(kind));
      }
      watch_->Reclaimed(held_by_other);
      parts_.counters.stranded_buffers.store(watch_->stranded(), std::memory_order_relaxed);
      const std::string note =
          r == CUPTI_SUCCESS
              ? "cupmon registered its callbacks and kinds again " + std::to_string(held_ms) +
                    " ms after the gap was noticed; " + std::to_string(watch_->stranded()) +
                    " cupmon buffers stayed with the other client"
              : std::string("taking CUPTI back failed: ") + parts_.cupti.ResultString(r);
      WriteGapMarker(false, gap, now_cupti, note);
      return;
    }
  }
}

// ---- Control plane, metrics, windows ----

void ControlLoop::StartEndpoints() {
  const MonitorConfig& c = parts_.facts.config;
  if (c.term_flush && parts_.on_termination_signal) {
    term_ = std::make_unique<TerminationSignals>(io_, parts_.on_termination_signal);
    term_->Start();
  }
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

void ControlLoop::ShutdownEndpoints() noexcept {
  try {
    if (window_) window_->Shutdown();
  } catch (...) {
    parts_.counters.control_faults.fetch_add(1, std::memory_order_relaxed);
  }
  try {
    if (term_) term_->Stop();
    if (control_) control_->Stop();
    if (metrics_) metrics_->Stop();
  } catch (...) {
    parts_.counters.control_faults.fetch_add(1, std::memory_order_relaxed);
  }
}

std::string ControlLoop::control_socket_path() const { return control_socket_; }

Expected<uint32_t> ControlLoop::RequestWindow(uint32_t duration_ms, std::vector<uint32_t> kinds,
                                              pb::TriggerSource source) {
  Expected<uint32_t> result = MakeError("the control thread has stopped");
  TraceWindow::Request r;
  r.duration_ms = duration_ms ? duration_ms : parts_.facts.config.window_ms;
  r.kinds = std::move(kinds);
  r.source = source;
  RunAndWait([&] { result = window_->Open(r); });
  return result;
}

Expected<void> ControlLoop::RequestCloseWindow() {
  Expected<void> result = MakeError("the control thread has stopped");
  RunAndWait([&] { result = window_->Close("closed"); });
  return result;
}

pb::StatusReply ControlLoop::Status() {
  const SessionFacts& f = parts_.facts;
  pb::StatusReply s;
  s.set_version(CUPMON_VERSION_STRING);
  s.set_pid(static_cast<uint32_t>(getpid()));
  for (uint32_t k : f.enabled_kinds) s.add_enabled_kinds(UpperKindName(k));
  if (window_ && window_->is_open()) {
    for (uint32_t k : window_->kinds())
      if (std::find(f.enabled_kinds.begin(), f.enabled_kinds.end(), k) == f.enabled_kinds.end())
        s.add_enabled_kinds(UpperKindName(k));
  }
  s.set_window_open(window_ && window_->is_open());
  s.set_window_id(window_ && window_->is_open() ? window_->id() : 0);
  const PipelineSnapshot snap = parts_.pipeline.Snapshot();
  *s.mutable_stats() = snap.stats;
  parts_.fill_stats(s.mutable_stats());
  s.set_buffers_free(s.stats().buffers_free());
  s.set_buffers_in_flight(s.stats().buffers_in_flight());
  s.set_bytes_written(snap.stats.compressed_bytes());
  s.set_dropped_records(s.stats().dropped_records());
  s.set_current_file(snap.current_file);
  s.set_output_dir(f.config.output_dir);
  for (std::string& arg : ProcessCommandLine()) s.add_command_line(std::move(arg));
  const LauncherIdentity& launcher = f.launcher;
  if (launcher.rank) s.set_rank(*launcher.rank);
  if (launcher.local_rank) s.set_local_rank(*launcher.local_rank);
  if (launcher.world_size) s.set_world_size(*launcher.world_size);
  s.set_job_id(launcher.job_id);
  // The same figures as this process's /metrics, for the node agent (cupmonctl serve).
  *s.mutable_metrics() = metrics::ToMetricsView(Snapshot());
  return s;
}

Expected<uint32_t> ControlLoop::OpenWindow(const control::WindowRequest& request) {
  // Received on the control thread: the latency probe's first timestamp.
  const int64_t received = clock_.RealtimeNs();
  if (request.source == pb::TRIGGER_SIGNAL)
    trigger_signals_.fetch_add(1, std::memory_order_relaxed);
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
  if (request.when_slower != 0) {
    // Armed, not opened: the duration and kinds wait for the slow step (OnAutoTick).
    if (r.duration_ms == 0 || r.duration_ms > TraceWindow::kMaxWindowMs)
      return MakeError("window duration must be from 1 ms to 24 h");
    if (auto armed = ArmWhenSlower(request.when_slower); !armed)
      return std::unexpected(armed.error());
    once_request_ = r;
    return 0u;
  }
  return window_->Open(r);
}

Expected<void> ControlLoop::CloseWindow() { return window_->Close("closed"); }

Expected<void> ControlLoop::Flush() {
  if (stopping_.load()) return MakeError("the monitor is stopping");
  const int64_t now = clock_.SteadyNs();
  if (last_flush_ns_ &&
      now - *last_flush_ns_ < std::chrono::nanoseconds(kMinFlushInterval).count()) {
    parts_.counters.control_requests_limited.fetch_add(1, std::memory_order_relaxed);
    return MakeError("a flush ran less than 100 ms ago; at most one flush per 100 ms");
  }
  last_flush_ns_ = now;
  // Non-forced, on the flush thread; a stats chunk follows its buffers. A flush already inside
  // CUPTI serves the request: what it hands over is what a new one would.
  stats_after_flush_.store(true);
  flusher_->Request();
  return {};
}

Expected<void> ControlLoop::Rotate() {
  if (stopping_.load()) return MakeError("the monitor is stopping");
  const int64_t now = clock_.SteadyNs();
  if (last_rotate_ns_ &&
      now - *last_rotate_ns_ < std::chrono::nanoseconds(kMinRotateInterval).count()) {
    parts_.counters.control_requests_limited.fetch_add(1, std::memory_order_relaxed);
    return MakeError("a rotation ran less than 1 s ago; at most one rotation per second");
  }
  WriterItem item;
  item.task = [](RecordingWriter& w) { w.Rotate(); };
  if (!parts_.queue.Push(std::move(item))) return MakeError("the writer has stopped or is full");
  last_rotate_ns_ = now;
  return {};
}

metrics::MetricsSnapshot ControlLoop::Snapshot() {
  // Snapshots only: no directory listing, no stat, no lock the writer holds while writing.
  const PipelineSnapshot snap = parts_.pipeline.Snapshot();
  metrics::MetricsSnapshot m;
  m.version = CUPMON_VERSION_STRING;
  m.output_dir = parts_.facts.config.output_dir;
  // The counters as the status reply and the stats chunks have them: the writer's, plus every
  // part's (the pool, the windows, the atomics).
  pb::Stats s = snap.stats;
  parts_.fill_stats(&s);
  metrics::CopyCounters(s, &m);
  m.last_write_failed = !snap.last_write_error.empty();
  m.device_busy = snap.device_busy;
  m.stream_busy = snap.stream_busy;
  m.steps = snap.steps;
  m.files = snap.files;
  m.disk_bytes = snap.disk_bytes;
  m.gpu_uuids = snap.gpu_uuids;  // dcgm-exporter's UUID label, once the devices are known
  return m;
}

}  // namespace cupmon

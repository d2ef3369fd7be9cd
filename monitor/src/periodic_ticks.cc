// PeriodicTicks: the flush and stats ticks and what follows a flush (periodic_ticks.h).
#include "periodic_ticks.h"

#include <boost/asio/dispatch.hpp>

#include "cupmon/format/recording_writer.h"

namespace cupmon {

PeriodicTicks::PeriodicTicks(Parts parts, boost::asio::io_context& io,
                             const std::atomic<bool>& stopping,
                             const ThreadChecker& control_thread)
    : parts_(std::move(parts)),
      io_(io),
      stopping_(stopping),
      flush_timer_(io, parts_.clock, stopping, parts_.counters.control_faults),
      stats_timer_(io, parts_.clock, stopping, parts_.counters.control_faults),
      thread_(control_thread) {}

void PeriodicTicks::RebindAllImports() {
  if (!parts_.rebinder) return;
  parts_.counters.imports_rebound.fetch_add(parts_.rebinder->Scan().slots,
                                            std::memory_order_relaxed);
}

void PeriodicTicks::RebindNewImports() {
  if (!parts_.rebinder) return;
  parts_.counters.imports_rebound.fetch_add(parts_.rebinder->ScanIfLoaded().slots,
                                            std::memory_order_relaxed);
}

void PeriodicTicks::StartFlushThread() {
  flusher_ = std::make_unique<PeriodicFlush>(
      parts_.cupti, parts_.clock, [this](PeriodicFlush::Done done) {
        // The buffers the flush handed back are queued by now.
        parts_.auto_window.MarkFlushed();
        PollDroppedRecords(parts_.cupti, parts_.counters);
        // The flush thread posts; on a virtual clock the flush ran on the control thread itself
        // (periodic_flush.h), which runs it at once.
        boost::asio::dispatch(io_, [this, done] { AfterFlush(done); });
      });
  flusher_->Start();
}

void PeriodicTicks::Start() {
  CUPMON_DCHECK_THREAD(thread_);
  flush_timer_.Start(parts_.facts.config.flush_ms, [this] { OnFlushTick(); });
  stats_timer_.Start(parts_.facts.config.stats_ms, [this] { OnStatsTick(); });
}

void PeriodicTicks::OnFlushTick() {
  CUPMON_DCHECK_THREAD(thread_);
  MaybeFault(parts_.faults, "control.tick");
  // Before the flush, so that the sample precedes the records it completes in the stream.
  parts_.clock_domain.Check();
  // The flush runs on its own thread and reports to AfterFlush(); a tick that finds the last
  // one still inside CUPTI does not queue another.
  if (!flusher_->Request()) {
    const int64_t running = flusher_->running_for_ns();
    parts_.behind.NoteFlushStillRunning(running, flusher_->running_since_cupti_ns());
  }
  RebindNewImports();
}

void PeriodicTicks::OnStatsTick() {
  CUPMON_DCHECK_THREAD(thread_);
  // Each flush polls them when it returns; while one is inside CUPTI, CUPTI is not asked here.
  if (flush_running_for_ns() == 0) PollDroppedRecords(parts_.cupti, parts_.counters);
  pb::Calibration cal;
  *cal.add_samples() = TakeCalibrationSample(parts_.cupti, parts_.clock);
  parts_.clock_domain.NoteWritten(cal.samples(0));
  PostToWriter(parts_.queue, [fill = parts_.fill_stats, cal = std::move(cal),
                              now = parts_.clock.RealtimeNs()](RecordingWriter& w) {
    fill(&w.stats());
    w.WriteCalibration(cal);
    w.WriteStats(now);
  });
}

void PeriodicTicks::AfterFlush(PeriodicFlush::Done done) {
  CUPMON_DCHECK_THREAD(thread_);
  if (stopping_.load()) return;
  parts_.behind.NoteFlushTime(done.took_ns, done.began_cupti_ns);
  parts_.takeover.Check();
  if (stats_after_flush_.exchange(false)) {
    PostToWriter(parts_.queue, [fill = parts_.fill_stats,
                                now = parts_.clock.RealtimeNs()](RecordingWriter& w) {
      fill(&w.stats());
      w.WriteStats(now);
    });
  }
}

void PeriodicTicks::RequestFlush() {
  CUPMON_DCHECK_THREAD(thread_);
  stats_after_flush_.store(true);
  flusher_->Request();
}

bool PeriodicTicks::StopFlushThread(std::chrono::steady_clock::time_point deadline) {
  return !flusher_ || flusher_->Stop(deadline);
}

uint64_t PeriodicTicks::flush_running_since_cupti_ns() const {
  return flusher_ ? flusher_->running_since_cupti_ns() : 0;
}

int64_t PeriodicTicks::flush_running_for_ns() const {
  return flusher_ ? flusher_->running_for_ns() : 0;
}

}  // namespace cupmon

// BehindWatch: the BEHIND_BEGIN/BEHIND_END intervals and the dropped-record poll (behind_watch.h).
#include "behind_watch.h"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "cupmon/format/recording_writer.h"
#include "cupmon/monitor/monitor_clock.h"

namespace cupmon {

pb::WindowMarker BehindWatch::Marker(bool begin, uint32_t id, uint64_t cupti_ns,
                                     std::string note) {
  pb::WindowMarker m;
  m.set_window_id(id);
  m.set_edge(begin ? pb::WindowMarker::BEHIND_BEGIN : pb::WindowMarker::BEHIND_END);
  m.set_cupti_ns(cupti_ns);
  m.set_realtime_ns(RealClock().RealtimeNs());
  m.set_note(std::move(note));
  return m;
}

int64_t BehindWatch::ThresholdNs(uint32_t flush_ms) {
  // A non-forced flush only hands over what CUPTI completed; taking longer than the period that
  // calls it means CUPTI's own worker is behind. At least a second, so that a short period set
  // for a test or a burst does not read as a backlog.
  return std::max<int64_t>(flush_ms, 1000) * 1'000'000;
}

int64_t BehindWatch::LagThresholdNs(uint32_t flush_ms) {
  // A flush hands over every buffer whose records are complete, so a buffer's newest record is
  // normally at most a flush period old when it comes; beyond that by ThresholdNs, CUPTI's worker
  // is late.
  return int64_t{flush_ms} * 1'000'000 + ThresholdNs(flush_ms);
}

void BehindWatch::Begin(uint64_t since_cupti_ns, const std::string& why) {
  behind_ = true;
  id_ = static_cast<uint32_t>(counters_.cupti_behind.fetch_add(1, std::memory_order_relaxed) + 1);
  const std::string note =
      why + ": CUPTI's worker is behind its own records and may lose some without counting them";
  PostToWriter(queue_, [m = Marker(true, id_, since_cupti_ns, note)](RecordingWriter& w) {
    w.WriteWindowMarker(m);
  });
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    std::fprintf(stderr, "cupmon: %s\n",
                 (note + "; marked in the files (cupmon-decode info), counted as cupti_behind")
                     .c_str());
}

void BehindWatch::NoteFlushStillRunning(int64_t running_ns, uint64_t since_cupti_ns) {
  CUPMON_DCHECK_THREAD(thread_);
  // Marked while the flush is still inside CUPTI, so that the live counter and the files say so
  // before it returns (if ever); its return then finds the interval open.
  if (behind_ || since_cupti_ns == 0 || running_ns <= ThresholdNs(flush_ms_)) return;
  Begin(since_cupti_ns, "a periodic cuptiActivityFlushAll(0) has not returned for " +
                            std::to_string(running_ns / 1'000'000) + " ms (flush period " +
                            std::to_string(flush_ms_) + " ms)");
}

void BehindWatch::NoteFlushTime(int64_t took_ns, uint64_t began_cupti_ns) {
  CUPMON_DCHECK_THREAD(thread_);
  const int64_t threshold = ThresholdNs(flush_ms_);
  const std::string took = std::to_string(took_ns / 1'000'000) + " ms";
  // Records without timestamps (start = end = 0) mean CUPTI's device buffers are full. After its
  // worker saturated, CUPTI was seen to stop recording most kernels while flushes were fast
  // again and only such records came: so they keep an interval open, and open one.
  const uint64_t zero_ts = pipeline_.Snapshot().stats.zero_timestamp_records();
  const uint64_t new_zero_ts = zero_ts > zero_ts_seen_ ? zero_ts - zero_ts_seen_ : 0;
  zero_ts_seen_ = zero_ts;
  // A buffer delivered long after its newest record ended: CUPTI's worker is that far behind,
  // whether or not a flush waits on it.
  const uint64_t lag = counters_.delivery_lag_peak_ns.exchange(0, std::memory_order_relaxed);
  const bool lagging = lag > static_cast<uint64_t>(LagThresholdNs(flush_ms_));
  if (!behind_ && (took_ns > threshold || new_zero_ts > 0 || lagging)) {
    if (took_ns > threshold) {
      Begin(began_cupti_ns ? began_cupti_ns : 1,
            "a periodic cuptiActivityFlushAll(0) took " + took + " (flush period " +
                std::to_string(flush_ms_) + " ms)");
    } else if (new_zero_ts > 0) {
      Begin(began_cupti_ns ? began_cupti_ns : 1,
            std::to_string(new_zero_ts) +
                " records without timestamps since the last flush (CUPTI's device buffers are "
                "full)");
    } else {
      // From the end of the late buffer's newest record: records after it came late.
      const uint64_t ended =
          counters_.delivery_lag_peak_ended_cupti_ns.load(std::memory_order_relaxed);
      Begin(ended ? ended : 1,
            "CUPTI completed a buffer " + std::to_string(lag / 1'000'000) +
                " ms after its newest record ended (flush period " + std::to_string(flush_ms_) +
                " ms)");
    }
  } else if (behind_ && took_ns < threshold / 2 && new_zero_ts == 0 && !lagging) {
    behind_ = false;
    uint64_t now_cupti = 0;
    cupti_.GetTimestamp(&now_cupti);
    PostToWriter(queue_, [m = Marker(false, id_, now_cupti,
                                     "CUPTI caught up: a flush took " + took +
                                         ", no record without timestamps or delivered late "
                                         "since the last")](
                             RecordingWriter& w) { w.WriteWindowMarker(m); });
  }
}

void BehindWatch::End() {
  if (!behind_) return;
  behind_ = false;
  uint64_t now_cupti = 0;
  cupti_.GetTimestamp(&now_cupti);
  PostToWriter(queue_, [m = Marker(false, id_, now_cupti,
                                   "recording stopped while CUPTI was behind: what it still held "
                                   "is lost unless the final flush delivered it")](
                           RecordingWriter& w) { w.WriteWindowMarker(m); });
}

void PollDroppedRecords(CuptiApi& cupti, MonitorCounters& counters) {
  size_t dropped = 0;
  if (cupti.ActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS)
    counters.dropped_records.fetch_add(dropped, std::memory_order_relaxed);
}

}  // namespace cupmon

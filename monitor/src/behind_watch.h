// BehindWatch: CUPTI behind its own records, seen from the periodic flush, marked as BEHIND_BEGIN
// and BEHIND_END intervals in the stream; and the dropped-record poll. Control thread.
#pragma once

#include <cstdint>
#include <string>

#include "cupmon.pb.h"
#include "cupmon/base/thread_checker.h"
#include "cupmon/monitor/cupti_api.h"
#include "monitor_counters.h"
#include "recording_pipeline.h"
#include "writer_queue.h"

namespace cupmon {

// CUPTI behind its own records: a periodic cuptiActivityFlushAll(0) that took longer than
// ThresholdNs() (CUPTI's worker thread cannot keep up; it may then lose records without counting
// them), records without timestamps since the last flush (its device buffers are full), or a
// buffer completed more than LagThresholdNs() after its newest GPU record ended (the writer's
// delivery lag, MonitorCounters::delivery_lag_peak_ns). Marked BEHIND_BEGIN from the start of
// that flush (for a late buffer: from its newest record's end) and BEHIND_END at the first flush
// that takes under half the threshold with none of the three since the last; counted
// (cupti_behind) and warned about once.
//
// Threading: the Note* functions on the control thread (checked); End() and open() after that
// thread joined, on the stopping thread.
class BehindWatch {
 public:
  // `control_thread`: the control thread's check (ControlLoop's).
  BehindWatch(CuptiApi& cupti, WriterQueue& queue, RecordingPipeline& pipeline,
              MonitorCounters& counters, uint32_t flush_ms, const ThreadChecker& control_thread)
      : cupti_(cupti),
        queue_(queue),
        pipeline_(pipeline),
        counters_(counters),
        flush_ms_(flush_ms),
        thread_(control_thread) {}
  BehindWatch(const BehindWatch&) = delete;
  BehindWatch& operator=(const BehindWatch&) = delete;

  // A BEHIND_BEGIN or BEHIND_END marker of interval `id` at CUPTI time `cupti_ns` (any thread).
  static pb::WindowMarker Marker(bool begin, uint32_t id, uint64_t cupti_ns, std::string note);
  // How long a periodic flush of a `flush_ms` period may take before CUPTI counts as behind.
  static int64_t ThresholdNs(uint32_t flush_ms);
  // How long after its newest record ended a buffer may come before CUPTI counts as behind.
  static int64_t LagThresholdNs(uint32_t flush_ms);

  // Control thread, after each periodic or requested flush returned: it took `took_ns` and began
  // at CUPTI time `began_cupti_ns` (0: unknown).
  void NoteFlushTime(int64_t took_ns, uint64_t began_cupti_ns);
  // Control thread, at a tick that finds the last flush still inside CUPTI, `running_ns` after it
  // began at CUPTI time `since_cupti_ns` (0: none runs).
  void NoteFlushStillRunning(int64_t running_ns, uint64_t since_cupti_ns);
  // At stop, after the control thread joined: closes the interval still open, if any.
  void End();
  // After the control thread joined: whether an interval is open (End() closes it).
  bool open() const { return behind_; }

 private:
  void Begin(uint64_t since_cupti_ns, const std::string& why);

  CuptiApi& cupti_;
  WriterQueue& queue_;
  RecordingPipeline& pipeline_;
  MonitorCounters& counters_;
  const uint32_t flush_ms_;

  const ThreadChecker& thread_;  // the control thread (ControlLoop binds it)
  bool behind_ = false;        // a BEHIND_BEGIN written, its END not yet
  uint32_t id_ = 0;
  uint64_t zero_ts_seen_ = 0;  // zero-timestamp records the writer had counted at the last flush
};

// Any thread, after a flush: adds the records CUPTI dropped since the last poll to
// dropped_records (cuptiActivityGetNumDroppedRecords resets on read). Holds no lock of ours.
void PollDroppedRecords(CuptiApi& cupti, MonitorCounters& counters);

}  // namespace cupmon

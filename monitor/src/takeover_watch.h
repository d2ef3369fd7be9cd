// TakeoverWatch: after each flush, whether another CUPTI client has taken CUPTI's activity
// callbacks (CallbackWatch decides), the GAP_BEGIN/GAP_END markers of that gap, and taking the
// callbacks back after CUPMON_RECLAIM_MS. docs/COEXISTENCE.md. Control thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "callback_watch.h"
#include "cupmon.pb.h"
#include "cupmon/base/thread_checker.h"
#include "cupmon/monitor/buffer_pool.h"
#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/monitor_clock.h"
#include "monitor_counters.h"
#include "session_facts.h"
#include "writer_queue.h"

namespace cupmon {

// Threading: Check() on the control thread (checked); EndOpenGap(), in_gap() and
// last_active_cupti_ns() after that thread joined, on the stopping thread.
class TakeoverWatch {
 public:
  // `control_thread`: the control thread's check (ControlLoop's).
  TakeoverWatch(const SessionFacts& facts, CuptiApi& cupti, BufferPool& pool, WriterQueue& queue,
                MonitorCounters& counters, MonitorClock& clock,
                const ThreadChecker& control_thread)
      : facts_(facts),
        cupti_(cupti),
        pool_(pool),
        queue_(queue),
        counters_(counters),
        clock_(clock),
        thread_(control_thread),
        watch_(facts.config.reclaim_ms) {}
  TakeoverWatch(const TakeoverWatch&) = delete;
  TakeoverWatch& operator=(const TakeoverWatch&) = delete;

  // A GAP_BEGIN or GAP_END marker of takeover gap `gap` at CUPTI time `cupti_ns` (any thread).
  static pb::WindowMarker GapMarker(bool begin, uint32_t gap, uint64_t cupti_ns, std::string note);

  // Control thread, after each periodic or requested non-forced flush returned (callback_watch.h
  // explains the signal): marks a gap's start and end, warns once, and reclaims.
  void Check();
  // At stop, after the control thread joined: writes GAP_END for a gap still open.
  void EndOpenGap();
  // After the control thread joined: whether a gap was open at stop, and the CUPTI time of the
  // last tick that saw cupmon's callbacks run (0: none yet).
  bool in_gap() const { return watch_.in_gap(); }
  uint64_t last_active_cupti_ns() const { return last_active_cupti_ns_; }

 private:
  // cupmon's buffers inside CUPTI: the pool's less those the writer holds (a writer held up by
  // the disk while the job is idle must not read as a takeover).
  uint64_t BuffersInsideCupti() const;
  // Whether CUPTI wrote into any of cupmon's buffers since the last tick.
  bool BuffersGrew();
  void WarnGapOnce();
  // Whether cupmon shares CUPTI through its multiplexer (preload or imports rebound).
  bool Shared() const;
  // Registers cupmon's callbacks and kinds again; the GAP_END note.
  std::string Reclaim(int64_t now_ms);
  void WriteGapMarker(bool begin, uint32_t gap, uint64_t cupti_ns, const std::string& note);

  const SessionFacts& facts_;
  CuptiApi& cupti_;
  BufferPool& pool_;
  WriterQueue& queue_;
  MonitorCounters& counters_;
  MonitorClock& clock_;

  const ThreadChecker& thread_;  // the control thread (ControlLoop binds it)
  CallbackWatch watch_;
  uint64_t last_active_cupti_ns_ = 0;  // CUPTI time of the last tick that saw callbacks run
  std::vector<size_t> fill_;           // per pool slot: bytes CUPTI had written at the last tick
  bool gap_warned_ = false;
};

}  // namespace cupmon

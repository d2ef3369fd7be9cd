// PeriodicFlush: the thread that makes the control thread's periodic cuptiActivityFlushAll(0).
//
// CUPTI's flush blocks until its worker thread has handed over every buffer it completed. When
// that worker is behind its own records (docs/RELIABILITY.md, "CUPTI behind its own records") a
// flush takes seconds. Made on the control thread, it would stall the control socket, /metrics,
// the window timers and the takeover watch for as long; made here, only the next periodic flush
// waits: a request while one runs is coalesced into it, never queued.
//
// On a virtual clock (MonitorClock::timers() non-null: the week test's) there is no thread and
// Request() flushes on the calling thread: virtual time moves only when the test advances it, so
// a flush on another thread would be timed and watched against a clock that ran ahead of it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <thread>

#include "cupmon/base/thread_annotations.h"
#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/monitor_clock.h"

namespace cupmon {

class PeriodicFlush {
 public:
  struct Done {
    int64_t took_ns = 0;          // steady time the flush took
    uint64_t began_cupti_ns = 0;  // CUPTI time when it began (0: cuptiGetTimestamp failed)
  };
  // `on_done` runs on the flush thread after each flush returned, unless Stop() began meanwhile;
  // it must not block (the control loop posts it to its own thread).
  PeriodicFlush(CuptiApi& cupti, MonitorClock& clock, std::function<void(Done)> on_done);
  ~PeriodicFlush();  // Stop() without a deadline, then the join
  PeriodicFlush(const PeriodicFlush&) = delete;
  PeriodicFlush& operator=(const PeriodicFlush&) = delete;

  // Starts the thread ("cupmon-periodic"; none on a virtual clock). Throws std::system_error
  // when it cannot be created.
  void Start();
  // Any thread: asks for one flush. False when one is running or already asked for (the
  // request is coalesced into it), or after Stop().
  bool Request();
  // Any thread: takes no more requests (one asked for and not begun is dropped) and waits until
  // `deadline` for the thread to end. False when a flush is still inside CUPTI then: the thread
  // ends when it returns, and this object must outlive it (the destructor waits).
  bool Stop(std::chrono::steady_clock::time_point deadline);

  // Any thread: the CUPTI time at which the flush in progress began (1 when CUPTI gave no time),
  // and for how long it has run (steady ns); 0 when none runs.
  uint64_t running_since_cupti_ns() const { return began_cupti_ns_.load(std::memory_order_acquire); }
  int64_t running_for_ns() const;

 private:
  void Run() noexcept;
  // One flush with its bookkeeping; the result, for on_done.
  Done FlushOnce();

  CuptiApi& cupti_;
  MonitorClock& clock_;
  const std::function<void(Done)> on_done_;
  const bool inline_;  // a virtual clock: flushes on the requesting thread
  std::thread thread_;

  Mutex mu_;
  std::condition_variable cv_;
  bool requested_ CUPMON_GUARDED_BY(mu_) = false;
  bool running_ CUPMON_GUARDED_BY(mu_) = false;
  bool stopping_ CUPMON_GUARDED_BY(mu_) = false;
  bool ended_ CUPMON_GUARDED_BY(mu_) = false;

  // Written by the flush thread around each flush; read by any thread.
  std::atomic<uint64_t> began_cupti_ns_{0};
  std::atomic<int64_t> began_steady_ns_{0};
};

}  // namespace cupmon

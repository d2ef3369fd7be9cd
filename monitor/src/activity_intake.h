// ActivityIntake: the target of CUPTI's two buffer callbacks. Application threads take buffers
// from the pool; CUPTI's thread interns the names in completed buffers and queues them.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "cupmon/monitor/buffer_pool.h"
#include "cupmon/monitor/monitor_clock.h"
#include "monitor_counters.h"
#include "session_facts.h"
#include "string_table.h"
#include "writer_queue.h"

namespace cupmon {

// Threading: OnBufferRequested runs on application threads (CUPTI's request callback): one
// lock-free pool claim and one relaxed count, no allocation, no lock, no system call.
// OnBufferCompleted runs on CUPTI's thread(s): the string table's lock, then the writer queue's,
// and one read of the monitor's steady clock (the buffer's delivery time, for the writer's
// delivery lag); no I/O, never a call back into CUPTI. Both are noexcept with an exception
// boundary that drops the buffer and counts it.
//
// Publication: the process has one CUPTI callback target. Publish() makes this intake that target
// only once everything it uses exists; Unpublish() clears it. The intake (and the monitor around
// it) must outlive its publication and every buffer CUPTI still holds: the library never frees a
// monitor that has buffers inside CUPTI.
class ActivityIntake {
 public:
  ActivityIntake(const SessionFacts& facts, BufferPool& pool, StringTable& strings,
                 WriterQueue& queue, MonitorCounters& counters, MonitorClock& clock);
  ActivityIntake(const ActivityIntake&) = delete;
  ActivityIntake& operator=(const ActivityIntake&) = delete;

  // False when another intake is published (a second monitor in the process).
  bool Publish() noexcept;
  void Unpublish() noexcept;

  // The callbacks to register with cuptiActivityRegisterCallbacks.
  static CUpti_BuffersCallbackRequestFunc RequestCallback() noexcept;
  static CUpti_BuffersCallbackCompleteFunc CompleteCallback() noexcept;

  void OnBufferRequested(uint8_t** buffer, size_t* size) noexcept;
  void OnBufferCompleted(uint8_t* buffer, size_t valid_size) noexcept;

  // pthread_atfork child handler (async-signal-safe): callbacks do nothing in a forked child.
  static void DisableInForkedChild() noexcept;
  static bool InForkedChild() noexcept;

 private:
  const SessionFacts& facts_;
  BufferPool& pool_;
  StringTable& strings_;
  WriterQueue& queue_;
  MonitorCounters& counters_;
  MonitorClock& clock_;
};

}  // namespace cupmon

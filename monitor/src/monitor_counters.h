// MonitorCounters: the loss and fault counters every part of a monitor adds to.
#pragma once

#include <atomic>
#include <cstdint>

namespace cupmon {

// Memory ordering: relaxed atomics. Each counter is added to by the part named beside it and read
// by anyone (stats chunks, cupmon_get_stats, the control plane); none orders other memory.
struct MonitorCounters {
  std::atomic<uint64_t> callback_calls{0};    // intake: request + completed calls (CallbackWatch)
  std::atomic<uint64_t> foreign_buffers{0};   // intake: completed buffers that are not ours
  std::atomic<uint64_t> lost_buffers{0};      // intake/writer: buffers dropped before the files
  // intake/writer: completed buffers queued to the writer and not yet back in the pool (the
  // takeover watch counts only the pool's buffers that are inside CUPTI).
  std::atomic<uint64_t> buffers_at_writer{0};
  std::atomic<uint64_t> intake_faults{0};     // intake: exceptions caught in the completion path
  std::atomic<uint64_t> writer_faults{0};     // writer: exceptions caught
  std::atomic<uint64_t> control_faults{0};    // control: exceptions caught
  std::atomic<uint64_t> dropped_records{0};   // control/session: cuptiActivityGetNumDroppedRecords
  std::atomic<uint64_t> cupti_gaps{0};        // control: takeover intervals
  std::atomic<uint64_t> stranded_buffers{0};  // control: buffers handed to another client
  std::atomic<uint64_t> imports_rebound{0};   // control: GOT slots sent to the multiplexer
  std::atomic<uint64_t> cupti_behind{0};      // control/stop: intervals CUPTI was behind
  std::atomic<uint64_t> requests_limited{0};  // control: flush/rotate refused by the rate limit
  std::atomic<uint64_t> auto_windows_skipped{0};  // control/writer: slow steps, no window
  std::atomic<uint64_t> auto_steps_timed{0};      // writer: steps the step watch timed
};

}  // namespace cupmon

// MonitorCounters: the loss and fault counters every part of a monitor adds to.
#pragma once

#include <atomic>
#include <cstdint>

#include "cupmon/counters/counter_list.h"

namespace cupmon {

// Memory ordering: relaxed atomics. Each counter is added to by the part that sees the event and
// read by anyone (stats chunks, cupmon_get_stats, the control plane); none orders other memory.
//
// The counters that reach the stats are the ATOMIC rows of the counter list, generated here under
// their Stats names and copied by Monitor::FillStats: the intake adds foreign_buffers and
// intake_faults; the writer writer_faults and auto_steps_timed; the control thread
// control_faults, dropped_records, cupti_gaps, stranded_buffers, imports_rebound and
// control_requests_limited; intake and writer lost_buffers; control and writer
// auto_windows_skipped.
struct MonitorCounters {
#define CUPMON_MONITOR_COUNTER(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  CUPMON_COUNTER_IF_ATOMIC_##source(std::atomic<uint64_t> name{0};)
  CUPMON_COUNTERS(CUPMON_MONITOR_COUNTER)
#undef CUPMON_MONITOR_COUNTER

  // The monitor's own bookkeeping, not in the stats.
  std::atomic<uint64_t> callback_calls{0};  // intake: request + completed calls (CallbackWatch)
  // intake/writer: completed buffers queued to the writer and not yet back in the pool (the
  // takeover watch counts only the pool's buffers that are inside CUPTI).
  std::atomic<uint64_t> buffers_at_writer{0};
  // writer: the largest delivery lag (how long after its newest GPU record ended CUPTI completed a
  // buffer, ns) since the behind watch last took it: it exchanges it for 0 after each flush.
  // Buffers whose records ended before the recording started are not judged.
  std::atomic<uint64_t> delivery_lag_peak_ns{0};
  // writer: the CUPTI time at which the newest record of that buffer ended (stored before the peak
  // is raised; read after it is taken, so it may belong to a later, larger lag).
  std::atomic<uint64_t> delivery_lag_peak_ended_cupti_ns{0};
};

}  // namespace cupmon

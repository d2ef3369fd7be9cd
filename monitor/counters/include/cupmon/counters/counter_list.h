// The one list of the monitor's counters: every cumulative count the Stats message carries, and
// the other surfaces that show it. Each row produces or checks the rest (docs/RELIABILITY.md,
// "The counters, in one list"): adding a counter is adding a row here, then its field in each
// file that users or protoc read (the .proto, cupmon.h, python/cupmon/_capi.py) where it belongs.
#pragma once

// CUPMON_COUNTERS(X) calls X(name, field, source, c_struct, c_offset, prom, prom_name, help) once
// per counter, in Stats field order:
//   name         the field's name in pb::Stats, MonitorStats, cupmon_stats(_sized), the Python
//                stats() dict and, when exported, pb::MetricsView and MetricsSnapshot.
//   field        its field number in `message Stats` (proto/cupmon.proto). Numbers are forever.
//   source       who counts it, which decides how the monitor fills the Stats field:
//                  WRITER  the writer thread counts it into its own pb::Stats (RecordingWriter);
//                  ATOMIC  a relaxed atomic in MonitorCounters (generated from this row), added
//                          to by the thread that sees the event; Monitor::FillStats copies it
//                          (generated);
//                  PART    another part keeps it (the pool, the control loop, the string table, the
//                          writer queue, the multiplexer); Monitor::FillStats asks it by hand.
//   c_struct     where the C API carries it: BASE (cupmon_stats, inside cupmon_stats_sized.base),
//                SIZED (cupmon_stats_sized itself), NO_C (not in the C API).
//   c_offset     its byte offset in that struct (0 with NO_C): the size-versioned ABI, checked at
//                compile time. New C fields are appended to cupmon_stats_sized only.
//   prom         PROM: served on /metrics (MetricsSnapshot, pb::MetricsView, the exposition) as
//                `prom_name`, a counter; NO_PROM: not ("" as prom_name).
//   help         what it counts, one sentence: the HELP line of the Prometheus family when served.
//
// Not counters, so not here: Stats.realtime_ns and Stats.lost_records_by_kind; the C API's
// `strings`, `running`, `window_open` and `stop_timed_out`; the metrics' gauges (files,
// disk_bytes, write_error, cupti_delivery_lag) and busy times.
#define CUPMON_COUNTERS(X)                                                                         \
  X(buffers_completed, 1, WRITER, BASE, 0, NO_PROM, "",                                            \
    "Completed CUPTI buffers the writer took in.")                                                \
  X(records, 2, WRITER, BASE, 8, NO_PROM, "",                                                      \
    "Activity records taken in: records in the files + lost_records + records_deleted.")          \
  X(raw_bytes, 3, WRITER, BASE, 16, PROM, "cupmon_raw_bytes_total",                                \
    "Activity record bytes before encoding.")                                                     \
  X(compressed_bytes, 4, WRITER, BASE, 24, PROM, "cupmon_compressed_bytes_total",                  \
    "Bytes written after encoding and compression.")                                              \
  X(dropped_records, 5, ATOMIC, BASE, 32, PROM, "cupmon_dropped_records_total",                    \
    "Records CUPTI reported as dropped.")                                                         \
  X(pool_exhausted, 6, PART, BASE, 40, PROM, "cupmon_pool_exhausted_total",                        \
    "Buffer requests refused because the buffer pool was exhausted.")                             \
  X(zero_timestamp_records, 7, WRITER, BASE, 48, PROM, "cupmon_zero_timestamp_records_total",      \
    "Records CUPTI delivered without timestamps (its timestamp pool ran out).")                   \
  X(write_errors, 8, WRITER, BASE, 56, PROM, "cupmon_write_errors_total",                          \
    "Failed writes of recording files.")                                                          \
  X(chunks_lost, 9, WRITER, BASE, 64, NO_PROM, "",                                                 \
    "Chunks not written because of write errors.")                                                \
  X(files_deleted, 10, WRITER, NO_C, 0, NO_PROM, "", "Recording files retention deleted.")         \
  X(bytes_deleted, 11, WRITER, NO_C, 0, NO_PROM, "", "Bytes of the files retention deleted.")      \
  X(records_deleted, 12, WRITER, NO_C, 0, NO_PROM, "",                                             \
    "Records inside the files retention deleted.")                                                \
  X(kernel_records_deleted, 13, WRITER, NO_C, 0, NO_PROM, "",                                      \
    "Kernel records inside the files retention deleted.")                                         \
  X(buffers_in_flight, 14, PART, BASE, 80, NO_PROM, "",                                            \
    "Pool buffers CUPTI holds or the writer has not returned yet (now, not cumulative).")         \
  X(buffers_free, 15, PART, BASE, 72, NO_PROM, "",                                                 \
    "Pool buffers free (now, not cumulative).")                                                   \
  X(kernel_records, 16, WRITER, NO_C, 0, PROM, "cupmon_kernel_records_total",                      \
    "Kernel activity records received from CUPTI.")                                               \
  X(memcpy_records, 17, WRITER, NO_C, 0, PROM, "cupmon_memcpy_records_total",                      \
    "Memcpy activity records received from CUPTI.")                                               \
  X(memset_records, 18, WRITER, NO_C, 0, PROM, "cupmon_memset_records_total",                      \
    "Memset activity records received from CUPTI.")                                               \
  X(windows_opened, 19, PART, SIZED, 136, PROM, "cupmon_windows_opened_total",                     \
    "Trace windows opened.")                                                                      \
  X(truncated_buffers, 21, WRITER, SIZED, 216, PROM, "cupmon_truncated_buffers_total",             \
    "Buffers whose records could not all be walked (a record kind of unknown size).")             \
  X(cupti_gaps, 22, ATOMIC, SIZED, 144, PROM, "cupmon_cupti_gaps_total",                           \
    "Intervals another CUPTI client held CUPTI's activity callbacks, marked in the files; no "     \
    "records inside.")                                                                            \
  X(foreign_buffers, 23, ATOMIC, NO_C, 0, NO_PROM, "",                                             \
    "Completed buffers that were not cupmon's (another CUPTI client's).")                         \
  X(stranded_buffers, 24, ATOMIC, SIZED, 208, PROM, "cupmon_stranded_buffers_total",               \
    "cupmon buffers CUPTI handed to another CUPTI client; their records are lost to cupmon.")     \
  X(shared_client_records, 25, PART, NO_C, 0, NO_PROM, "",                                         \
    "Preloaded: records copied to the other CUPTI client.")                                       \
  X(shared_client_undelivered, 26, PART, NO_C, 0, NO_PROM, "",                                     \
    "Preloaded: the other CUPTI client's records it could not be given.")                         \
  X(lost_records, 27, WRITER, SIZED, 120, PROM, "cupmon_lost_records_total",                       \
    "Records taken in that never reached the files (a full disk, write errors).")                 \
  X(lost_kernel_records, 28, WRITER, SIZED, 128, NO_PROM, "",                                      \
    "Of lost_records: KERNEL and CONCURRENT_KERNEL records.")                                     \
  X(writer_faults, 40, ATOMIC, SIZED, 152, NO_PROM, "",                                            \
    "Exceptions caught on the writer thread (the item was dropped).")                             \
  X(control_faults, 41, ATOMIC, SIZED, 160, NO_PROM, "",                                           \
    "Exceptions caught on the control thread.")                                                   \
  X(intake_faults, 42, ATOMIC, SIZED, 168, NO_PROM, "",                                            \
    "Exceptions caught in CUPTI's completion callback (the buffer was dropped).")                 \
  X(lost_buffers, 43, ATOMIC, SIZED, 112, PROM, "cupmon_lost_buffers_total",                       \
    "Completed CUPTI buffers dropped before the writer (faults, stop).")                          \
  X(strings_refused, 44, PART, SIZED, 176, NO_PROM, "",                                            \
    "Names not kept: the string table reached its byte cap.")                                     \
  X(labels_refused, 45, PART, SIZED, 184, NO_PROM, "",                                             \
    "Annotation pushes refused: the label registry is full.")                                     \
  X(tasks_dropped, 46, PART, SIZED, 192, NO_PROM, "",                                              \
    "Writer tasks dropped: the writer queue was full.")                                           \
  X(control_requests_limited, 47, ATOMIC, NO_C, 0, NO_PROM, "",                                    \
    "Flush and rotate requests refused by the rate limit.")                                       \
  X(auto_windows_skipped, 48, ATOMIC, NO_C, 0, NO_PROM, "",                                        \
    "Slow steps that opened no window: one was open, or MIN_GAP had not passed.")                 \
  X(auto_steps_timed, 49, ATOMIC, NO_C, 0, NO_PROM, "",                                            \
    "Steps the writer's step watch timed (CUPMON_AUTO_WINDOW).")                                  \
  X(imports_rebound, 50, ATOMIC, SIZED, 224, NO_PROM, "",                                          \
    "Other objects' CUPTI imports pointed at cupmon's multiplexer.")                              \
  X(windows_refused, 51, PART, NO_C, 0, PROM, "cupmon_windows_refused_total",                      \
    "Trace window requests refused because a window was open (one window at a time).")            \
  X(trigger_signals, 52, PART, NO_C, 0, NO_PROM, "",                                               \
    "Trigger signals received (each opened a window or was refused).")                            \
  X(cupti_behind, 53, ATOMIC, SIZED, 232, PROM, "cupmon_cupti_behind_total",                      \
    "Intervals in which CUPTI was behind its own records and may have lost some uncounted.")      \
  X(step_intervals_dropped, 54, ATOMIC, NO_C, 0, PROM, "cupmon_step_intervals_dropped_total",    \
    "Activities left out of the per-step sums: over the writer's cap, or after their step.")      \
  X(steps_cut, 55, ATOMIC, NO_C, 0, PROM, "cupmon_steps_cut_total",                                \
    "Steps not added to the cupmon_step_* sums because some of their activities were dropped.")   \
  /* A new counter goes above this line, with the next free Stats field number. */

// Keeps its arguments in the rows of one kind and drops them in the others, for generating code
// from a subset: CUPMON_COUNTER_IF_<kind>_##column(code...). Every value of a column must have a
// definition for each kind that selects on that column.
#define CUPMON_COUNTER_IF_ATOMIC_WRITER(...)
#define CUPMON_COUNTER_IF_ATOMIC_ATOMIC(...) __VA_ARGS__
#define CUPMON_COUNTER_IF_ATOMIC_PART(...)
#define CUPMON_COUNTER_IF_BASE_BASE(...) __VA_ARGS__
#define CUPMON_COUNTER_IF_BASE_SIZED(...)
#define CUPMON_COUNTER_IF_BASE_NO_C(...)
#define CUPMON_COUNTER_IF_SIZED_BASE(...)
#define CUPMON_COUNTER_IF_SIZED_SIZED(...) __VA_ARGS__
#define CUPMON_COUNTER_IF_SIZED_NO_C(...)
#define CUPMON_COUNTER_IF_PROM_PROM(...) __VA_ARGS__
#define CUPMON_COUNTER_IF_PROM_NO_PROM(...)

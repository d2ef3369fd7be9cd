/* cupmon C API: start, stop, flush and read the counters of the in-process CUDA activity monitor.
 * Plain C with fixed-width types, usable from C, C++ and Python ctypes (examples/python). */
#ifndef CUPMON_CUPMON_H_
#define CUPMON_CUPMON_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUPMON_API __attribute__((visibility("default")))

/* Configuration. Always fill it with cupmon_config_init() first: it sets the defaults documented
 * in monitor/README.md. The C API reads CUPMON_* environment variables only for the control plane,
 * which this struct has no fields for: CUPMON_CONTROL_DIR, CUPMON_REGISTRY_DIR, CUPMON_SIGNAL,
 * CUPMON_WINDOW_MS, CUPMON_WINDOW_KINDS, CUPMON_API_FILTER, CUPMON_METRICS_ADDRESS. A NULL
 * string or a zero number keeps the default. Strings are copied by cupmon_start(). */
typedef struct cupmon_config {
  uint32_t struct_size;     /* set by cupmon_config_init; lets later versions add fields */
  uint32_t flush_ms;        /* periodic non-forced flush (default 1000) */
  const char* output_dir;   /* default ${TMPDIR:-/tmp}/cupmon-<uid> */
  const char* kinds;        /* comma-separated, default "concurrent_kernel,memcpy,memset" */
  const char* encoding;     /* "columns-delta" (default), "columns", "zstd", "stored" */
  uint64_t buffer_bytes;    /* default 4 MiB */
  uint64_t pool_bytes;      /* default 64 MiB */
  uint64_t file_bytes;      /* default 64 MiB */
  uint64_t retention_bytes; /* default 2 GiB */
  uint32_t retention_files; /* default 0 (no count limit) */
  int32_t zstd_level;       /* default 1 */
  uint32_t stats_ms;        /* stats + calibration chunks (default 10000) */
  uint32_t zero_buffers;    /* 1: writer pre-zeroes buffers (default 0) */
} cupmon_config;

/* Counters since start (cumulative). */
typedef struct cupmon_stats {
  uint64_t buffers_completed;
  uint64_t records;
  uint64_t raw_bytes;
  uint64_t compressed_bytes;
  uint64_t dropped_records;
  uint64_t pool_exhausted;
  uint64_t zero_timestamp_records;
  uint64_t write_errors;
  uint64_t chunks_lost;
  uint64_t buffers_free;
  uint64_t buffers_in_flight;
  uint64_t strings;
  uint32_t running; /* 1 while a monitor is running */
  uint32_t reserved;
} cupmon_stats;

/* Every counter of cupmon_stats and those added since, for cupmon_get_stats_sized(). Fields are only
 * ever appended: a caller passes the size it was built with, the library fills what both know and
 * says in `filled` how many bytes that was, so either side may be the newer one. */
typedef struct cupmon_stats_sized {
  uint64_t filled; /* bytes the library wrote, this field included */
  cupmon_stats base;
  uint64_t lost_buffers; /* completed CUPTI buffers dropped before the writer (faults, stop) */
  /* Records in chunks that could not be written (a full disk, write errors): records taken in =
   * records in the files + lost_records + records deleted by retention. */
  uint64_t lost_records;
  uint64_t lost_kernel_records; /* of lost_records: KERNEL and CONCURRENT_KERNEL */
  uint64_t windows_opened;
  uint64_t cupti_gaps;       /* another CUPTI client took CUPTI (docs/COEXISTENCE.md) */
  uint64_t writer_faults;    /* faults absorbed instead of ending the process (docs/RELIABILITY.md) */
  uint64_t control_faults;
  uint64_t intake_faults;
  uint64_t strings_refused;  /* names not kept: the string table is full */
  uint64_t labels_refused;   /* annotation pushes refused: the label registry is full */
  uint64_t tasks_dropped;    /* writer tasks dropped: the writer queue was full */
  uint32_t window_open;      /* 1 while a trace window is open */
  uint32_t stop_timed_out;   /* 1 when the stop gave up waiting (CUPMON_EXIT_TIMEOUT_MS) */
  uint64_t stranded_buffers; /* cupmon buffers CUPTI handed to another CUPTI client */
  uint64_t truncated_buffers; /* buffers not walked to their end (a record kind of unknown size) */
  uint64_t imports_rebound;  /* other objects' CUPTI imports sent to cupmon (docs/COEXISTENCE.md) */
  uint64_t cupti_behind;     /* intervals CUPTI was behind its own records (docs/RELIABILITY.md) */
} cupmon_stats_sized;

CUPMON_API void cupmon_config_init(cupmon_config* config);
/* Starts monitoring. 0 on success, -1 on error (see cupmon_last_error). A second start while one is
 * running (including one started by CUDA_INJECTION64_PATH) is an error. */
CUPMON_API int cupmon_start(const cupmon_config* config);
/* Forced flush, final stats and footer; the files are complete when it returns. 0, or -1. */
CUPMON_API int cupmon_stop(void);
/* Non-forced flush; returns once the delivered buffers are written. 0, or -1. */
CUPMON_API int cupmon_flush(void);
/* Fills *stats. 0, or -1 when no monitor was ever started. */
CUPMON_API int cupmon_get_stats(cupmon_stats* stats);
/* Fills the first `size` bytes of *stats at most (size = sizeof(cupmon_stats_sized) as the caller
 * knows it, at least 8) and sets stats->filled. 0, or -1: null pointer, size below 8, no monitor
 * was ever started. */
CUPMON_API int cupmon_get_stats_sized(cupmon_stats_sized* stats, size_t size);
/* Trace windows (monitor/README.md, docs/CONTROL.md). Opens a window now: the window kinds are
 * enabled on top of the always-on kinds for duration_ms (0: the configured default, CUPMON_WINDOW_MS
 * or 5000). kinds: NULL or "" for the configured window kinds, else a comma-separated list of
 * runtime, driver, overhead, synchronization, cuda_event, external_correlation (any case).
 * Returns the window id (> 0), or -1: not running, a window is already open (requests while one is
 * open are refused), unknown kind, duration above 24 h. Blocks until the kinds are enabled. */
CUPMON_API int cupmon_window_open(uint32_t duration_ms, const char* kinds);
/* Closes the open window early (END marker note "closed"). 0, or -1 when none is open. */
CUPMON_API int cupmon_window_close(void);
/* Annotations: labels the GPU work launched by this thread until the matching pop ("step 12",
 * "forward"); they nest, per thread. Implemented with CUPTI external correlation (CUSTOM1); the
 * label goes into the string table and the decoder shows it next to the kernels. Records exist
 * only while EXTERNAL_CORRELATION is enabled: inside trace windows by default, always when
 * external_correlation is among the always-on kinds. 0, or -1 (not running, pop without push). */
CUPMON_API int cupmon_annotation_push(const char* label);
CUPMON_API int cupmon_annotation_pop(void);

/* The calling thread's last error message ("" if none). Valid until the thread's next call. */
CUPMON_API const char* cupmon_last_error(void);

/* What this library is, as the tools' --version print it: lines "libcupmon.so <version>",
 * "revision: <git describe>", "format: writes <major>.<minor>, reads <major>.x" and
 * "cupti: <CUPTI_API_VERSION built against>", separated by '\n', no final newline. Callable at any
 * time, from any thread, without cupmon_start(); the string lives as long as the process. */
CUPMON_API const char* cupmon_version(void);

#ifdef __cplusplus
}
#endif

#endif /* CUPMON_CUPMON_H_ */

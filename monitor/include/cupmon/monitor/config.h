// The monitor's configuration: defaults, parsing of the CUPMON_* environment variables and of
// the kind list. Shared by the injection entry point, the C API and cupmon-run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cupmon/base/error.h"
#include "cupmon/format/chunk.h"

namespace cupmon {

// What the automatic windows' slow-step test compares (CUPMON_AUTO_WINDOW_BY): the step time, the
// step's GPU work outside collectives, its host gap, or work + host gap ("own": what a rank adds
// to a job's step, as against waiting for the others in a collective).
enum class AutoWindowBy { kStep, kWork, kHostGap, kOwn };

struct MonitorConfig {
  std::string output_dir;  // empty: DefaultOutputDir()
  // CUpti_ActivityKind values enabled for the whole run.
  std::vector<uint32_t> kinds = {10 /*CONCURRENT_KERNEL*/, 1 /*MEMCPY*/, 2 /*MEMSET*/};
  uint64_t buffer_bytes = 4ull << 20;  // 4 MiB, as Kineto; CUPTI recommends 1-10 MB
  uint64_t pool_bytes = 64ull << 20;   // 16 buffers of 4 MiB
  uint32_t flush_ms = 1000;            // periodic non-forced flush; 0: none
  // After another CUPTI client took CUPTI's callbacks (a gap, docs/COEXISTENCE.md), cupmon
  // registers its own again after this long; 0: never.
  uint32_t reclaim_ms = 10000;
  uint32_t stats_ms = 10000;           // periodic stats + calibration chunks; 0: only at stop
  uint64_t file_bytes = 64ull << 20;
  uint64_t retention_bytes = 2ull << 30;
  uint32_t retention_files = 0;
  int32_t zstd_level = 1;
  Encoding encoding = Encoding::kColumnsDeltaZstd;
  // Hand CUPTI buffers that the writer zeroed (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER=1)
  // instead of letting CUPTI zero them on the launching thread. Off by default
  // (docs/PERFORMANCE.md, CUPTI's own cost and its attributes).
  bool zero_buffers = false;
  // Injected without the preload library, or started through the C API after libcupti was
  // loaded: point other objects' imports of CUPTI's activity entry points at cupmon's
  // multiplexer, so that another client (torch.profiler) shares CUPTI instead of taking it
  // (docs/COEXISTENCE.md). CUPMON_REBIND_IMPORTS=0: leave them, and rely on the takeover watch.
  bool rebind_imports = true;
  // CUPTI activity attributes (cuptiActivitySetAttribute before the buffer callbacks are
  // registered and any kind is enabled); unset: CUPTI's own default stays. docs/CONTROL.md lists
  // them, docs/PERFORMANCE.md says what they cost. After start, only the ones CUPTI accepted.
  struct CuptiAttributes {
    std::optional<bool> per_thread_buffers;             // PER_THREAD_ACTIVITY_BUFFER (13.0: 1)
    std::optional<uint64_t> device_buffer_bytes;        // DEVICE_BUFFER_SIZE (3,200,000)
    std::optional<uint64_t> device_buffer_preallocate;  // DEVICE_BUFFER_PRE_ALLOCATE_VALUE (3)
    std::optional<uint64_t> device_buffer_pool_limit;   // DEVICE_BUFFER_POOL_LIMIT (250)
    bool Any() const {
      return per_thread_buffers || device_buffer_bytes || device_buffer_preallocate ||
             device_buffer_pool_limit;
    }
  };
  CuptiAttributes cupti_attributes;

  // Trace windows (monitor/README.md, docs/CONTROL.md). Kinds a window adds on top of `kinds`:
  // RUNTIME, DRIVER, OVERHEAD, SYNCHRONIZATION, CUDA_EVENT, EXTERNAL_CORRELATION.
  // MARKER (12): NVTX ranges and marks, recorded when NVTX's injection is libcupti (cupmon-run).
  std::vector<uint32_t> window_kinds = {5, 4, 17, 38, 36, 39, 12};
  uint32_t window_ms = 5000;  // duration of a window opened by the signal
  // API names whose records a window leaves out (cuptiActivityEnableRuntimeApi/DriverApi(cbid, 0)
  // after the kind is enabled). A name matches the CUPTI callback name with or without its
  // "_vNNNN" suffix. The last four are queries PyTorch's launch path makes about as often as it
  // launches (seen inside windows on the H200), without GPU work of their own.
  std::vector<std::string> api_filter = {
      "cudaGetDevice",   "cudaSetDevice",   "cudaGetLastError",
      "cudaEventCreate", "cudaEventCreateWithFlags", "cudaEventDestroy",
      "cuCtxGetCurrent", "cuDevicePrimaryCtxGetState", "cuKernelGetAttribute",
      "cudaDeviceGetAttribute", "cuKernelGetName", "cuKernelGetFunction",
      "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags"};
  // Control plane: socket <control_dir>/<pid>.sock and a signal trigger.
  bool control = true;          // CUPMON_CONTROL_DIR=off turns the whole control plane off
  std::string control_dir;      // empty: <output_dir>/control
  std::string registry_dir;     // empty: the control library's default (cupmonctl looks there)
  int signal_number = 12;       // SIGUSR2; 0: no signal trigger
  // Process policy (docs/RELIABILITY.md). Stop at exit, and the final flush on SIGTERM/SIGINT,
  // wait at most this long for the writer (a hung file system must not hang the job's exit).
  uint32_t exit_timeout_ms = 2000;
  // SIGTERM and SIGINT without a handler of the application: flush (bounded by exit_timeout_ms),
  // then the default action (the process ends as it would have without cupmon).
  bool term_flush = true;
  // Windows that open themselves (CUPMON_AUTO_WINDOW, monitor/README.md): the writer follows
  // steps in the always-on kernel records and asks for a window of window_kinds/window_ms when a
  // step takes longer than auto_window_factor times the median of the steps before it and longer
  // than the median plus 10 median absolute deviations, once at least auto_window_min_steps
  // steps were timed; at most one per auto_window_min_gap_ms.
  bool auto_window = false;
  double auto_window_factor = 3;              // > 1, at most 1000
  // CUPMON_AUTO_WINDOW_ANCHOR=kernel:TEXT: a step begins at each kernel whose name contains TEXT
  // (this field); empty: steps are found in the kernel-name pattern.
  std::string auto_window_anchor_kernel;
  uint32_t auto_window_min_steps = 10;        // 3 .. 100000
  uint64_t auto_window_min_gap_ms = 600000;   // 10 min; 0: no gap (still never while open)
  // CUPMON_AUTO_WINDOW_BY: the quantity the slow-step test runs on (docs/CONTROL.md).
  AutoWindowBy auto_window_by = AutoWindowBy::kStep;
  // CUPMON_STEP_METRICS: the writer sums every step's work, collective time and host gap
  // (cupmon_step_*_total, the status reply). Unset: off.
  std::optional<bool> step_metrics;
  std::string metrics_address;  // "127.0.0.1:9464"; empty: no metrics endpoint
  bool metrics_allow_remote = false;  // CUPMON_METRICS_ALLOW_REMOTE=1: a non-loopback address
};

// Whether the writer sums steps: CUPMON_STEP_METRICS (default off), and always for
// CUPMON_AUTO_WINDOW with a quantity other than the step time.
bool SumsSteps(const MonitorConfig& c);

// ${TMPDIR:-/tmp}/cupmon-<uid>: per user, so that users on one host do not collide.
std::string DefaultOutputDir();

// Parses "4M", "512K", "1G", "123" (binary suffixes, optional trailing "iB"/"B").
Expected<uint64_t> ParseSize(std::string_view text);
// Parses a comma-separated list of kind names ("concurrent_kernel,memcpy") or numbers.
// Unknown names are reported in `warnings` and skipped.
std::vector<uint32_t> ParseKinds(std::string_view text, std::vector<std::string>* warnings);
const char* KindName(uint32_t kind);
const char* EncodingConfigName(Encoding e);
Expected<Encoding> ParseEncoding(std::string_view text);

// Applies CUPMON_* variables found through `getenv` on top of `config`. A bad value leaves the
// default in place and adds one line to `warnings` naming the variable.
using GetEnvFn = const char* (*)(const char*);
void ApplyEnvironment(MonitorConfig* config, std::vector<std::string>* warnings,
                      GetEnvFn getenv_fn = nullptr);

// Applies only the control-plane and process-policy variables (CUPMON_CONTROL_DIR,
// CUPMON_REGISTRY_DIR, CUPMON_EXIT_TIMEOUT_MS, CUPMON_TERM_FLUSH, CUPMON_SIGNAL,
// CUPMON_WINDOW_MS, CUPMON_WINDOW_KINDS, CUPMON_API_FILTER, CUPMON_METRICS_ADDRESS,
// CUPMON_METRICS_ALLOW_REMOTE, CUPMON_AUTO_WINDOW*). The C API reads
// these from the environment because cupmon_config has no fields for them; ApplyEnvironment calls it.
void ApplyControlEnvironment(MonitorConfig* config, std::vector<std::string>* warnings,
                             GetEnvFn getenv_fn = nullptr);

// Applies only CUPMON_CUPTI_PER_THREAD_BUFFERS, CUPMON_CUPTI_DEVICE_BUFFER_SIZE,
// CUPMON_CUPTI_DEVICE_BUFFER_PREALLOCATE and CUPMON_CUPTI_DEVICE_BUFFER_POOL_LIMIT (CUPTI's
// activity attributes; cupmon_config has no fields for them, so the C API reads them here too).
// ApplyEnvironment calls it. Ranges: per-thread 0 or 1; device buffer 64K..1G; pre-allocate
// 0..4096 buffers; pool limit 1..4096 buffers (NormalizeConfig checks pre-allocate < limit).
void ApplyCuptiAttributeEnvironment(MonitorConfig* config, std::vector<std::string>* warnings,
                                    GetEnvFn getenv_fn = nullptr);

// "10m", "90s", "2h", "600000ms" or a bare number of milliseconds -> milliseconds.
Expected<uint64_t> ParseDurationMs(std::string_view text);
// A slowness factor: a number above 1 and at most 1000 ("1.5").
Expected<double> ParseSlowFactor(std::string_view text);
// CUPMON_AUTO_WINDOW_ANCHOR: "kernel:TEXT" -> TEXT; "annotation:NAME" is refused (NVTX records
// reach the writer only inside windows) with a message that says so.
Expected<std::string> ParseStepAnchor(std::string_view text);
// CUPMON_AUTO_WINDOW_BY: "step", "work", "host-gap" or "own"; and the name of each.
Expected<AutoWindowBy> ParseAutoWindowBy(std::string_view text);
const char* AutoWindowByName(AutoWindowBy by);

// "USR2", "SIGUSR2", "usr1", "10" -> the signal number; "off" or "0" -> 0.
Expected<int> ParseSignal(std::string_view text);

// Checks ranges and derived values (at least two buffers, 8-byte multiple sizes). Adjusts and warns.
void NormalizeConfig(MonitorConfig* config, std::vector<std::string>* warnings);

}  // namespace cupmon

// The monitor session: starts and stops the parts of an always-on monitor in order, one part per
// thread (monitor/README.md draws them):
//   ActivityIntake     application threads (buffer requests) and CUPTI's thread (completions)
//   StringTable        names and annotation labels, own lock, byte caps
//   RecordingPipeline  the writer thread: RecordingWriter, busy time, the published snapshot
//   ControlLoop        the control thread: timers, calibration, takeover watch, trace window,
//                      control plane and metrics endpoint
// and applies the process policy: one monitor at a time, fork, bounded stop at exit.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/base/error.h"
#include "cupmon/base/file_system.h"
#include "cupmon/base/thread_annotations.h"
#include "cupmon/control/control_plane.h"
#include "cupmon/counters/counter_list.h"
#include "cupmon/format/record_sizes.h"
#include "cupmon/monitor/config.h"
#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/fault_injection.h"
#include "cupmon/monitor/monitor_clock.h"

namespace cupmon {

class ImportRebinder;


class ActivityIntake;
class AutoWindowMailbox;
class BufferPool;
class ControlLoop;
class RecordingPipeline;
class RecordingWriter;
class StringTable;
class WriterQueue;
struct MonitorCounters;
struct SessionFacts;

// What the CUDA driver tells about the machine (filled by ProbeCudaDriver(), or by a test).
struct DriverInfo {
  int32_t driver_version = 0;
  int32_t runtime_version = 0;
  std::vector<pb::Device> devices;
};
// Reads driver/runtime versions and devices through libcuda.so.1 loaded with dlopen. Never calls
// cuInit: when CUDA is not initialised yet, devices are left out. Missing libcuda: empty result.
DriverInfo ProbeCudaDriver();

struct MonitorOptions {
  MonitorConfig config;
  CuptiApi* cupti = nullptr;        // not owned; must outlive the monitor
  std::string entry_point = "api";  // "injection", "api", "test-double"
  bool synthetic = false;           // records come from the test double
  // Called once on the writer thread before the first file is opened (at the first completed
  // buffer, or at stop). Null: ProbeCudaDriver.
  std::function<DriverInfo()> driver_probe;
  FileSystem* fs = nullptr;         // null: the real file system
  // TEST HOOK: throws at named points of the monitor's threads (fault_injection.h). Null in
  // production.
  FaultInjector fault_injector;
  // Injection without the preload library: other objects' imports of CUPTI's activity entry
  // points are pointed at the multiplexer's (docs/COEXISTENCE.md), at start and, for objects
  // loaded later, on the flush timer. Not owned; used by one monitor at a time. Null: none.
  ImportRebinder* rebinder = nullptr;
  // What the timers, markers, stats and calibration samples read time from (monitor_clock.h).
  // Null: the process's clocks. Not owned; must outlive the monitor. Stop()'s bounds stay on real
  // time whatever the clock.
  MonitorClock* clock = nullptr;
};

// Counters for cupmon_get_stats and the control plane. Cumulative since start.
struct MonitorStats {
  // Every row of the counter list (cupmon/counters/counter_list.h), under its Stats name.
#define CUPMON_MONITOR_STAT(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  uint64_t name = 0;
  CUPMON_COUNTERS(CUPMON_MONITOR_STAT)
#undef CUPMON_MONITOR_STAT
  uint64_t strings = 0;  // names in the string table
  bool window_open = false;
  uint64_t auto_windows_opened = 0;  // windows opened by a slow step (CUPMON_AUTO_WINDOW)
  bool stop_timed_out = false;       // Stop() gave up waiting for the writer or control thread
  std::string current_file;
  std::string last_write_error;
};

// Threading: Start, Stop and FlushAndWait from application threads (never from the monitor's own
// threads or CUPTI's callbacks); GetStats, RequestWindow and the annotation calls from any
// application thread. Only one monitor can run per process at a time, because CUPTI's callbacks
// are global. A started monitor must not be destroyed while CUPTI may still call back: the library
// never destroys one; tests destroy theirs after Stop() with the test double quiesced.
class Monitor final {
 public:
  // Default bound on Stop(): the final flush, the writer's last chunks and fdatasync.
  static constexpr std::chrono::milliseconds kDefaultStopTimeout{2000};
  // After SIGTERM/SIGINT (CUPMON_TERM_FLUSH): the process ends with the default action at most
  // exit_timeout_ms + kTermGraceMs after the signal, even when the final flush hangs.
  static constexpr uint32_t kTermGraceMs = 1000;

  // Probes CUPTI, registers the callbacks, enables the kinds, then starts the writer and control
  // threads. Errors: another monitor is running, libcupti refused (another CUPTI client:
  // CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_...), a thread could not be created. On any error nothing is
  // left running: CUPTI's kinds are off again, no file was created.
  static Expected<std::unique_ptr<Monitor>> Start(MonitorOptions options);
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // Forced flush, disables the kinds, writes final stats and the footer, stops the threads.
  // Waits at most `timeout` for the writer and control threads (a hung file system must not hang
  // the job's exit); returns false when it gave up (the threads are left to the process's exit).
  // Idempotent.
  bool Stop(std::chrono::milliseconds timeout = kDefaultStopTimeout) CUPMON_EXCLUDES(stop_mu_);
  // Non-forced flush, then waits until the writer has written everything queued so far.
  void FlushAndWait();
  MonitorStats GetStats() const;

  // Trace windows (runs on the control thread; this waits for its answer). duration_ms 0: the
  // configured window_ms. kinds empty: the configured window kinds.
  Expected<uint32_t> RequestWindow(uint32_t duration_ms, std::vector<uint32_t> kinds,
                                   pb::TriggerSource source);
  Expected<void> RequestCloseWindow();
  // Annotations, on the annotating application thread: interns `label` and pushes it as a CUSTOM1
  // external correlation id. Records exist only while EXTERNAL_CORRELATION is on (inside windows
  // by default). After a thread's first push of a label: no lock, no allocation.
  Expected<uint64_t> PushAnnotation(std::string_view label);
  Expected<void> PopAnnotation();

  // <control_dir>/<pid>.sock, or empty when the control plane is off or failed to start.
  std::string control_socket_path() const;
  uint16_t metrics_port() const;
  // The control plane's view of the monitor; call its methods on the control thread only
  // (RunOnControl).
  control::ControlTarget& control_target();
  bool RunOnControl(std::function<void()> task);

  const MonitorConfig& config() const;
  const std::string& entry_point() const;
  const std::vector<uint32_t>& enabled_kinds() const;
  const RecordSizeTable& record_sizes() const;
  uint32_t cupti_version() const;
  bool stopped() const { return stopped_.load(); }
  // Buffers CUPTI still holds (a monitor with buffers out must never be freed).
  size_t buffers_in_flight() const;

  // pthread_atfork child handler: the child never touches the parent's threads, locks or files.
  static void DisableInForkedChild() noexcept;
  static bool InForkedChild() noexcept;

 private:
  explicit Monitor(MonitorOptions options);
  MonitorClock& clock() const { return options_.clock ? *options_.clock : RealClock(); }
  Expected<void> Init();
  void Abandon() noexcept;
  void OnTerminationSignal(int sig);
  void FillStats(pb::Stats* s) const;
  // Stop, writer thread: `held` buffers that never came back from CUPTI's forced flush, with no
  // takeover seen, are a lost interval: a GAP_BEGIN/GAP_END pair, counted as a gap and as stranded.
  void MarkBuffersNotReturned(RecordingWriter& w, uint64_t held, uint64_t last_active_ns);
  // Stop, writer thread: a periodic flush still running at stop, begun at `since_cupti_ns`: a
  // BEHIND_BEGIN/BEHIND_END pair up to now, counted as cupti_behind.
  void MarkStuckFlush(RecordingWriter& w, uint64_t since_cupti_ns);
  // Stop: CUPTI's disable and forced flush, on a thread of their own; false when they had not
  // returned by the deadline (they may still, later: their buffers then go back to the pool).
  bool FinalFlushWithin(std::chrono::steady_clock::time_point deadline,
                        std::chrono::milliseconds timeout);

  MonitorOptions options_;
  CuptiApi& cupti_;
  // Built in Init before any thread starts, then read-only (session_facts.h).
  std::unique_ptr<SessionFacts> facts_;
  std::unique_ptr<MonitorCounters> counters_;
  std::unique_ptr<BufferPool> pool_;
  std::unique_ptr<StringTable> strings_;
  std::unique_ptr<WriterQueue> queue_;
  std::unique_ptr<ActivityIntake> intake_;
  std::unique_ptr<AutoWindowMailbox> auto_window_;  // writer -> control: slow steps
  std::unique_ptr<RecordingPipeline> pipeline_;
  std::unique_ptr<ControlLoop> control_;
  std::unique_ptr<std::thread> writer_thread_;
  std::vector<uint32_t> enabled_kinds_;  // kinds this monitor enabled (disabled at stop/abandon)
  bool published_ = false;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> stop_timed_out_{false};
  Mutex stop_mu_;  // serialises Stop() callers; never taken by callbacks
};

}  // namespace cupmon

// The always-on monitor: owns the buffer pool, the CUPTI callbacks' target, the writer thread and
// the control thread (one Boost.Asio io_context), and streams raw CUPTI buffers into rolling files.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <map>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "cupmon.pb.h"
#include "cupmon/control/control_plane.h"
#include "cupmon/format/error.h"
#include "cupmon/format/file_system.h"
#include "cupmon/format/record_sizes.h"
#include "cupmon/monitor/buffer_pool.h"
#include "cupmon/monitor/config.h"
#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/trace_window.h"
#include "cupmon/metrics/metrics_server.h"

namespace cupmon {

class RecordingWriter;
class CallbackWatch;

// What the CUDA driver tells about the machine (filled by ProbeCudaDriver(), or by a test).
struct DriverInfo {
  int32_t driver_version = 0;
  int32_t runtime_version = 0;
  std::vector<pb::Device> devices;
};
// Reads driver/runtime versions and devices through libcuda.so.1 loaded with dlopen. Never calls
// cuInit: when CUDA is not initialised yet, devices are left out. Missing libcuda: empty result.
// initialize_driver: call cuInit(0) when the driver is not initialised yet (never from injection,
// which runs inside cuInit).
DriverInfo ProbeCudaDriver(bool initialize_driver = false);

struct MonitorOptions {
  MonitorConfig config;
  CuptiApi* cupti = nullptr;        // not owned; must outlive the monitor
  std::string entry_point = "api";  // "injection", "api", "test-double"
  bool synthetic = false;           // records come from the test double
  // Called once on the writer thread before the first file is opened. Null: ProbeCudaDriver.
  std::function<DriverInfo()> driver_probe;
  FileSystem* fs = nullptr;         // null: the real file system
};

// Counters for cupmon_get_stats and the control plane. Cumulative since start.
struct MonitorStats {
  uint64_t buffers_completed = 0;
  uint64_t records = 0;
  uint64_t raw_bytes = 0;
  uint64_t compressed_bytes = 0;
  uint64_t dropped_records = 0;
  uint64_t pool_exhausted = 0;
  uint64_t zero_timestamp_records = 0;
  uint64_t write_errors = 0;
  uint64_t chunks_lost = 0;
  uint64_t buffers_free = 0;
  uint64_t buffers_in_flight = 0;
  uint64_t strings = 0;
  uint64_t lost_buffers = 0;  // completed buffers lost before the writer (out of memory)
  uint64_t windows_opened = 0;
  bool window_open = false;
  // Another CUPTI client took CUPTI's callbacks (docs/COEXISTENCE.md).
  uint64_t cupti_gaps = 0;        // intervals noticed (GAP markers in the stream)
  uint64_t foreign_buffers = 0;   // completed buffers that were not cupmon's
  uint64_t stranded_buffers = 0;  // cupmon buffers handed to the other client, never back
  std::string current_file;
  std::string last_write_error;
};

// Threads (see docs in monitor/README.md):
//  - application threads call OnBufferRequested (through the CUPTI request callback): pool only;
//  - CUPTI's thread calls OnBufferCompleted: interns strings and queues the buffer under queue_mu_;
//  - the writer thread owns the RecordingWriter and runs tasks queued in order with the buffers;
//  - the control thread runs io_context(): flush/stats timers, the control plane (socket, signal,
//    scheduled windows), the trace window and its timer, and the metrics endpoint.
// The monitor is the control plane's ControlTarget and the metrics server's MetricsSource; those
// methods run on the control thread only.
// Only one monitor can be started per process at a time, because CUPTI's callbacks are global.
// A started monitor must not be destroyed while CUPTI may still call back: the library never
// destroys the process-wide one; tests destroy theirs after Stop() with the fake quiesced.
class Monitor final : public control::ControlTarget, public metrics::MetricsSource {
 public:
  // Registers the callbacks, enables the kinds and starts the threads. Errors: another monitor is
  // running, libcupti refused (another CUPTI client: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_...).
  static Expected<std::unique_ptr<Monitor>> Start(MonitorOptions options);
  ~Monitor() override;
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // Forced flush, disables the kinds, writes final stats and the footer, joins the threads.
  // Idempotent. Any thread except the monitor's own and CUPTI's callbacks.
  void Stop();
  // Non-forced flush, then waits until the writer has written everything queued so far.
  void FlushAndWait();
  MonitorStats GetStats() const;

  // Trace windows from any thread but the control thread (C API, tests): the request runs on the
  // control thread and this waits for its answer. duration_ms 0: the configured window_ms.
  // kinds empty: the configured window kinds.
  Expected<uint32_t> RequestWindow(uint32_t duration_ms, std::vector<uint32_t> kinds,
                                   pb::TriggerSource source);
  Expected<void> RequestCloseWindow();
  // Annotations, on the annotating application thread: interns `label` (its id is the address of
  // the monitor's copy, written to the string table as that entry's pointer, as the decoder
  // expects) and pushes it as a CUSTOM1 external correlation id. Records exist only while
  // EXTERNAL_CORRELATION is on (inside windows by default).
  Expected<uint64_t> PushAnnotation(std::string_view label);
  Expected<void> PopAnnotation();
  // <control_dir>/<pid>.sock, or empty when the control plane is off or failed to start.
  std::string control_socket_path() const;
  uint16_t metrics_port() const { return metrics_port_.load(); }

  // control::ControlTarget (control thread).
  pb::StatusReply Status() override;
  Expected<uint32_t> OpenWindow(const control::WindowRequest& request) override;
  Expected<void> CloseWindow() override;
  Expected<void> Flush() override;  // control::ControlTarget: non-forced flush, does not wait
  Expected<void> Rotate() override;
  // metrics::MetricsSource (control thread).
  metrics::MetricsSnapshot Snapshot() override;

  // Runs `task` on the writer thread, in order with the buffers queued before it.
  // Returns false (and drops the task) once the writer has exited.
  bool PostToWriter(std::function<void(RecordingWriter&)> task);
  // Runs `task` on the control thread and waits for it (at once when called on that thread);
  // false when the control thread is gone. For the ControlTarget methods outside the control
  // plane (tests) and the explicit, blocking window calls; never from CUPTI's callbacks.
  bool RunOnControl(std::function<void()> task);
  // The control thread's io_context, for the control plane to share.
  boost::asio::io_context& io_context() { return io_; }
  const MonitorConfig& config() const { return options_.config; }
  const std::string& entry_point() const { return options_.entry_point; }
  const std::vector<uint32_t>& enabled_kinds() const { return enabled_kinds_; }
  bool stopped() const { return stopped_.load(); }
  const RecordSizeTable& record_sizes() const { return sizes_; }
  uint32_t cupti_version() const { return cupti_version_; }

  // pthread_atfork child handler: the child never touches the parent's threads, locks or files.
  static void DisableInForkedChild() noexcept;
  static bool InForkedChild() noexcept;

  // CUPTI callback targets (public for the C trampolines in monitor.cc).
  void OnBufferRequested(uint8_t** buffer, size_t* size) noexcept;
  void OnBufferCompleted(uint8_t* buffer, size_t valid_size) noexcept;

 private:
  struct QueueItem {
    uint8_t* buffer = nullptr;  // null: a task
    size_t valid = 0;
    std::vector<pb::StringEntry> strings;  // new strings the buffer's records point to
    std::function<void(RecordingWriter&)> task;
  };

  explicit Monitor(MonitorOptions options);
  Expected<void> Init();
  void ProbeRecordSizes();
  void Abandon();
  void StopThreads();
  pb::CalibrationSample TakeCalibrationSample();
  void InternStrings(const uint8_t* buffer, size_t valid, std::vector<pb::StringEntry>* out);
  void Intern(uint64_t pointer, std::vector<pb::StringEntry>* out);
  void WriterLoop();
  void OpenWriter();
  void FillMonitorStats(pb::Stats* stats);
  pb::Calibration TakeCalibration();
  // Flush timer: writes a calibration chunk at once when CUPTI's clock left the domain of the
  // samples written so far (another client's timestamp callback). Control thread.
  void CheckClockDomain();
  void NoteCalibrationWritten(const pb::CalibrationSample& s);
  void ScheduleFlush();
  void ScheduleStats();
  void PollDropped();
  void Warn(const std::string& line);
  void StartControl();
  void ShutdownControl() noexcept;
  // Flush timer: the other-client takeover check (CallbackWatch) and its markers.
  void CheckCallbacks();
  void WriteGapMarker(bool begin, uint32_t gap, uint64_t cupti_ns, const std::string& note);
  void AccumulateBusy(const uint8_t* buffer, size_t valid);
  void PublishBusy();
  void PublishSnapshot();  // writer thread: the copy GetStats and Snapshot read

  MonitorOptions options_;
  CuptiApi& cupti_;
  uint32_t cupti_version_ = 0;
  RecordSizeTable sizes_;
  bool sizes_probed_ = false;
  // Offsets of string pointers in records of the loaded CUPTI, 0 when not known.
  uint32_t kernel_name_offset_ = 0;
  uint32_t marker_name_offset_ = 0;
  uint32_t marker_domain_offset_ = 0;
  std::unique_ptr<BufferPool> pool_;
  std::vector<uint32_t> enabled_kinds_;
  uint64_t recording_id_ = 0;
  pb::Calibration start_calibration_;

  // Guarded by queue_mu_: taken by the completion callback and by the writer to pop. The writer
  // never calls CUPTI, so this cannot deadlock with CUPTI's own lock.
  mutable std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::vector<QueueItem> queue_;
  bool writer_exit_ = false;
  std::unordered_map<uint64_t, uint32_t> string_ids_;  // pointer -> id
  uint64_t last_pointer_ = 0;                          // one-entry cache in front of the map
  uint32_t next_string_id_ = 1;

  std::unordered_map<std::string, uint64_t> labels_;  // annotation label -> id (its c_str())

  // Writer thread only.
  std::unique_ptr<RecordingWriter> writer_;
  // GPU busy time for the metrics endpoint (only when it is on): union of kernel/memcpy/memset
  // intervals, accumulated per device and per (device, stream) in arrival order.
  struct BusySpan {
    uint64_t busy_ns = 0;
    uint64_t covered_until = 0;
  };
  bool track_busy_ = false;  // set before the writer thread starts
  std::map<uint32_t, BusySpan> device_busy_;
  std::map<std::pair<uint32_t, uint32_t>, BusySpan> stream_busy_;
  struct BusyOffsets {
    uint32_t start = 0, end = 0, device = 0, stream = 0;  // 0: layout unknown, not counted
  };
  BusyOffsets kernel_offsets_, memcpy_offsets_, memcpy2_offsets_, memset_offsets_;

  // Published by the writer after each batch; read by GetStats.
  mutable std::mutex stats_mu_;
  pb::Stats stats_snapshot_;
  std::string current_file_;
  std::string last_write_error_;
  std::string file_prefix_;
  std::vector<metrics::DeviceBusy> device_busy_snapshot_;
  std::vector<metrics::StreamBusy> stream_busy_snapshot_;

  std::atomic<uint64_t> dropped_{0};          // sum of GetNumDroppedRecords
  std::atomic<uint64_t> strings_{0};
  std::atomic<uint64_t> foreign_buffers_{0};  // completed buffers that are not ours
  std::atomic<uint64_t> lost_buffers_{0};
  // Buffer callback calls (request + completed), for CallbackWatch; relaxed.
  std::atomic<uint64_t> callback_calls_{0};
  std::atomic<uint64_t> cupti_gaps_{0};
  std::atomic<uint64_t> stranded_buffers_{0};
  // Control thread only (the flush timer); read by Stop() after the control thread joined.
  std::unique_ptr<CallbackWatch> watch_;
  uint64_t last_active_cupti_ns_ = 0;  // CUPTI time of the last tick that saw callbacks run
  std::vector<size_t> fill_;            // per pool slot: bytes CUPTI had written at the last tick
  bool gap_warned_ = false;
  // The last two calibration samples written (start, stats timer, CheckClockDomain), for
  // CheckClockDomain. Set by Init before the control thread starts, then control thread only.
  pb::CalibrationSample cal_last_, cal_prev_;
  int cal_written_ = 0;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> abandoned_{false};  // Start failed: the writer opens no file
  std::mutex stop_mu_;  // serialises Stop() callers; never taken by callbacks

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  boost::asio::steady_timer flush_timer_{io_};
  boost::asio::steady_timer stats_timer_{io_};
  std::thread writer_thread_;
  std::thread control_thread_;

  // Control thread only (created in Init, before the control thread runs them).
  std::unique_ptr<TraceWindow> window_;
  std::unique_ptr<control::ControlPlane> control_;
  std::unique_ptr<metrics::MetricsServer> metrics_;
  std::string control_socket_;  // written once during Init, before Start returns
  std::atomic<uint16_t> metrics_port_{0};
  std::vector<uint32_t> runtime_filter_, driver_filter_;
};

}  // namespace cupmon

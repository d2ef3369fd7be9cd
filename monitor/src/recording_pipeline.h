// RecordingPipeline: the writer thread's part of a monitor. It owns the RecordingWriter and turns
// queued buffers and tasks into chunks in the rolling files.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "auto_window.h"
#include "busy_time.h"
#include "cupmon.pb.h"
#include "cupmon/base/file_system.h"
#include "cupmon/base/thread_annotations.h"
#include "cupmon/base/thread_checker.h"
#include "cupmon/metrics/metrics_server.h"
#include "cupmon/monitor/buffer_pool.h"
#include "cupmon/monitor/fault_injection.h"
#include "cupmon/monitor/monitor.h"
#include "fork_closing_file_system.h"
#include "monitor_counters.h"
#include "session_facts.h"
#include "string_table.h"
#include "writer_queue.h"

namespace cupmon {

class RecordingWriter;

// What other threads may know of the writer: a copy published after each batch.
struct PipelineSnapshot {
  pb::Stats stats;  // the writer's counters (records, bytes, write errors, ...)
  std::string current_file;
  std::string last_write_error;
  std::vector<metrics::DeviceBusy> device_busy;
  std::vector<metrics::StreamBusy> stream_busy;
  metrics::StepTotals steps;  // on: the writer sums steps (SumsSteps)
  uint64_t files = 0;       // this recording's files on disk (listed at most once a second)
  uint64_t disk_bytes = 0;
  // How long after its newest GPU record ended CUPTI completed the last buffer (ns; 0: none
  // judged yet, RecordingPipeline::NoteDeliveryLag).
  uint64_t cupti_delivery_lag_ns = 0;
  std::map<uint32_t, std::string> gpu_uuids;  // device id -> 16 raw bytes, once the file is open
};

// Threading: Run() is the writer thread's body; everything but Snapshot(), WaitFinished(),
// finished(), Discard() and FinalTask() is that thread's (checked: thread_). Snapshot() copies
// under snapshot_mu_, which the writer holds only to publish. The writer never calls CUPTI.
//
// Exception boundary: each item is processed inside its own try; an exception (bad_alloc, a
// system_error from the standard library) drops that item, counts a writer fault, returns a
// buffer to the pool, and the loop goes on. Nothing the writer does ends the host process.
//
// The first file opens at the first completed buffer, or at stop: a completed buffer means CUDA is
// up, so the devices can be read without initialising CUDA (the writer never calls cuInit).
// Tasks queued before that are kept in order and run once the file is open.
class RecordingPipeline {
 public:
  struct Options {
    FileSystem* fs = nullptr;                 // not owned
    std::function<DriverInfo()> driver_probe;  // null: ProbeCudaDriver()
    FaultInjector faults;
    // Where slow steps go (CUPMON_AUTO_WINDOW, cupmonctl window --when-slower); null: steps are
    // never timed. Not owned; outlives the pipeline.
    AutoWindowMailbox* auto_window = nullptr;
  };

  RecordingPipeline(const SessionFacts& facts, BufferPool& pool, StringTable& strings,
                    WriterQueue& queue, MonitorCounters& counters, Options options);
  ~RecordingPipeline();
  RecordingPipeline(const RecordingPipeline&) = delete;
  RecordingPipeline& operator=(const RecordingPipeline&) = delete;

  // The writer thread: runs until the queue is closed and drained. noexcept.
  void Run() noexcept;
  // Tasks may call this to publish at once (FlushAndWait's callers read the snapshot next).
  void Publish();
  // Marks the next file open as forced even without a buffer (the final task at stop).
  static WriterItem FinalTask(std::function<void(RecordingWriter&)> task);

  // A start that failed: from now on every item is dropped and no file is ever created.
  void Discard() { discard_.store(true, std::memory_order_release); }

  PipelineSnapshot Snapshot() const;
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // Waits up to `timeout` for Run() to return. Any thread but the writer.
  bool WaitFinished(std::chrono::milliseconds timeout);
  // The prefix of this recording's file names (set when the first file opens).
  std::string file_prefix() const;

 private:
  void Process(WriterItem& item);
  void ReleaseBuffer(uint8_t* buffer);  // back to the pool, no longer the writer's
  void WatchSteps(const uint8_t* buffer, size_t valid);
  // After a buffer's WriteRawBuffer: its delivery lag into the counters (MonitorCounters).
  void NoteDeliveryLag(int64_t completed_steady_ns);
  void MakeStepWatch();
  void NoteStepStrings();
  void SettleSteps();
  void TakeFlushMark();
  template <typename F>
  void CountSteps(F&& f);
  bool StepWatchOn() const;
  void OpenWriter();
  pb::RecordingHeader BuildHeader();
  void CountFiles(PipelineSnapshot* s);

  const SessionFacts& facts_;
  BufferPool& pool_;
  StringTable& strings_;
  WriterQueue& queue_;
  MonitorCounters& counters_;
  const Options options_;

  // Writer thread only.
  ThreadChecker thread_;
  // Declared before writer_, which uses it until destroyed.
  std::unique_ptr<ForkClosingFileSystem> fs_;
  std::unique_ptr<RecordingWriter> writer_;
  std::vector<std::function<void(RecordingWriter&)>> early_tasks_;
  std::vector<pb::StringEntry> new_strings_;
  BusyTime busy_;
  // Created at the first buffer the trigger is armed for, or at the first strings with an anchor
  // or with step sums (SumsSteps: on from the start).
  std::unique_ptr<StepWatch> steps_;
  bool watching_ = false;  // buffers go to steps_ (from the first one the trigger was armed for)
  const bool sums_ = false;  // SumsSteps(config)
  std::chrono::steady_clock::time_point last_listing_{};
  uint64_t files_ = 0, disk_bytes_ = 0;
  uint64_t delivery_lag_ns_ = 0;  // the last buffer's (NoteDeliveryLag)

  mutable Mutex snapshot_mu_;
  PipelineSnapshot snapshot_ CUPMON_GUARDED_BY(snapshot_mu_);
  std::string prefix_ CUPMON_GUARDED_BY(snapshot_mu_);

  // Only for finished_cv_: finished_ is set with it held, so that a waiter cannot miss the wake.
  Mutex finished_mu_;
  std::condition_variable finished_cv_;
  std::atomic<bool> finished_{false};
  std::atomic<bool> discard_{false};
};

}  // namespace cupmon

// `cupmon-decode export --format chrome-json`: the rows as a Chrome Trace Event Format JSON
// document (chrome://tracing, ui.perfetto.dev). Private to the decoder; the report driver
// (reports.cc) feeds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <set>
#include <utility>

#include "cupmon/decoder/memory_usage.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/trace_builder.h"
#include "text/out_buf.h"
#include "export/trace_event_json.h"

namespace cupmon::decoder {

// Writes one trace for one or several recordings (ranks), streamed: events as rows arrive
// (complete "X" slices for GPU activities, API calls and NVTX ranges, instant events for marks,
// a launch flow per activity with a launch record), track names, device memory counters and
// window/annotation slices at the end of each recording. A recording's CPU records go to its
// process (in a merged trace: one process per rank under its OS pid), each device to a process
// of its own with a thread per stream. Times are microseconds since the process start (merged:
// SetCommonBase). What it holds grows with tracks, labels and memory changes, not with rows.
// Use: Begin (per recording, before its rows), Write (per row), End (after its rows), Close
// once. Single-threaded.
class ChromeJsonSink {
 public:
  // Writes the document's opening.
  explicit ChromeJsonSink(std::ostream& out);
  ChromeJsonSink(const ChromeJsonSink&) = delete;
  ChromeJsonSink& operator=(const ChromeJsonSink&) = delete;

  // Merged timelines: every rank's times count from `base` (the earliest process start), so the
  // ranks share one wall-clock axis. 0: the first rank's first record. Before the first Begin.
  void SetCommonBase(int64_t base);
  // `rank` is null for a single recording; `index` is the recording's position in the output.
  void Begin(const TraceBuilder& builder, const Recording& recording, size_t index,
             const Rank* rank);
  void Write(const Row& row);
  void End(const TraceBuilder& builder, const Recording& recording);
  // Closes the document and flushes.
  void Close();

 private:
  void WriteEvents(const Row& r);
  void WriteRange(const Row& r);
  // The Perfetto process of a CPU record: its own pid, or the rank's in merged timelines (the
  // rank's process is where its windows and device names are).
  uint32_t CpuPid(uint32_t record_pid) const { return rank_ ? rank_pid_ : record_pid; }
  uint32_t GpuPid(uint32_t device) const {
    return 1'000'000u + static_cast<uint32_t>(index_) * 1000u + device;
  }

  OutBuf out_;
  TraceEventWriter ev_;
  const TraceBuilder* builder_ = nullptr;
  const Rank* rank_ = nullptr;
  size_t index_ = 0;
  bool common_base_ = false;
  uint32_t rank_pid_ = 0;
  std::set<uint32_t> rank_pids_;
  uint64_t flow_id_ = 0;
  // Whether each kernel's and API call's name (by builder name id) needs JSON escaping: found
  // once per name, not per row (kernel names run to kilobytes).
  PlainJsonNames plain_name_;
  std::set<std::pair<uint32_t, uint32_t>> gpu_tracks_;
  std::pair<uint32_t, uint32_t> last_track_{0, 0};
  std::set<uint32_t> cpu_threads_;
  uint32_t last_tid_ = 0;
  AnnotationSpans annotations_;
  MemoryUsage memory_;
};

}  // namespace cupmon::decoder

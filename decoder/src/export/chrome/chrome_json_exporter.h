// `cupmon-decode export --format chrome-json`: the rows as a Chrome Trace Event Format JSON
// document (chrome://tracing, ui.perfetto.dev). Private to the decoder; built by the export
// registry (export/registry.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <set>
#include <utility>
#include <vector>

#include "cupmon/base/error.h"
#include "cupmon/decoder/memory_usage.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/trace_builder.h"
#include "export/exporter.h"
#include "export/trace_event_json.h"
#include "text/out_buf.h"

namespace cupmon::decoder {

// Writes one trace for one or several recordings (ranks), streamed: events as rows arrive
// (complete "X" slices for GPU activities, API calls and NVTX ranges, instant events for marks,
// a launch flow per activity with a launch record), track names, device memory counters and
// window/annotation slices at the end of each recording. A recording's CPU records go to its
// process (in a merged trace: one process per rank under its OS pid), each device to a process
// of its own with a thread per stream. Times are microseconds since the process start (merged:
// SetCommonBase). What it holds grows with tracks, labels and memory changes, not with rows.
// Single-threaded.
class ChromeJsonExporter final : public Exporter {
 public:
  // Several ranks share one axis from the earliest process start (SetCommonBase).
  static Expected<std::unique_ptr<Exporter>> Make(std::ostream& out,
                                                  const std::vector<const Rank*>& ranks,
                                                  const ExportSettings& settings);
  // Writes the document's opening.
  explicit ChromeJsonExporter(std::ostream& out);
  ChromeJsonExporter(const ChromeJsonExporter&) = delete;
  ChromeJsonExporter& operator=(const ChromeJsonExporter&) = delete;

  // Merged timelines: every rank's times count from `base` (the earliest process start), so the
  // ranks share one wall-clock axis. 0: the first rank's first record. Before the first Begin.
  void SetCommonBase(int64_t base);

  bool WantsRanges() const override { return true; }
  bool WantsMemory() const override { return true; }
  // `rank` is null for a single recording; `index` is the recording's position in the output.
  void Begin(const TraceBuilder& builder, const Recording& recording, size_t index,
             const Rank* rank) override;
  void Write(const Row& row) override;
  void End(const TraceBuilder& builder, const Recording& recording,
           const ReadIntegrity& integrity) override;
  // Closes the document and flushes.
  void Close() override;
  bool Failed() const override { return out_.failed(); }

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

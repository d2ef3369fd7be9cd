// `cupmon-decode export --format perfetto`: rows written as a Perfetto protobuf trace (.pftrace),
// the format ui.perfetto.dev and trace_processor read natively. Private to the decoder; built by
// the export registry (export/registry.cc).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cupmon/base/error.h"
#include "cupmon/decoder/memory_usage.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/trace_builder.h"
#include "export/exporter.h"
#include "export/perfetto/packet_stream.h"
#include "export/perfetto/sequence_interning.h"
#include "export/perfetto/slice_ends.h"
#include "export/perfetto/track_table.h"
#include "job/rank_reading.h"

namespace cupmon::decoder {

// Writes one Perfetto trace for one or several recordings (ranks), streaming: what it holds is
// bounded by the tracks, the distinct names and launch shapes, and the slices still open at the
// latest start seen, never by the number of rows.
//
// Layout: one packet sequence per recording (trusted_packet_sequence_id = index + 1) with its own
// interning; a process track per rank (its OS pid, named like the chrome-json export), a process
// per device with a track per stream, a thread track per CPU thread for API calls, and a
// "cupmon windows" and an "annotations" track under the rank's process. Every slice is a
// TYPE_SLICE_BEGIN/TYPE_SLICE_END pair of TrackEvents at wall-clock ns (each rank through its own
// calibration). The Perfetto UI drops slices that overlap without nesting on one track, and CUPTI
// reports the concurrent kernels of a CUDA graph on one stream, so a slice that would overlap the
// slices already on its track goes to the track's next lane (a sibling track "stream 7 lane 2").
// NVTX ranges (RowType::kRange) are slices of category "nvtx" on their thread's track, where
// they nest with its API calls; marks are instant events there; a range ended on another thread
// (RangeKind::kStartEnd) goes to a "thread N ranges" track. A kernel launched inside a range
// carries its name as the "nvtx_range" annotation.
// Device memory (MEMORY2 rows): a counter track "memory in use (since the recording began)" in
// each device's process (TrackDescriptor.counter, unit UNIT_SIZE_BYTES), one TYPE_COUNTER event
// per change of its bytes in use, replayed in time order by MemoryUsage and written by End.
// Launch flows: the API slice carries one flow id per activity it launched, each activity
// terminates its own.
//
// With ExportSettings::job_table, a "job" process after the ranks' tracks holds a "job" track:
// one slice per slow step of `cupmon-decode job`'s analysis (each rank's step table built from
// this export's own pass), from the earliest rank's start of the step to the latest end, named
// by its verdict ("step 188: host-gap, rank 0 (vm:1611)"), category "job".
//
// Times: packets are written in time order (a slice's end waits in a heap until no later slice
// can start before it), so timestamps are deltas on an incremental sequence clock (id 64) that
// a ClockSnapshot ties to CLOCK_REALTIME; a row that arrives later than the builder's reorder
// bound is stamped absolutely in CLOCK_REALTIME instead.
//
// Its parts, each in its own file here: PacketStream (packet framing, the clock, track
// descriptors), SliceEnds (the ends waiting for their time), TrackTable (processes, tracks and
// lanes) and SequenceInterning (what a sequence has interned). This class turns rows into slices.
//
// Single-threaded.
class PerfettoExporter final : public Exporter {
 public:
  static Expected<std::unique_ptr<Exporter>> Make(std::ostream& out,
                                                  const std::vector<const Rank*>& ranks,
                                                  const ExportSettings& settings);
  explicit PerfettoExporter(std::ostream& out);
  ~PerfettoExporter() override;
  PerfettoExporter(const PerfettoExporter&) = delete;
  PerfettoExporter& operator=(const PerfettoExporter&) = delete;

  bool WantsRanges() const override { return true; }
  bool WantsMemory() const override { return true; }
  // `rank` is null for a single recording; `index` is the recording's position in the output.
  void Begin(const TraceBuilder& builder, const Recording& recording, size_t index,
             const Rank* rank) override;
  RecordConsumer* RecordsWanted() override { return std::exchange(job_steps_, nullptr); }
  void Write(const Row& row) override;
  void End(const TraceBuilder& builder, const Recording& recording,
           const ReadIntegrity& integrity) override;
  void Close() override;
  bool Failed() const override { return packets_.Failed(); }

  // What was written (for the benchmark): slices and packets so far.
  uint64_t slices() const { return slices_; }
  uint64_t packets() const { return packets_.packets(); }

 private:
  // NVTX: a range or mark row.
  void WriteRange(const Row& r);
  // A slice written at once (windows, annotations: written at End, out of the row stream).
  void WholeSlice(uint64_t track, std::string_view name, uint64_t category, int64_t start,
                  int64_t end, const std::vector<std::pair<uint64_t, std::string>>& strings);
  // End: the memory rows' bytes in use per device as counter tracks.
  void WriteMemoryCounters(const TraceBuilder& b);
  // Close: the job track (see the class comment), on the last recording's sequence.
  void WriteJobTrack();

  perfetto::PacketStream packets_;
  perfetto::SliceEnds ends_{packets_};
  perfetto::TrackTable tracks_{packets_};
  perfetto::SequenceInterning interning_;
  uint64_t slices_ = 0;
  // The ranks' step tables for the job track (null: no job track), and the recording's step
  // consumer from Begin to RecordsWanted.
  std::unique_ptr<job::ExportRankTables> job_;
  RecordConsumer* job_steps_ = nullptr;

  // Per recording (reset by Begin).
  const TraceBuilder* builder_ = nullptr;
  size_t index_ = 0;
  // Flow ordinals: the next activity number per correlation id, direct-mapped (a correlation's
  // activities arrive close together; a collision only restarts a count).
  struct FlowSlot {
    uint32_t correlation = 0;
    uint32_t next = 0;
    bool used = false;
  };
  std::vector<FlowSlot> flow_slots_;
  // Annotation label -> [first start, last end] of the rows carrying it (as chrome-json).
  std::map<std::string, std::pair<int64_t, int64_t>> annotations_;
  MemoryUsage memory_;  // the recording's memory rows, replayed by End
};

}  // namespace cupmon::decoder

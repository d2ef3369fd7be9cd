// Turns a recording's chunk stream into joined rows: one row per GPU activity (kernel, memcpy,
// memset) and one per API call, joined by correlation id, with names, wall-clock times and filters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string_view>

#include "cupmon/decoder/clock_map.h"
#include "cupmon/decoder/kernel_names.h"
#include "cupmon/decoder/record_consumer.h"
#include "cupmon/decoder/record_layout.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/row.h"
#include "cupmon/decoder/trace_counts.h"
#include "cupmon/decoder/trace_filter.h"
#include "cupmon/decoder/window_span.h"

namespace cupmon::decoder {

// The join horizon and reorder window (in records) the commands use unless told otherwise.
inline constexpr size_t kDefaultJoinHorizon = size_t{1} << 16;
inline constexpr size_t kDefaultReorderRows = size_t{1} << 16;

// Parts of the builder, private to decoder/src.
class JoinStage;
class MemoryRows;
class NameTable;
class NvtxRows;
class RecordWalker;
class RowDelivery;
class WindowIndex;

// The decoder's one record decoder: consumes one recording (as a ChunkVisitor), hands each
// decoded record to its RecordConsumers, and emits rows, in start-time order when `reorder` asks
// for it, else in stream order. Joins are bounded: a row waits at most `horizon` later
// records for its partner, so memory does not grow with the recording. Exactly one row is emitted
// per GPU activity record: a GPU row looks up one API record (the first runtime record with its
// correlation id, else the first driver record), and a second API record with the same id is
// counted, never joined. Single-threaded.
//
// Its parts, each of one concern (decoder/src): RecordWalker decodes the raw buffers and hands
// each record to the part of its class; JoinStage joins GPU and API records into rows;
// NvtxRows and MemoryRows make the rows of NVTX markers and memory records; RowDelivery places
// rows in time, filters them, holds them until the time origin is known, reorders them and hands
// them to the sink; NameTable and WindowIndex keep the names and the windows.
class TraceBuilder : public ChunkVisitor {
 public:
  TraceBuilder(TraceFilter filter, RowSink* sink, size_t horizon = kDefaultJoinHorizon,
               ReorderOptions reorder = {});
  // Decoding alone, for a pass whose consumer needs no rows (`steps`): every raw buffer goes to
  // `consumer`, and no row, join, name, window or count is kept (counts() stays empty).
  explicit TraceBuilder(RecordConsumer* consumer);
  ~TraceBuilder() override;
  TraceBuilder(const TraceBuilder&) = delete;
  TraceBuilder& operator=(const TraceBuilder&) = delete;

  void OnHeader(const pb::RecordingHeader& header, const ChunkOrigin& at) override;
  void OnRawBuffer(const RawBufferPrefix& prefix, std::span<const uint8_t> records,
                   const ChunkOrigin& at) override;
  // The builder reads records only through its RecordDecoder (fixed by the first header), so the
  // words of its layouts are all it needs (for sinks of totals, summary and info, not the launch
  // geometry either). It asks for packed records, walked by a packed copy of that decoder.
  bool RecordWordsRead(ColumnSelection* keep) const override;
  void OnPackedRawBuffer(const RawBufferPrefix& prefix, std::span<const uint8_t> records,
                         const ColumnSelection& packed_with, const ChunkOrigin& at) override;
  void OnStrings(const pb::StringTable& table) override;
  void OnWindowMarker(const pb::WindowMarker& marker) override;
  void OnCalibration(const pb::Calibration& calibration) override;
  void OnStats(const pb::Stats& stats) override;
  void OnFooter(const pb::Footer& footer) override;

  // Adds a consumer of this builder's records (RecordConsumer), before the read begins.
  void AddConsumer(RecordConsumer* consumer);

  // Lets the read leave out the chunks that cannot hold a row the time filters (window, from,
  // to) keep (ChunkVisitor::Ranged, RangedVisitor): the rows are those of a whole read, while
  // counts(), first_ts(), last_ts() and the read's integrity speak of what was read. Before the
  // read begins; without a time filter, or for a builder without rows, the read stays whole.
  void AllowRangedRead();
  const RangedVisitor* Ranged() const override { return ranged_.get(); }

  // Emits every row still waiting for a partner. Call once after ReadRecording.
  void Finish();

  const TraceCounts& counts() const { return counts_; }
  const std::map<uint32_t, WindowSpan>& windows() const;
  // Intervals in which another CUPTI client held CUPTI's callbacks (GAP_BEGIN/GAP_END markers),
  // by gap number; `note` is the begin note, then " / " and the end note.
  const std::map<uint32_t, WindowSpan>& gaps() const;
  // Intervals in which CUPTI was behind its own records (BEHIND_BEGIN/BEHIND_END markers): its
  // worker could not keep up, and records inside may be missing without being counted as dropped.
  const std::map<uint32_t, WindowSpan>& behind() const;
  const pb::RecordingHeader& header() const;
  const ClockMap& clock() const { return clock_; }
  const TraceFilter& filter() const;
  // Earliest start and latest end of valid GPU/API records (CUPTI ns; 0 when none).
  uint64_t first_ts() const;
  uint64_t last_ts() const;
  // Relative times count from the first valid start in stream order (fixed once seen, so rows
  // streamed early and late share one origin).
  int64_t origin_wall() const;
  // The display name with id `id` (ids come from Row::name_id; valid for the builder's life).
  std::string_view NameOf(uint32_t id) const;
  size_t name_count() const;

 private:
  TraceCounts counts_;
  ClockMap clock_;
  std::unique_ptr<NameTable> names_;
  std::unique_ptr<WindowIndex> windows_;
  std::unique_ptr<RowDelivery> rows_;
  // The parts that make rows: null for a builder without rows.
  std::unique_ptr<NvtxRows> nvtx_;
  std::unique_ptr<MemoryRows> memory_;
  std::unique_ptr<JoinStage> join_;
  std::unique_ptr<RecordWalker> walker_;
  std::unique_ptr<RangedVisitor> ranged_;  // AllowRangedRead
};

}  // namespace cupmon::decoder

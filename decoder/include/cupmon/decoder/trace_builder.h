// Turns a recording's chunk stream into joined rows: one row per GPU activity (kernel, memcpy,
// memset) and one per API call, joined by correlation id, with names, wall-clock times and filters.
#pragma once

#include <cstdint>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

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
class CorrelationTable;
class NameTable;
class NvtxRanges;
struct NvtxRange;
class ReorderStage;
class WindowIndex;

// The decoder's one record decoder: consumes one recording (as a ChunkVisitor), hands each
// decoded record to its RecordConsumers, and emits rows, in start-time order when `reorder` asks
// for it, else in stream order. Joins are bounded: a row waits at most `horizon` later
// records for its partner, so memory does not grow with the recording. Exactly one row is emitted
// per GPU activity record: a GPU row looks up one API record (the first runtime record with its
// correlation id, else the first driver record), and a second API record with the same id is
// counted, never joined. Single-threaded.
class TraceBuilder : public ChunkVisitor, private RangedVisitor {
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
  void AllowRangedRead() { ranged_read_ = timed_filter_ && !decode_only_; }
  const RangedVisitor* Ranged() const override { return ranged_read_ ? this : nullptr; }

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
  const pb::RecordingHeader& header() const { return header_; }
  const ClockMap& clock() const { return clock_; }
  const TraceFilter& filter() const { return filter_; }
  // Earliest start and latest end of valid GPU/API records (CUPTI ns; 0 when none).
  uint64_t first_ts() const { return first_ts_; }
  uint64_t last_ts() const { return last_ts_; }
  // Relative times count from the first valid start in stream order (fixed once seen, so rows
  // streamed early and late share one origin).
  int64_t origin_wall() const { return origin_ts_ ? clock_.ToWall(origin_ts_) : 0; }

 private:
  struct Pending;
  struct JoinRing;
  // One raw buffer's records, whole (decoder_) or packed (packed_decoder_).
  void WalkBuffer(const RecordDecoder& decoder, const RawBufferPrefix& prefix,
                  std::span<const uint8_t> records, const ChunkOrigin& at);
  void AddRecord(const RecordLayout& layout, const FieldReader& f, const uint8_t* rec);
  void Emit(const Pending& p);
  void EmitInto(const Pending& p, Row& row);  // fills the fields `p` has into `row`, delivers it
  // start/end, valid_time, duration and (when rows carry them) the wall times of a row; an
  // untimed span leaves start, end and duration 0.
  void PlaceInTime(Row& row, uint64_t start, uint64_t end) const;
  void Deliver(const Row& row);
  // Whether the filters keep `row`: at once when there are none (filtered_ false).
  bool Passes(const Row& row) const { return !filtered_ || PassesFilters(row); }
  bool PassesFilters(const Row& row) const;
  void ReleaseHeldSync();
  // RangedVisitor.
  ReadRange Range() const override;
  uint64_t TimeOrigin() const override { return origin_ts_; }
  uint64_t JoinedRecords() const override { return joined_; }
  uint64_t JoinHorizon() const override { return horizon_; }
  // NVTX ranges (decoder/src/trace_builder.cc, "NVTX ranges").
  void AddMarker(const FieldReader& f, const uint8_t* rec);
  void EmitRange(const NvtxRange& r);
  void ReleaseHeldRanges();
  // Device memory (decoder/src/trace_builder.cc, "Device memory").
  void AddMemory(const RecordLayout& layout, const FieldReader& f, const uint8_t* rec);
  void EmitMemory(Row row);
  void ReleaseHeldMemory();

 public:
  // The display name with id `id` (ids come from Row::name_id; valid for the builder's life).
  std::string_view NameOf(uint32_t id) const;
  size_t name_count() const;

 private:
  TraceFilter filter_;
  std::vector<RecordConsumer*> consumers_;
  uint64_t consumer_fields_ = 0;  // FieldsRead of every consumer
  bool decode_only_ = false;      // no rows: the records go to the consumers alone
  bool timed_filter_ = false;
  bool ranged_read_ = false;  // AllowRangedRead
  uint64_t joined_ = 0;       // records that entered the join ring
  bool filtered_ = false;  // any filter: timed, or by device, stream or kernel name
  RowSink* sink_;
  size_t horizon_;
  ReorderOptions reorder_;
  pb::RecordingHeader header_;
  bool have_header_ = false;
  std::unique_ptr<RecordDecoder> decoder_;
  // decoder_->Packed(packed_with_), for the packed buffers decoded with that selection.
  std::unique_ptr<RecordDecoder> packed_decoder_;
  ColumnSelection packed_with_;
  ClockMap clock_;
  TraceCounts counts_;
  std::array<uint64_t, RecordSizeTable::kMaxKind> by_kind_{};
  // Windows and gaps from the markers (decoder/src/window_index.h).
  std::unique_ptr<WindowIndex> windows_;
  uint64_t first_ts_ = 0, last_ts_ = 0, origin_ts_ = 0;

  // String entries and display names (decoder/src/name_table.h).
  std::unique_ptr<NameTable> names_;

  // Join stage: records in arrival order, and join state by correlation id (the ids of the last
  // 4 horizons of records; decoder/src/correlation_table.h).
  std::unique_ptr<JoinRing> pending_;
  std::unique_ptr<CorrelationTable> corr_;
  bool wall_times_ = true;  // rows get wall_* fields (the sink or a time filter reads them)
  bool sync_rows_ = false;  // synchronization records become rows (the sink asks for them)
  bool reuse_row_ = false;  // Emit fills reused_row_ (RowSink::ReadsTotalsOnly, no filter)
  Row reused_row_;
  std::vector<Pending> held_sync_;  // synchronization records before the origin is known
  // NVTX ranges: pairing and labels in ranges_ (decoder/src/nvtx_ranges.h).
  std::unique_ptr<NvtxRanges> ranges_;
  bool range_rows_ = false;  // ranges become rows (the sink asks for them)
  bool finishing_ = false;   // Finish has begun: held ranges go out even with no origin
  std::vector<NvtxRange> held_ranges_;  // ranges read before the origin is known
  bool memory_rows_ = false;            // memory records become rows (the sink asks for them)
  std::vector<Row> held_memory_;        // memory rows read before the origin is known

  // Null without reordering (ReorderOptions::rows 0); decoder/src/reorder_stage.h.
  std::unique_ptr<ReorderStage> reorder_stage_;
};

}  // namespace cupmon::decoder

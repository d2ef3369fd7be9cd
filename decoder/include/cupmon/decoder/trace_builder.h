// Turns a recording's chunk stream into joined rows: one row per GPU activity (kernel, memcpy,
// memset) and one per API call, joined by correlation id, with names, wall-clock times and filters.
#pragma once

#include <cstdint>
#include <deque>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cupmon/decoder/clock_map.h"
#include "cupmon/decoder/record_layout.h"
#include "cupmon/decoder/recording_reader.h"

namespace cupmon::decoder {

// kSynchronization rows reach only sinks that ask for them (RowSink::WantsSynchronization), and
// kRange rows (NVTX ranges and marks, from CUPTI MARKER records) only those that ask for them
// (RowSink::WantsRanges).
// kMemory rows (CUPTI MEMORY2 and MEMORY_POOL records) only those that ask (RowSink::WantsMemory).
enum class RowType : uint8_t { kKernel, kMemcpy, kMemset, kApi, kSynchronization, kRange, kMemory };

// What a kRange row is. CUPTI's MARKER records do not say whether a range came from
// nvtxRangePush/Pop or nvtxRangeStart/End: a range whose END was recorded on another thread than
// its START can only be a start/end range; every other range is taken as push/pop.
enum class RangeKind : uint8_t { kPushPop, kStartEnd, kMark };

// One output row. Views point into the builder's caches and stay valid until the builder dies.
struct Row {
  RowType type = RowType::kKernel;
  uint32_t kind = 0;
  bool valid_time = false;  // false: zero or reversed timestamps; times below are then 0
  uint64_t start = 0, end = 0;  // CUPTI ns
  int64_t wall_start = 0, wall_end = 0;
  uint64_t duration = 0;
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  uint32_t registers = 0, static_smem = 0, dynamic_smem = 0, graph_id = 0;
  uint64_t bytes = 0;
  uint32_t copy_kind = 0, src_device = 0, dst_device = 0;
  uint8_t src_kind = 0, dst_kind = 0;  // memcpy: CUPTI memory kinds (CUpti_ActivityMemoryKind)
  uint32_t memset_value = 0;           // memset: the value set
  std::string_view name;  // kernel (demangled unless --mangled), "[CUDA memcpy HtoD]", API name
  uint32_t name_id = 0;   // the builder's id for `name`: equal names, equal ids (see NameOf)
  std::string_view raw_name;  // kernel: the name as recorded (mangled), "" when unresolved
  // GPU rows: the API call that launched it, when one was found.
  bool has_api = false;
  // GPU rows inside a trace window without their launch record, launched before the window
  // opened: their correlation id is below that of the window's first API record (see
  // WindowSpan::first_api_correlation). Their launch was never recorded; every other GPU row
  // of a window has its launch unless a record was lost.
  bool launched_before_window = false;
  bool api_valid_time = false;
  uint32_t api_kind = 0, api_cbid = 0, api_pid = 0, api_tid = 0, api_return = 0;
  uint64_t api_start = 0, api_end = 0;
  int64_t api_wall_start = 0, api_wall_end = 0;
  std::string_view api_name;
  // API rows: pid/tid/return value, and the GPU activities joined to it so far.
  uint32_t pid = 0, tid = 0, return_value = 0, launched = 0;
  std::string_view launched_name;
  uint32_t cbid = 0;  // the CUPTI callback id
  // Calls a kernel-launch join by correlation id must not find (still API rows): `nested`, a
  // driver call whose correlation id a runtime call also holds (the runtime made it);
  // `duplicate`, a later record of one kind with a correlation id already held (counted in
  // TraceCounts::duplicate_api_correlation, never joined).
  bool nested = false, duplicate = false;
  // Synchronization rows: CUPTI's synchronization type, event id and event sync id, with context,
  // stream and correlation above (CUPTI_SYNCHRONIZATION_INVALID_VALUE where not applicable).
  uint32_t sync_type = 0, event_id = 0;
  uint64_t event_sync_id = 0;
  // User annotation from external correlation ("" when none).
  std::string_view annotation;
  uint64_t external_id = 0;
  // GPU rows: the innermost NVTX range open on the launching thread (api_pid, api_tid) when the
  // launch call began (api_start); "" when none, or when the launch record is unknown.
  std::string_view range;
  // Range rows (RowType::kRange): `name` is the range's message, pid/tid the thread that started
  // it, start/end its START and END times (end == start for a mark). A range whose END was never
  // read (range_ended false) has end = start and duration 0; the exports say "unended".
  std::string_view range_domain;  // the NVTX domain's name, "" for the default domain
  RangeKind range_kind = RangeKind::kPushPop;
  bool range_ended = true;
  uint32_t range_depth = 0;  // ranges open on its thread when it started (0: outermost)
  uint32_t range_id = 0;     // CUPTI's marker id
  // Memory rows (RowType::kMemory): kind kKindMemory2 (an allocation or release) or
  // kKindMemoryPool (a pool created, destroyed or trimmed); start == end == the record's
  // timestamp, device, context, stream, correlation and pid above, `bytes` the allocation's size
  // (a pool's size for pool rows).
  // CUPTI's enums are small: one byte each keeps Row's size (they fill the padding after
  // range_id); a recorded value of 255 or more reads as 255 (kMemoryValueTooLarge).
  uint8_t memory_op = 0;    // MEMORY2: 1 allocation, 2 release; POOL: 1 created, 2 destroyed,
                            // 3 trimmed (CUPTI's operation types)
  uint8_t memory_kind = 0;  // CUpti_ActivityMemoryKind (MEMORY2 only)
  uint8_t pool_type = 0;    // CUpti_ActivityMemoryPoolType (0: not from a pool)
  uint64_t address = 0;        // the allocation's (pool rows: the pool's) address
  uint64_t pool_address = 0;   // MEMORY2: the pool it came from (0: none)
};

inline constexpr uint8_t kMemoryValueTooLarge = 255;

struct WindowSpan {
  uint32_t id = 0;
  uint64_t begin = 0, end = 0;  // CUPTI ns; end 0 while open or when the END marker is missing
  std::string source, note;  // note: the END marker's ("duration", "closed", "stop")
  std::string begin_note;     // the BEGIN marker's (the monitor's request-to-enabled latency probe)
  // The smallest correlation id among the API records that start inside the window, 0 while
  // none has been read. CUPTI hands out correlation ids in call order, so a GPU record inside the
  // window with a smaller id was launched before the window opened.
  uint32_t first_api_correlation = 0;
  uint64_t launched_before = 0;  // GPU rows marked Row::launched_before_window in it
  // TRIGGER_AUTO (CUPMON_AUTO_WINDOW): the slow step that opened it, from the BEGIN marker.
  uint64_t trigger_step = 0, trigger_step_ns = 0, trigger_median_ns = 0;
  double trigger_factor = 0;
};

// Why an automatic window opened ("step 2000 took 3.0000ms, 3.00x the median 1.0000ms
// (threshold 1.5x)"); empty for other windows.
std::string AutoTriggerText(const WindowSpan& w);

// Counters for the reports' headers and the exit code.
struct TraceCounts {
  uint64_t raw_buffers = 0;
  uint64_t records = 0;
  std::map<uint32_t, uint64_t> records_by_kind;
  uint64_t gpu_rows = 0, api_rows = 0;  // emitted (after filters)
  uint64_t sync_rows = 0;               // emitted to a sink that wants synchronization rows
  uint64_t filtered_out = 0;
  uint64_t unknown_timestamps = 0;      // GPU/API records with zero, reversed or >= 2^62 times
  uint64_t unresolved_names = 0;        // kernel name pointers with no string entry
  uint64_t gpu_without_api = 0;         // no API record with its correlation id
  // Of those, inside a trace window and launched before it opened (Row::launched_before_window).
  uint64_t launched_before_window = 0;
  uint64_t api_without_gpu = 0;         // launch-like... every API row with no GPU activity
  uint64_t duplicate_api_correlation = 0;  // a second API record with a correlation id already held
  uint64_t out_of_order = 0;            // rows that arrived after later-starting rows were emitted
  uint64_t buffers_stopped = 0;         // buffers cut short (unknown kind/layout)
  uint64_t records_not_decoded = 0;     // sized, but kinds the decoder has no layout for
  std::map<uint32_t, uint64_t> stopped_by_kind;
  uint64_t overhead_ns = 0;
  uint64_t overhead_records = 0;
  uint64_t external_correlations = 0;
  // NVTX (CUPTI MARKER records): ranges paired START to END, marks, and the ones that did not pair.
  uint64_t ranges = 0, marks = 0;
  uint64_t range_rows = 0;  // ranges and marks emitted to a sink that wants them
  uint64_t range_ends_without_start = 0;  // END with an id no START had (or one long forgotten)
  uint64_t unended_ranges = 0;  // START with no END by the recording's end (or evicted, see below)
  uint64_t unresolved_range_names = 0;  // START or mark whose name pointer has no string entry
  uint64_t memory_records = 0, memory_pool_records = 0;  // MEMORY2 and MEMORY_POOL records read
  uint64_t memory_rows = 0;  // emitted to a sink that wants them
  uint64_t calibration_non_monotonic = 0;
  uint64_t calibration_samples = 0;
  // realtime - CUPTI ns over the calibration samples read (their spread shows a sample taken
  // badly: later samples of one clock agree within a microsecond).
  int64_t calibration_offset_first = 0, calibration_offset_min = 0, calibration_offset_max = 0;
  uint64_t calibration_domain_changes = 0;  // CUPTI's clock switched domain; not a warning
  bool have_stats = false;
  pb::Stats stats;  // latest Stats (or Footer stats) chunk
  // The latest stats came from the footer of a recording that ended (stop): nothing was written
  // after them, so records in = decoded + lost before disk + deleted by retention must hold.
  bool stats_final = false;
  std::vector<std::string> messages;    // first few descriptions of the above
  // Facts worth one line that are not problems (CUPTI's clock changed domain): "note:", exit 0.
  std::vector<std::string> notes;
  void Note(std::string m) {
    if (messages.size() < 50) messages.push_back(std::move(m));
  }
  // Problems that make the exit code 1.
  bool HasWarnings() const {
    return unknown_timestamps || unresolved_names || unresolved_range_names || buffers_stopped ||
           duplicate_api_correlation ||
           calibration_non_monotonic || stats.dropped_records() || stats.pool_exhausted() ||
           stats.chunks_lost() || stats.lost_records();
  }
};

struct TraceFilter {
  std::optional<uint32_t> window;
  std::optional<int64_t> from_wall, to_wall;   // absolute wall-clock ns
  std::optional<int64_t> from_rel, to_rel;     // ns relative to the recording's first timestamp
  std::optional<uint32_t> device, stream;
  // Searched in Row::name: the full demangled name (raw when `mangled`), not the short form the
  // text reports show (ShortKernelName), so patterns with template arguments keep working.
  std::optional<std::regex> kernel;
  bool mangled = false;
};

class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual void OnRow(const Row& row) = 0;
  // False when the sink never reads Row's wall_* fields: the builder then leaves them 0 (unless a
  // time filter needs them) and skips the clock mapping per row. Asked once, at construction.
  virtual bool NeedsWallTimes() const { return true; }
  // True when the sink also takes synchronization records as rows (RowType::kSynchronization:
  // never joined, not filtered by device, stream or kernel, delivered as they come (not
  // reordered), and left out of first_ts/last_ts and the unknown-timestamp count, so that every
  // other row and count stays as without them). Asked once.
  virtual bool WantsSynchronization() const { return false; }
  // True when the sink also takes NVTX ranges and marks as rows (RowType::kRange: emitted when
  // the END is read, a mark at once, unended ones by Finish; delivered as they come (not
  // reordered), filtered by time on their start but never by device, stream or kernel, and kept
  // out of first_ts/last_ts). GPU rows get Row::range whatever this answers. Asked once.
  virtual bool WantsRanges() const { return false; }
  // True when the sink also takes device memory records as rows (RowType::kMemory: allocations,
  // releases and pool events, emitted as read (not reordered), filtered by time and device but
  // never by stream or kernel, kept out of first_ts/last_ts). Asked once.
  virtual bool WantsMemory() const { return false; }
  // True when the sink reads only type, kind, name_id, valid_time, start, end and duration of
  // GPU, API and synchronization rows (summary, info). When no filter is set and rows are not
  // reordered, the builder then hands it one reused Row whose other fields may still hold an
  // earlier row's values, instead of a fresh 400-byte row per record (clearing it was a third of
  // Emit's time). Range and memory rows are always whole. Asked once, at construction.
  virtual bool ReadsTotalsOnly() const { return false; }
};

// How rows are put in start-time order before they reach the sink. A row is held in a min-heap
// keyed by (start, arrival) and released once more than `rows` rows are held, or once the latest
// start seen is more than `ns` past its start (when ns > 0). A row that arrives after a row
// starting later than it was released is emitted at once and counted in TraceCounts::out_of_order.
// Rows with unknown times pass straight through. rows == 0: no reordering (delivery order).
struct ReorderOptions {
  size_t rows = 0;
  uint64_t ns = 0;
};

// Parts of the builder, private to decoder/src.
class CorrelationTable;
class NvtxRanges;
struct NvtxRange;
class ReorderStage;

// Consumes one recording (as a ChunkVisitor) and emits rows, in start-time order when `reorder`
// asks for it, else in stream order. Joins are bounded: a row waits at most `horizon` later
// records for its partner, so memory does not grow with the recording. Exactly one row is emitted
// per GPU activity record: a GPU row looks up one API record (the first runtime record with its
// correlation id, else the first driver record), and a second API record with the same id is
// counted, never joined. Single-threaded.
class TraceBuilder : public ChunkVisitor {
 public:
  TraceBuilder(TraceFilter filter, RowSink* sink, size_t horizon = 1 << 16,
               ReorderOptions reorder = {});
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

  // Emits every row still waiting for a partner. Call once after ReadRecording.
  void Finish();

  const TraceCounts& counts() const { return counts_; }
  const std::map<uint32_t, WindowSpan>& windows() const { return windows_; }
  // Intervals in which another CUPTI client held CUPTI's callbacks (GAP_BEGIN/GAP_END markers),
  // by gap number; `note` is the begin note, then " / " and the end note.
  const std::map<uint32_t, WindowSpan>& gaps() const { return gaps_; }
  const pb::RecordingHeader& header() const { return header_; }
  const ClockMap& clock() const { return clock_; }
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
  bool Passes(const Row& row) const;
  WindowSpan* WindowAt(uint64_t cupti_ns);  // the window whose span holds the time, or null
  uint32_t InternName(std::string name);
  uint32_t KernelNameId(int64_t string_index, uint64_t pointer);
  uint32_t ApiNameId(uint32_t kind, uint32_t cbid);
  uint32_t MemcpyNameId(uint32_t copy_kind);
  std::string_view Annotation(uint64_t external_id);
  void ReleaseHeldSync();
  // NVTX ranges (decoder/src/trace_builder.cc, "NVTX ranges").
  void AddMarker(const FieldReader& f, const uint8_t* rec);
  void EmitRange(const NvtxRange& r);
  void ReleaseHeldRanges();
  uint32_t MarkerStringId(uint64_t pointer, bool domain);
  // Device memory (decoder/src/trace_builder.cc, "Device memory").
  void AddMemory(const RecordLayout& layout, const FieldReader& f, const uint8_t* rec);
  void EmitMemory(Row row);
  void ReleaseHeldMemory();

 public:
  // The display name with id `id` (ids come from Row::name_id; valid for the builder's life).
  std::string_view NameOf(uint32_t id) const { return name_views_[id]; }
  size_t name_count() const { return name_views_.size(); }

 private:
  TraceFilter filter_;
  bool timed_filter_ = false;
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
  std::map<uint32_t, WindowSpan> windows_;
  // WindowAt's index: windows by begin (map nodes never move), rebuilt after a marker.
  std::vector<WindowSpan*> windows_by_begin_;
  bool windows_changed_ = false;
  WindowSpan* last_window_ = nullptr;  // WindowAt's last answer
  // WindowAt answers nullptr for [gap_lo_, gap_hi_] until windows_changed_ (empty: lo > hi).
  uint64_t gap_lo_ = 1, gap_hi_ = 0;
  std::map<uint32_t, WindowSpan> gaps_;
  uint64_t first_ts_ = 0, last_ts_ = 0, origin_ts_ = 0;

  // Strings: every entry kept (records name them by index); latest entry per pointer wins.
  std::deque<std::string> strings_;
  std::unordered_map<uint64_t, uint32_t> string_by_pointer_;
  // Display names, interned once: rows carry an id and a view (deque: views stay valid).
  std::deque<std::string> names_;
  // Views of names_, by id: NameOf, several times a row, indexes a vector instead of a deque.
  std::vector<std::string_view> name_views_;
  std::unordered_map<std::string_view, uint32_t> name_ids_;
  std::vector<int32_t> kernel_name_ids_;                  // string index -> name id (-1: not yet)
  std::unordered_map<uint64_t, uint32_t> unresolved_ids_;  // pointer -> placeholder name id
  std::vector<int32_t> api_name_ids_[2];                  // [driver][cbid] -> name id (-1: not yet)
  std::unordered_map<uint32_t, uint32_t> api_name_ids_far_;  // cbids past kMaxDenseCbid
  std::array<int32_t, 11> memcpy_name_ids_;
  int32_t memset_name_id_ = -1;
  std::unordered_map<uint64_t, std::string> annotations_;  // external id -> label

  // Join stage: records in arrival order, and join state by correlation id (the ids of the last
  // 4 horizons of records; decoder/src/correlation_table.h).
  std::unique_ptr<JoinRing> pending_;
  std::unique_ptr<CorrelationTable> corr_;
  bool wall_times_ = true;  // rows get wall_* fields (the sink or a time filter reads them)
  bool sync_rows_ = false;  // synchronization records become rows (the sink asks for them)
  bool reuse_row_ = false;  // Emit fills reused_row_ (RowSink::ReadsTotalsOnly, no filter)
  Row reused_row_;
  int32_t sync_name_id_ = -1;
  std::vector<Pending> held_sync_;  // synchronization records before the origin is known
  // NVTX ranges: pairing and labels in ranges_ (decoder/src/nvtx_ranges.h).
  std::unique_ptr<NvtxRanges> ranges_;
  bool range_rows_ = false;  // ranges become rows (the sink asks for them)
  bool finishing_ = false;   // Finish has begun: held ranges go out even with no origin
  std::vector<NvtxRange> held_ranges_;  // ranges read before the origin is known
  bool memory_rows_ = false;            // memory records become rows (the sink asks for them)
  std::vector<Row> held_memory_;        // memory rows read before the origin is known
  std::unordered_map<uint64_t, uint32_t> marker_string_ids_;  // pointer -> name id (names, domains)
  // Kernel name pointer -> string index + 1 (0: empty slot), direct-mapped in front of
  // string_by_pointer_; cleared whenever the string table changes.
  struct NameCacheSlot {
    uint64_t pointer = 0;
    uint32_t index_plus_1 = 0;
  };
  std::array<NameCacheSlot, 256> name_cache_{};

  // Null without reordering (ReorderOptions::rows 0); decoder/src/reorder_stage.h.
  std::unique_ptr<ReorderStage> reorder_stage_;
};

// Display names for memcpy kinds as nvprof prints them ("[CUDA memcpy HtoD]").
const char* MemcpyKindName(uint32_t copy_kind);
// Demangles an Itanium C++ name; returns `name` unchanged when it is not a mangled name.
std::string Demangle(const std::string& name);

}  // namespace cupmon::decoder

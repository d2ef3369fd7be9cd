// The trace builder's output vocabulary: one Row per GPU activity, API call, synchronization,
// NVTX range or device-memory record, the RowSink that takes them, and how rows are reordered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

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

// Which NVTX ranges label a GPU row (TraceFilter::nvtx_scope), and where a row's label came from
// (Row::range_scope). kThread: only the ranges of the thread that launched it (Nsight Systems'
// projection). kProcess: those first; when none is open on that thread at the launch, the range
// opened last among those open on the other threads of its process (autograd's backward thread
// then takes the step its main thread marked). docs/DECODER.md, "NVTX ranges", argues the rule.
enum class NvtxScope : uint8_t { kThread, kProcess };

// One output row. Views point into the builder's caches and stay valid until the builder dies.
// 384 bytes, six cache lines, with no padding to spare (the order of the small fields, and which
// fields share a group, keep it so): the reorder stage holds 65,536 of them by default, and each
// comes back from memory when it is released, so every line counts. Fields that only some rows
// use are grouped by what they describe; a group with a 64-bit field is 8-aligned, so the groups
// hold 32-bit and smaller fields apart from 64-bit ones where the offsets demand it.
struct Row {
  // Kernel rows: how the kernel was launched.
  struct LaunchConfig {
    uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
    uint32_t registers = 0, static_smem = 0, dynamic_smem = 0, graph_id = 0;
  };
  // Memcpy rows: the copy's kind and ends.
  struct Copy {
    uint32_t kind = 0;  // CUpti_ActivityMemcpyKind
    uint32_t src_device = 0, dst_device = 0;
    uint8_t src_kind = 0, dst_kind = 0;  // CUPTI memory kinds (CUpti_ActivityMemoryKind)
  };
  // GPU rows: the API call that launched it, when one was found.
  struct LaunchingCall {
    bool found = false;
    // GPU rows inside a trace window without their launch record, launched before the window
    // opened: their correlation id is below that of the window's first API record (see
    // WindowSpan::first_api_correlation). Their launch was never recorded; every other GPU row
    // of a window has its launch unless a record was lost.
    bool before_window = false;
    bool valid_time = false;
    uint32_t kind = 0, cbid = 0, pid = 0, tid = 0, return_value = 0;
    uint64_t start = 0, end = 0;
    int64_t wall_start = 0, wall_end = 0;
    std::string_view name;
  };
  // Synchronization rows: CUPTI's synchronization type, event id and event sync id, with context,
  // stream and correlation of the row (CUPTI_SYNCHRONIZATION_INVALID_VALUE where not applicable).
  struct Synchronization {
    uint32_t type = 0, event_id = 0;
    uint64_t event_sync_id = 0;
  };
  // Range rows (RowType::kRange): `name` is the range's message, pid/tid the thread that started
  // it, start/end its START and END times (end == start for a mark), range_domain its domain. A
  // range whose END was never read (`ended` false) has end = start and duration 0; the exports
  // say "unended".
  struct NvtxRange {
    RangeKind kind = RangeKind::kPushPop;
    bool ended = true;
    uint32_t depth = 0;  // ranges open on its thread when it started (0: outermost)
    uint32_t id = 0;     // CUPTI's marker id
  };
  // Memory rows (RowType::kMemory): kind kKindMemory2 (an allocation or release) or
  // kKindMemoryPool (a pool created, destroyed or trimmed); start == end == the record's
  // timestamp, device, context, stream, correlation and pid of the row, `bytes` the allocation's
  // size (a pool's size for pool rows), and address and pool_address.
  // CUPTI's enums are small: one byte each keeps Row's size (they fill the padding after
  // nvtx.id); a recorded value of 255 or more reads as 255 (kMemoryValueTooLarge).
  struct MemoryEnums {
    uint8_t op = 0;         // MEMORY2: 1 allocation, 2 release; POOL: 1 created, 2 destroyed,
                            // 3 trimmed (CUPTI's operation types)
    uint8_t kind = 0;       // CUpti_ActivityMemoryKind (MEMORY2 only)
    uint8_t pool_type = 0;  // CUpti_ActivityMemoryPoolType (0: not from a pool)
  };

  RowType type = RowType::kKernel;
  bool valid_time = false;  // false: zero or reversed timestamps; times below are then 0
  // API rows (in the padding before `kind`, where the row has room): calls a kernel-launch join
  // by correlation id must not find. `nested`, a driver call whose correlation id a runtime call
  // also holds (the runtime made it); `duplicate`, a later record of one kind with a correlation
  // id already held (counted in TraceCounts::duplicate_api_correlation, never joined).
  bool nested = false, duplicate = false;
  uint32_t kind = 0;
  uint64_t start = 0, end = 0;  // CUPTI ns
  int64_t wall_start = 0, wall_end = 0;
  uint64_t duration = 0;
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  LaunchConfig launch;
  uint64_t bytes = 0;
  Copy copy;
  uint32_t memset_value = 0;           // memset: the value set
  uint32_t name_id = 0;       // the builder's id for `name`: equal names, equal ids (see NameOf)
  std::string_view name;      // kernel (demangled unless --mangled), "[CUDA memcpy HtoD]", API name
  std::string_view raw_name;  // kernel: the name as recorded (mangled), "" when unresolved
  LaunchingCall api;
  // API rows: pid/tid/return value, and the GPU activities joined to it so far.
  uint32_t pid = 0, tid = 0, return_value = 0, launched = 0;
  std::string_view launched_name;
  uint32_t cbid = 0;  // the CUPTI callback id
  // GPU rows with api.found: the builder's id for api.name (as name_id is for name).
  uint32_t api_name_id = 0;
  Synchronization sync;
  // User annotation from external correlation ("" when none).
  std::string_view annotation;
  uint64_t external_id = 0;
  // GPU rows: the NVTX range open when the launch call began (api.start): the innermost one on
  // the launching thread (api.pid, api.tid), else under NvtxScope::kProcess one open on another
  // thread of that process (range_scope says which); "" when none, or when the launch record is
  // unknown.
  std::string_view range;
  std::string_view range_domain;  // range rows: the NVTX domain's name, "" for the default domain
  NvtxRange nvtx;
  MemoryEnums memory;
  // GPU rows with a range: kThread when it is the launching thread's own, kProcess when it was
  // open on another thread of the process (the last byte of padding after nvtx.id).
  NvtxScope range_scope = NvtxScope::kThread;
  uint64_t address = 0;       // memory rows: the allocation's (pool rows: the pool's) address
  uint64_t pool_address = 0;  // memory rows, MEMORY2: the pool it came from (0: none)
};
static_assert(sizeof(Row) == 384, "Row's size is six cache lines (see its comment)");

inline constexpr uint8_t kMemoryValueTooLarge = 255;

// Takes the builder's rows, one call each, on the builder's thread.
class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual void OnRow(const Row& row) = 0;
  // False when the sink never reads Row's wall times (wall_*, api.wall_*): the builder then
  // leaves them 0 (unless a time filter needs them) and skips the clock mapping per row. Asked
  // once, at construction.
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
  // True when the sink reads only type, kind, name_id, valid_time, start, end and duration of GPU,
  // API and synchronization rows (summary, info). When no filter is set and rows are not reordered,
  // the builder then hands it one reused Row whose other fields may still hold an earlier row's
  // values, instead of clearing a fresh 384-byte row per record. Range and memory rows are always
  // whole. Asked once, at construction.
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

}  // namespace cupmon::decoder

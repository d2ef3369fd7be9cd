// JoinStage: the trace builder's GPU, API and synchronization records on their way to rows, on
// its (reading) thread: each GPU activity joined with the API call that launched it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "correlation_table.h"
#include "cupmon/base/growing_ring.h"
#include "cupmon/decoder/clock_map.h"
#include "cupmon/decoder/record_layout.h"
#include "cupmon/decoder/row.h"
#include "cupmon/decoder/trace_counts.h"
#include "name_table.h"
#include "row_delivery.h"
#include "window_index.h"

namespace cupmon::decoder {

class NvtxRanges;

// A kernel's launch geometry: the join stage leaves it out of a reused row (RowDelivery::
// reuses_row), so the builder need not decode it then.
inline constexpr uint64_t kKernelGeometry =
    FieldBit(Field::kGridX) | FieldBit(Field::kGridY) | FieldBit(Field::kGridZ) |
    FieldBit(Field::kBlockX) | FieldBit(Field::kBlockY) | FieldBit(Field::kBlockZ) |
    FieldBit(Field::kRegisters) | FieldBit(Field::kStaticSharedMemory) |
    FieldBit(Field::kDynamicSharedMemory);

// One GPU or API record, decoded straight from the raw bytes with only the fields rows use
// (about 120 bytes, against 336 for a DecodedRecord): it waits in the join ring.
struct PendingRecord {
  uint64_t start = 0, end = 0;
  uint64_t bytes = 0;     // memcpy, memset
  uint64_t name_ptr = 0;  // kernel
  uint32_t kind = 0;
  RecordClass record_class = RecordClass::kKernel;
  int32_t string_index = -1;  // kernels: the name's entry at arrival time, -1 if unresolved
  uint32_t corr = 0, device = 0, context = 0, stream = 0, graph_id = 0;
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  uint32_t registers = 0, static_smem = 0, dynamic_smem = 0;
  uint32_t copy_kind = 0, src_device = 0, dst_device = 0;
  uint8_t src_kind = 0, dst_kind = 0;  // memcpy
  uint32_t memset_value = 0;           // memset
  uint32_t cbid = 0, pid = 0, tid = 0, ret = 0;
  uint32_t sync_type = 0, event_id = 0;  // synchronization (and context, stream, ret)
  uint64_t event_sync_id = 0;
};

// Kernel, memcpy, memset and API records wait in arrival order, each `horizon` later records
// (EmitDue, after each buffer) for its partners, and become rows (RowDelivery), so memory does
// not grow with the recording. Exactly one row is made per GPU activity record: a GPU row looks
// up one API record (the first runtime record with its correlation id, else the first driver
// record), and a second API record with the same id is counted, never joined. External
// correlation records label the rows of their id. Synchronization records, when the sink wants
// them, become rows at once (held until the time origin is known): nothing to join. GPU rows
// get the NVTX range open on their launching thread (`ranges`, the NVTX rows' state). The first
// valid GPU or API start fixes the time origin. The delivery, names, windows, ranges and counts
// are the builder's and outlive this. Single-threaded.
class JoinStage : public RowsHeldForOrigin {
 public:
  JoinStage(size_t horizon, bool sync_rows, RowDelivery* out, NameTable* names,
            WindowIndex* windows, const NvtxRanges* ranges, TraceCounts* counts);
  ~JoinStage();
  JoinStage(const JoinStage&) = delete;
  JoinStage& operator=(const JoinStage&) = delete;

  // One record each, as RecordDecoder::Walk reads them. Synchronization records go to AddSync
  // only when the sink wants them (sync_rows).
  void AddExternal(const FieldReader& f, const uint8_t* rec);
  void AddSync(const RecordLayout& layout, const FieldReader& f, const uint8_t* rec);
  void Add(const RecordLayout& layout, const FieldReader& f, const uint8_t* rec);  // GPU, API
  bool sync_rows() const { return sync_rows_; }

  // Makes rows of the records that have waited their horizon; after each buffer.
  void EmitDue();
  // Makes rows of every record still waiting; once, at the end of the read.
  void Finish();
  // The synchronization records read before the origin.
  void ReleaseHeld() override;

  // Earliest start and latest end of valid GPU/API records (CUPTI ns; 0 when none).
  uint64_t first_ts() const { return first_ts_; }
  uint64_t last_ts() const { return last_ts_; }
  // Records that entered the join ring, and how many later ones each waits.
  uint64_t joined() const { return joined_; }
  size_t horizon() const { return horizon_; }

 private:
  void Emit(const PendingRecord& p);
  void EmitInto(const PendingRecord& p, Row& row);  // fills the fields `p` has into `row`

  size_t horizon_;
  bool sync_rows_;
  RowDelivery* out_;
  NameTable* names_;
  WindowIndex* windows_;
  const NvtxRanges* ranges_;
  TraceCounts* counts_;
  // Records in arrival order; the ring holds `horizon_` records and the buffer being read.
  GrowingRing<PendingRecord> ring_;
  uint64_t joined_ = 0;
  // Join state by correlation id: the ids of the last 4 horizons of records.
  std::unique_ptr<CorrelationTable> corr_;
  std::vector<PendingRecord> held_sync_;  // synchronization records before the origin is known
  uint64_t first_ts_ = 0, last_ts_ = 0;
};

// Inline: one call per record.

inline void JoinStage::AddExternal(const FieldReader& f, const uint8_t* rec) {
  ++counts_->external_correlations;
  CorrelationEntry* e = corr_->Track(f.Get32(rec, Field::kCorrelationId));
  if (!e->has_external) {
    e->has_external = true;
    e->external_id = f.Get(rec, Field::kExternalId);
  }
}

inline void JoinStage::AddSync(const RecordLayout& layout, const FieldReader& f,
                               const uint8_t* rec) {
  // Emitted at once: nothing to join, and kept out of the join ring, the spans and the
  // unknown-timestamp count, so that every other row is emitted (and mapped to wall time, with
  // the calibration samples read so far) exactly as for a sink without synchronization rows.
  PendingRecord p;
  p.kind = layout.kind;
  p.record_class = layout.record_class;
  p.start = f.Get(rec, Field::kStart);
  p.end = f.Get(rec, Field::kEnd);
  p.corr = f.Get32(rec, Field::kCorrelationId);
  p.context = f.Get32(rec, Field::kContextId);
  p.stream = f.Get32(rec, Field::kStreamId);
  p.sync_type = f.Get32(rec, Field::kSyncType);
  p.event_id = f.Get32(rec, Field::kEventId);
  p.event_sync_id = f.Get(rec, Field::kEventSyncId);
  p.ret = f.Get32(rec, Field::kReturnValue);
  // Until the first GPU or API record fixes the origin, relative time filters cannot place it.
  if (out_->Holds(held_sync_.size())) held_sync_.push_back(p);
  else Emit(p);
}

inline void JoinStage::Add(const RecordLayout& layout, const FieldReader& f, const uint8_t* rec) {
  const RecordClass cls = layout.record_class;
  // Its fields as a previous record left them. The ring holds `horizon_` records and the buffer
  // being read: it starts at twice the horizon (untouched pages cost nothing), and doubles when
  // a buffer brings more.
  PendingRecord& p = ring_.PushSlot(2 * horizon_);
  ++joined_;
  // Every field EmitInto reads for this record class is set below, so the slot is not cleared
  // first: fields of other classes keep a previous record's values and are never read.
  p.kind = layout.kind;
  p.record_class = cls;
  p.start = f.Get(rec, Field::kStart);
  p.end = f.Get(rec, Field::kEnd);
  p.corr = f.Get32(rec, Field::kCorrelationId);
  if (TimedSpan(p.start, p.end)) {
    if (!out_->origin()) out_->FixOrigin(p.start);
    if (!first_ts_ || p.start < first_ts_) first_ts_ = p.start;
    if (p.end > last_ts_) last_ts_ = p.end;
  } else {
    ++counts_->unknown_timestamps;
  }
  CorrelationEntry* e = corr_->Track(p.corr);
  if (cls == RecordClass::kApi) {
    p.cbid = f.Get32(rec, Field::kCbid);
    p.pid = f.Get32(rec, Field::kProcessId);
    p.tid = f.Get32(rec, Field::kThreadId);
    p.ret = f.Get32(rec, Field::kReturnValue);
    if (TimedSpan(p.start, p.end) && !windows_->empty()) {
      if (WindowSpan* w = windows_->At(p.start))
        if (w->first_api_correlation == 0 || p.corr < w->first_api_correlation)
          w->first_api_correlation = p.corr;
    }
    const bool replace = e->has_api && e->api_kind == kKindDriver && p.kind == kKindRuntime;
    if (!e->has_api || replace) {
      // A runtime call replaces a driver call held for the same id: it is the launch the user
      // wrote.
      e->has_api = true;
      e->api_kind = static_cast<uint8_t>(p.kind);
      e->cbid = p.cbid;
      e->pid = p.pid;
      e->tid = p.tid;
      e->ret = p.ret;
      e->api_start = p.start;
      e->api_end = p.end;
    } else if (e->api_kind == p.kind) {
      ++counts_->duplicate_api_correlation;
      counts_->Note("correlation id " + std::to_string(p.corr) +
                    " is shared by two API records; only the first is joined");
    }
    return;
  }
  p.device = f.Get32(rec, Field::kDeviceId);
  p.context = f.Get32(rec, Field::kContextId);
  p.stream = f.Get32(rec, Field::kStreamId);
  p.graph_id = f.Get32(rec, Field::kGraphId);
  int32_t first = 0;
  if (cls == RecordClass::kKernel) {
    if (!out_->reuses_row()) {  // a sink of totals never reads them (and they may not be decoded)
      p.grid[0] = f.Get32(rec, Field::kGridX);
      p.grid[1] = f.Get32(rec, Field::kGridY);
      p.grid[2] = f.Get32(rec, Field::kGridZ);
      p.block[0] = f.Get32(rec, Field::kBlockX);
      p.block[1] = f.Get32(rec, Field::kBlockY);
      p.block[2] = f.Get32(rec, Field::kBlockZ);
      p.registers = f.Get32(rec, Field::kRegisters);
      p.static_smem = f.Get32(rec, Field::kStaticSharedMemory);
      p.dynamic_smem = f.Get32(rec, Field::kDynamicSharedMemory);
    }
    p.name_ptr = f.Get(rec, Field::kNamePointer);
    p.string_index = names_->KernelStringIndex(p.name_ptr);
    first = p.string_index;
  } else if (cls == RecordClass::kMemcpy) {
    p.bytes = f.Get(rec, Field::kBytes);
    p.copy_kind = f.Get32(rec, Field::kCopyKind);
    p.src_kind = static_cast<uint8_t>(f.Get(rec, Field::kSrcKind));
    p.dst_kind = static_cast<uint8_t>(f.Get(rec, Field::kDstKind));
    p.src_device = f.Get32(rec, Field::kSrcDeviceId);
    p.dst_device = f.Get32(rec, Field::kDstDeviceId);
    first = -10 - static_cast<int32_t>(p.copy_kind & 0xff);  // copyKind is one byte
  } else {
    p.bytes = f.Get(rec, Field::kBytes);
    p.memset_value = f.Get32(rec, Field::kMemsetValue);
    first = -2;
  }
  if (e->gpu_count++ == 0) e->gpu_first = first;
}

}  // namespace cupmon::decoder

// NvtxRows: NVTX marks and ranges as rows; the pairing and labels are NvtxRanges'.
#include "nvtx_rows.h"

#include <optional>
#include <string>

#include "hex_text.h"

namespace cupmon::decoder {

namespace {
constexpr uint32_t kMarkerInstantaneous = 1, kMarkerStart = 2, kMarkerEnd = 4;
constexpr uint32_t kObjectProcess = 1, kObjectThread = 2;  // CUpti_ActivityObjectKind
}  // namespace

NvtxRows::NvtxRows(uint64_t forget_after, bool range_rows, RowDelivery* out, NameTable* names,
                   TraceCounts* counts)
    : ranges_(forget_after), range_rows_(range_rows), out_(out), names_(names), counts_(counts) {}

void NvtxRows::Add(const FieldReader& f, const uint8_t* rec) {
  const uint32_t flags = f.Get32(rec, Field::kMarkerFlags);
  const uint64_t ts = f.Get(rec, Field::kTimestamp);
  const uint32_t id = f.Get32(rec, Field::kMarkerId);
  const uint32_t object_kind = f.Get32(rec, Field::kObjectKind);
  // objectId is a union: pt.processId/threadId for a process or thread, else device ids.
  const bool on_thread = object_kind == kObjectThread || object_kind == kObjectProcess;
  const uint32_t pid = on_thread ? f.Get32(rec, Field::kObjectId0) : 0;
  const uint32_t tid = object_kind == kObjectThread ? f.Get32(rec, Field::kObjectId1) : 0;
  if (flags & kMarkerEnd) {
    const std::optional<NvtxRange> ended = ranges_.End(id, ts, pid, tid, counts_->records);
    if (!ended) {
      // Usually a range pushed before the trace window opened (its START was not recorded).
      if (counts_->nvtx.ends_without_start++ == 0)
        counts_->notes.push_back("NVTX range END(s) with no START read (e.g. ranges begun before "
                                 "a window opened) are left out; see info");
      return;
    }
    ++counts_->nvtx.ranges;
    Emit(*ended);
    return;
  }
  if (!(flags & (kMarkerStart | kMarkerInstantaneous))) return;  // sync markers: not NVTX ranges
  const uint64_t name_ptr = f.Get(rec, Field::kNamePointer);
  if (name_ptr && !names_->HasString(name_ptr)) {
    if (counts_->nvtx.unresolved_names++ == 0)
      counts_->Note("NVTX range name pointer " + Hex(name_ptr) +
                    " has no string entry; shown as <unresolved range name>");
  }
  NvtxRange r;
  r.start = r.end = ts;
  r.id = id;
  r.name_id = names_->MarkerStringId(name_ptr, false);
  r.domain_id = names_->MarkerStringId(f.Get(rec, Field::kDomainPointer), true);
  r.pid = pid;
  r.tid = tid;
  r.depth = ranges_.Depth(pid, tid, ts);
  if (flags & kMarkerInstantaneous) {
    ++counts_->nvtx.marks;
    r.kind = RangeKind::kMark;
    Emit(r);
    return;
  }
  const bool placed = ts && ts < kTimeLimit;  // else it labels nothing
  if (std::optional<NvtxRange> given_up = ranges_.Start(r, counts_->records, placed)) {
    ++counts_->nvtx.unended;
    Emit(*given_up);
  }
}

void NvtxRows::Finish() {
  const std::vector<NvtxRange> unended = ranges_.TakeUnended();
  for (const NvtxRange& r : unended) {
    ++counts_->nvtx.unended;
    Emit(r);
  }
  if (!unended.empty())
    counts_->notes.push_back(std::to_string(unended.size()) +
                             " NVTX range(s) started but never ended by the recording's end; "
                             "shown as unended");
}

void NvtxRows::ReleaseHeld() {
  std::vector<NvtxRange> held;
  held.swap(held_);
  for (const NvtxRange& r : held) Emit(r);
}

void NvtxRows::Emit(const NvtxRange& r) {
  if (!range_rows_) return;
  if (out_->Holds(held_.size())) {
    held_.push_back(r);  // relative time filters need the origin
    return;
  }
  Row row;
  row.type = RowType::kRange;
  row.kind = kKindMarker;
  out_->PlaceInTime(row, r.start, r.ended ? r.end : r.start);
  row.name_id = r.name_id;
  row.name = names_->NameOf(r.name_id);
  row.range_domain = names_->NameOf(r.domain_id);
  row.pid = r.pid;
  row.tid = r.tid;
  row.nvtx.kind = r.kind;
  row.nvtx.ended = r.ended;
  row.nvtx.depth = r.depth;
  row.nvtx.id = r.id;
  if (!out_->Keep(row)) return;
  ++counts_->nvtx.range_rows;
  out_->DeliverNow(row);
}

}  // namespace cupmon::decoder

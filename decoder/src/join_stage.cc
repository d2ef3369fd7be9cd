// JoinStage: GPU and API records joined by correlation id into rows, and synchronization rows.
#include "join_stage.h"

#include "cupmon/decoder/kernel_names.h"
#include "nvtx_ranges.h"

namespace cupmon::decoder {

JoinStage::JoinStage(size_t horizon, bool sync_rows, RowDelivery* out, NameTable* names,
                     WindowIndex* windows, const NvtxRanges* ranges, TraceCounts* counts)
    : horizon_(horizon),
      sync_rows_(sync_rows),
      out_(out),
      names_(names),
      windows_(windows),
      ranges_(ranges),
      counts_(counts),
      // Correlation entries live for a few horizons after they arrive, so memory stays bounded.
      corr_(CorrelationTable::Make(4 * horizon_ + 1)) {}

JoinStage::~JoinStage() { CorrelationTable::Recycle(std::move(corr_)); }

void JoinStage::EmitDue() {
  for (; ring_.size() > horizon_; ring_.pop_front()) Emit(ring_.front());
  corr_->Retire(4 * horizon_);
}

void JoinStage::Finish() {
  for (; !ring_.empty(); ring_.pop_front()) Emit(ring_.front());
}

void JoinStage::ReleaseHeld() {
  for (const PendingRecord& p : held_sync_) Emit(p);
  held_sync_.clear();
}

void JoinStage::Emit(const PendingRecord& p) {
  if (Row* slot = out_->Slot()) {
    EmitInto(p, *slot);
    return;
  }
  Row row;
  EmitInto(p, row);
}

// With a reused row (RowDelivery::reuses_row), a field set on one path only may hold an earlier
// row's value: nothing here reads a field before setting it in the same call, and no filter
// reads one.
void JoinStage::EmitInto(const PendingRecord& p, Row& row) {
  const bool reuse = out_->reuses_row();
  row.kind = p.kind;
  out_->PlaceInTime(row, p.start, p.end);
  row.correlation = p.corr;
  const CorrelationEntry* e = corr_->Find(p.corr);
  if (e && e->has_external) {
    row.external_id = e->external_id;
    row.annotation = names_->Annotation(e->external_id);
  }
  if (p.record_class == RecordClass::kSynchronization) {
    row.type = RowType::kSynchronization;
    row.context = p.context;
    row.stream = p.stream;
    row.sync.type = p.sync_type;
    row.sync.event_id = p.event_id;
    row.sync.event_sync_id = p.event_sync_id;
    row.return_value = p.ret;
    row.name_id = names_->SyncNameId();
  } else if (p.record_class == RecordClass::kApi) {
    row.type = RowType::kApi;
    row.name_id = names_->ApiNameId(p.kind, p.cbid);
    row.pid = p.pid;
    row.tid = p.tid;
    row.cbid = p.cbid;
    row.return_value = p.ret;
    row.nested = p.kind == kKindDriver && e && e->has_api && e->api_kind == kKindRuntime;
    row.duplicate = e && e->has_api && e->api_kind == p.kind &&
                    !(e->tid == row.tid && e->api_start == p.start);
    // Only the joined API record claims the launched activities, so counts are never doubled.
    const bool owner = e && e->has_api && e->api_kind == p.kind && e->tid == row.tid &&
                       e->api_start == p.start;
    if (e && e->gpu_count && owner) {
      row.launched = e->gpu_count;
      const int64_t first = e->gpu_first;
      if (first >= 0) row.launched_name = names_->NameOf(names_->KernelNameId(first, 0));
      else if (first == -2) row.launched_name = "[CUDA memset]";
      else if (first <= -10) row.launched_name = MemcpyKindName(static_cast<uint32_t>(-10 - first));
    } else {
      ++counts_->api_without_gpu;
    }
  } else {
    row.type = p.record_class == RecordClass::kKernel   ? RowType::kKernel
               : p.record_class == RecordClass::kMemcpy ? RowType::kMemcpy
                                                        : RowType::kMemset;
    row.device = p.device;
    row.context = p.context;
    row.stream = p.stream;
    row.launch.graph_id = p.graph_id;
    if (row.type == RowType::kKernel) {
      for (int i = 0; i < 3; ++i) {
        row.launch.grid[i] = p.grid[i];
        row.launch.block[i] = p.block[i];
      }
      row.launch.registers = p.registers;
      row.launch.static_smem = p.static_smem;
      row.launch.dynamic_smem = p.dynamic_smem;
      if (p.string_index < 0) ++counts_->unresolved_names;
      row.name_id = names_->KernelNameId(p.string_index, p.name_ptr);
      if (p.string_index >= 0 && !reuse)
        row.raw_name = names_->String(static_cast<size_t>(p.string_index));
    } else if (row.type == RowType::kMemcpy) {
      row.bytes = p.bytes;
      row.copy.kind = p.copy_kind;
      row.copy.src_kind = p.src_kind;
      row.copy.dst_kind = p.dst_kind;
      row.copy.src_device = p.src_device;
      row.copy.dst_device = p.dst_device;
      row.name_id = names_->MemcpyNameId(row.copy.kind);
    } else {
      row.bytes = p.bytes;
      row.memset_value = p.memset_value;
      row.name_id = names_->MemsetNameId();
    }
    if (e && e->has_api) {
      row.api.found = true;
      row.api.kind = e->api_kind;
      row.api.cbid = e->cbid;
      row.api.pid = e->pid;
      row.api.tid = e->tid;
      row.api.return_value = e->ret;
      row.api.valid_time = TimedSpan(e->api_start, e->api_end);
      if (row.api.valid_time) {
        row.api.start = e->api_start;
        row.api.end = e->api_end;
        if (out_->wall_times()) {
          row.api.wall_start = out_->clock().ToWall(e->api_start);
          row.api.wall_end = out_->clock().ToWall(e->api_end);
        }
      }
      row.api_name_id = names_->ApiNameId(e->api_kind, e->cbid);
      row.api.name = names_->NameOf(row.api_name_id);
      if (row.api.valid_time && ranges_->labels_any() && !reuse) {
        if (auto label =
                ranges_->LabelOf(e->pid, e->tid, e->api_start, out_->filter().nvtx_scope)) {
          row.range = names_->NameOf(label->name_id);
          row.range_scope = label->scope;
        }
      }
    } else {
      ++counts_->gpu_without_api;
      if (row.valid_time && !windows_->empty()) {
        WindowSpan* w = windows_->At(row.start);
        if (w && w->first_api_correlation && row.correlation < w->first_api_correlation) {
          row.api.before_window = true;
          ++w->launched_before;
          ++counts_->launched_before_window;
        }
      }
    }
  }
  // A sink of totals (reuse) reads none of the names and the range, and has no filter and no
  // reorder stage: it gets the row straight (RowSink::ReadsTotalsOnly).
  if (!reuse) row.name = names_->NameOf(row.name_id);
  if (!reuse && !out_->Keep(row)) return;
  if (row.type == RowType::kApi) {
    ++counts_->api_rows;
  } else if (row.type == RowType::kSynchronization) {
    ++counts_->sync_rows;
  } else {
    ++counts_->gpu_rows;
  }
  if (reuse) out_->DeliverNow(row);
  else out_->Deliver(row);
}

}  // namespace cupmon::decoder

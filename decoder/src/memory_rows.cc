// MemoryRows: device memory records as rows.
#include "memory_rows.h"

#include <algorithm>

namespace cupmon::decoder {

void MemoryRows::Add(const RecordLayout& layout, const FieldReader& f, const uint8_t* rec) {
  if (layout.record_class == RecordClass::kMemory) ++counts_->memory_records;
  else ++counts_->memory_pool_records;
  if (!memory_rows_) return;
  Row row;
  row.type = RowType::kMemory;
  row.kind = layout.kind;
  row.start = row.end = f.Get(rec, Field::kTimestamp);
  row.valid_time = TimedSpan(row.start, row.end);
  if (!row.valid_time) row.start = row.end = 0;
  row.device = f.Get32(rec, Field::kDeviceId);
  row.context = f.Get32(rec, Field::kContextId);
  row.stream = f.Get32(rec, Field::kStreamId);
  row.correlation = f.Get32(rec, Field::kCorrelationId);
  row.pid = f.Get32(rec, Field::kProcessId);
  row.bytes = f.Get(rec, Field::kBytes);
  auto small = [](uint64_t v) {
    return static_cast<uint8_t>(std::min<uint64_t>(v, kMemoryValueTooLarge));
  };
  row.memory.op = small(f.Get32(rec, Field::kMemoryOperation));
  row.memory.kind = small(f.Get32(rec, Field::kMemoryKind));
  row.memory.pool_type = small(f.Get32(rec, Field::kPoolType));
  row.address = f.Get(rec, Field::kAddress);
  row.pool_address = f.Get(rec, Field::kPoolAddress);
  if (out_->Holds(held_.size())) {
    held_.push_back(row);  // relative time filters need the origin
    return;
  }
  Emit(row);
}

void MemoryRows::ReleaseHeld() {
  std::vector<Row> held;
  held.swap(held_);
  for (const Row& r : held) Emit(r);
}

void MemoryRows::Emit(Row row) {
  // Always on the wall clock (memory rows are few): every report that places a memory change in
  // time then uses the calibration this row was read with, as the exports do.
  if (row.valid_time) row.wall_start = row.wall_end = out_->clock().ToWall(row.start);
  if (!out_->Keep(row)) return;
  ++counts_->memory_rows;
  out_->DeliverNow(row);
}

}  // namespace cupmon::decoder

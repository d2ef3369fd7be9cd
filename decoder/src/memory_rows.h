// MemoryRows: the trace builder's device memory records on their way to rows (RowType::kMemory),
// on its (reading) thread.
#pragma once

#include <cstdint>
#include <vector>

#include "cupmon/decoder/record_layout.h"
#include "cupmon/decoder/row.h"
#include "cupmon/decoder/trace_counts.h"
#include "row_delivery.h"

namespace cupmon::decoder {

// MEMORY2 and MEMORY_POOL records are counted, and become rows when the sink wants them
// (`memory_rows`); nothing is joined (the running sums live in the sinks:
// decoder/src/commands/rows_report.cc). Like ranges, rows read before the time origin is known
// are held (RowDelivery::Holds), so relative time filters can place them. The delivery and
// counts are the builder's and outlive this. Single-threaded.
class MemoryRows : public RowsHeldForOrigin {
 public:
  MemoryRows(bool memory_rows, RowDelivery* out, TraceCounts* counts)
      : memory_rows_(memory_rows), out_(out), counts_(counts) {}

  // One MEMORY2 or MEMORY_POOL record, as RecordDecoder::Walk reads it.
  void Add(const RecordLayout& layout, const FieldReader& f, const uint8_t* rec);
  void ReleaseHeld() override;

 private:
  void Emit(Row row);

  bool memory_rows_;
  RowDelivery* out_;
  TraceCounts* counts_;
  std::vector<Row> held_;  // rows read before the origin is known
};

}  // namespace cupmon::decoder

// NvtxRows: the trace builder's NVTX MARKER records on their way to rows (RowType::kRange), on
// its (reading) thread.
#pragma once

#include <cstdint>
#include <vector>

#include "cupmon/decoder/record_layout.h"
#include "cupmon/decoder/trace_counts.h"
#include "name_table.h"
#include "nvtx_ranges.h"
#include "row_delivery.h"

namespace cupmon::decoder {

// A range becomes a row when its END is read, a mark at once, a range never ended when the read
// ends (Finish) or when too many wait (NvtxRanges::kMaxOpen); rows are made only when the sink
// wants them (`range_rows`), while the pairing and the labels of GPU rows (ranges(), read by the
// join stage) are kept whatever it wants. Rows read before the time origin is known are held
// (RowDelivery::Holds). The delivery, names and counts are the builder's and outlive this.
// Single-threaded.
class NvtxRows : public RowsHeldForOrigin {
 public:
  // An ended range is forgotten for labels `forget_after` records after its END
  // (NvtxRanges).
  NvtxRows(uint64_t forget_after, bool range_rows, RowDelivery* out, NameTable* names,
           TraceCounts* counts);

  // One MARKER record, as RecordDecoder::Walk reads it.
  void Add(const FieldReader& f, const uint8_t* rec);
  // Emits the ranges never ended, with no end (Row::nvtx.ended false), oldest id first; once,
  // at the end of the read, after the held rows are released.
  void Finish();
  void ReleaseHeld() override;

  const NvtxRanges& ranges() const { return ranges_; }

 private:
  void Emit(const NvtxRange& r);

  NvtxRanges ranges_;
  bool range_rows_;
  RowDelivery* out_;
  NameTable* names_;
  TraceCounts* counts_;
  std::vector<NvtxRange> held_;  // ranges read before the origin is known
};

}  // namespace cupmon::decoder

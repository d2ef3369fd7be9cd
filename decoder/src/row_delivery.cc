// RowDelivery: time placement, filters, the time origin and the reorder stage of the trace
// builder's rows.
#include "row_delivery.h"

#include <regex>
#include <utility>

#include "window_index.h"

namespace cupmon::decoder {

RowDelivery::RowDelivery(TraceFilter filter, RowSink* sink, ReorderOptions reorder,
                         size_t hold_limit, const ClockMap* clock, const WindowIndex* windows,
                         TraceCounts* counts)
    : filter_(std::move(filter)),
      sink_(sink),
      clock_(clock),
      windows_(windows),
      counts_(counts),
      hold_limit_(hold_limit),
      timed_filter_(filter_.timed()),
      filtered_(timed_filter_ || filter_.device || filter_.stream || filter_.kernel),
      wall_times_(timed_filter_ || !sink_ || sink_->NeedsWallTimes()),
      reuse_row_(sink_ && sink_->ReadsTotalsOnly() && !filtered_ && reorder.rows == 0) {
  if (reorder.rows) reorder_stage_ = std::make_unique<ReorderStage>(reorder, sink_, counts_);
}

RowDelivery::~RowDelivery() = default;

void RowDelivery::FixOrigin(uint64_t ts) {
  origin_ts_ = ts;
  for (RowsHeldForOrigin* part : holders_) part->ReleaseHeld();
}

void RowDelivery::EndHolding() {
  ending_ = true;
  for (RowsHeldForOrigin* part : holders_) part->ReleaseHeld();
}

void RowDelivery::Flush() {
  if (reorder_stage_) reorder_stage_->Flush();
}

bool RowDelivery::PassesFilters(const Row& row) const {
  const bool gpu = row.type != RowType::kApi && row.type != RowType::kSynchronization &&
                   row.type != RowType::kRange && row.type != RowType::kMemory;
  if (row.type == RowType::kMemory && filter_.device && row.device != *filter_.device)
    return false;
  if (gpu && (filter_.device || filter_.stream || filter_.kernel)) {
    if (filter_.device && row.device != *filter_.device) return false;
    if (filter_.stream && row.stream != *filter_.stream) return false;
    if (filter_.kernel && !std::regex_search(row.name.begin(), row.name.end(), *filter_.kernel))
      return false;
  }
  if (!timed_filter_) return true;
  if (!row.valid_time) return false;  // unknown time cannot be placed inside a range
  if (filter_.window) {
    auto w = windows_->windows().find(*filter_.window);
    if (w == windows_->windows().end() || row.start < w->second.begin) return false;
    if (w->second.end && row.start > w->second.end) return false;
  }
  if (filter_.from_wall && row.wall_start < *filter_.from_wall) return false;
  if (filter_.to_wall && row.wall_start > *filter_.to_wall) return false;
  // In 128 bits: wall times come from the file's calibration, whose damage may put them anywhere.
  __extension__ const __int128 rel = static_cast<__int128>(row.wall_start) - origin_wall();
  if (filter_.from_rel && rel < *filter_.from_rel) return false;
  if (filter_.to_rel && rel > *filter_.to_rel) return false;
  return true;
}

}  // namespace cupmon::decoder

// RowDelivery: the last leg of the trace builder's rows, on its (reading) thread: placed in time,
// filtered, held until the time origin is known, put in start-time order, handed to the sink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cupmon/decoder/clock_map.h"
#include "cupmon/decoder/row.h"
#include "cupmon/decoder/trace_counts.h"
#include "cupmon/decoder/trace_filter.h"
#include "reorder_stage.h"

namespace cupmon::decoder {

class WindowIndex;

// A part of the builder that holds the rows it reads before the time origin is known
// (RowDelivery::Holds), so that relative time filters can place them.
class RowsHeldForOrigin {
 public:
  virtual ~RowsHeldForOrigin() = default;
  // Hands every held row on; called once the origin is known, or when the read ends.
  virtual void ReleaseHeld() = 0;
};

// The builder's parts make rows (the join stage, NVTX and memory rows) and hand them here. Rows
// get their times (CUPTI ns, and wall-clock ns through the recording's calibration when the sink
// or a time filter reads them); the filter decides which are kept; kept GPU and API rows with a
// valid time go through the reorder stage when the builder has one (ReorderOptions), all others
// straight to the sink. Relative times count from the time origin, the first valid start of a
// GPU or API record in stream order, which the join stage fixes (FixOrigin); until then the
// parts hold what they read (at most `hold_limit` rows each), and FixOrigin, or EndHolding at the
// end of the read, has them release it, in the order they were registered (HoldFor). The clock,
// the windows and the counts are the builder's and outlive this. Single-threaded.
class RowDelivery {
 public:
  // `sink` may be null for a builder without rows (then nothing is delivered).
  RowDelivery(TraceFilter filter, RowSink* sink, ReorderOptions reorder, size_t hold_limit,
              const ClockMap* clock, const WindowIndex* windows, TraceCounts* counts);
  ~RowDelivery();
  RowDelivery(const RowDelivery&) = delete;
  RowDelivery& operator=(const RowDelivery&) = delete;

  const TraceFilter& filter() const { return filter_; }
  // Whether the filter selects by time (TraceFilter::timed).
  bool timed_filter() const { return timed_filter_; }
  // Rows get wall_* fields (the sink or a time filter reads them).
  bool wall_times() const { return wall_times_; }
  // Rows are built in one reused Row and reach a sink of totals unfiltered
  // (RowSink::ReadsTotalsOnly, with no filter and no reorder stage).
  bool reuses_row() const { return reuse_row_; }
  const ClockMap& clock() const { return *clock_; }

  // The time origin (CUPTI ns; 0 until fixed), and in wall-clock ns (0 until fixed).
  uint64_t origin() const { return origin_ts_; }
  int64_t origin_wall() const { return origin_ts_ ? clock_->ToWall(origin_ts_) : 0; }
  // Fixes the origin (once, `ts` != 0) and has every part release its held rows.
  void FixOrigin(uint64_t ts);
  // Registers a part that holds rows for the origin; before the read begins.
  void HoldFor(RowsHeldForOrigin* part) { holders_.push_back(part); }
  // Whether a part that holds `held` rows holds its next one: no origin yet, the read not ended,
  // and room left.
  bool Holds(size_t held) const { return !origin_ts_ && !ending_ && held < hold_limit_; }
  // The read has ended: every part releases its held rows, and holds no more.
  void EndHolding();

  // start/end, valid_time, duration and (when rows carry them) the wall times of a row; an
  // untimed span leaves start, end and duration 0.
  void PlaceInTime(Row& row, uint64_t start, uint64_t end) const {
    row.valid_time = TimedSpan(start, end);
    if (!row.valid_time) {
      row.start = row.end = 0;
      row.duration = 0;
      return;
    }
    row.start = start;
    row.end = end;
    if (wall_times_) {
      row.wall_start = clock_->ToWall(start);
      row.wall_end = clock_->ToWall(end);
    }
    row.duration = clock_->WallDuration(start, end);
  }
  // Whether the filter keeps `row`; a row left out is counted (TraceCounts::filtered_out).
  bool Keep(const Row& row) {
    if (!filtered_ || PassesFilters(row)) return true;
    ++counts_->filtered_out;
    return false;
  }
  // Where to build a GPU, API or synchronization row: the reused row (reuses_row), the slot the
  // reorder stage keeps for its next row (ReorderStage::Claim: an empty row), or null for a new
  // Row of the caller's.
  Row* Slot() {
    if (reuse_row_) return &reused_row_;
    if (reorder_stage_) return &reorder_stage_->Claim();
    return nullptr;
  }
  // Delivers a kept GPU, API or synchronization row. Synchronization rows skip the reorder stage:
  // held there, they would release the other rows earlier, before calibration samples that the
  // other exports map them with.
  void Deliver(const Row& row) {
    if (!reorder_stage_ || !row.valid_time || row.type == RowType::kSynchronization) {
      sink_->OnRow(row);
      return;
    }
    reorder_stage_->Add(row);
  }
  // Hands a kept row straight to the sink, never reordered (ranges, memory, a reused row).
  void DeliverNow(const Row& row) { sink_->OnRow(row); }
  // Hands the sink every row the reorder stage holds; after the last row.
  void Flush();

 private:
  bool PassesFilters(const Row& row) const;

  TraceFilter filter_;
  RowSink* sink_;
  const ClockMap* clock_;
  const WindowIndex* windows_;
  TraceCounts* counts_;
  size_t hold_limit_;
  bool timed_filter_;
  bool filtered_;  // any filter: timed, or by device, stream or kernel name
  bool wall_times_;
  bool reuse_row_;
  Row reused_row_;
  // Null without reordering (ReorderOptions::rows 0).
  std::unique_ptr<ReorderStage> reorder_stage_;
  uint64_t origin_ts_ = 0;
  bool ending_ = false;  // EndHolding has begun
  std::vector<RowsHeldForOrigin*> holders_;
};

}  // namespace cupmon::decoder

// TraceBuilder: one recording's chunks handed to its parts (record_walker.h, join_stage.h,
// nvtx_rows.h, memory_rows.h, row_delivery.h, name_table.h, window_index.h), and the counts and
// clock of the chunks that are not records.
#include "cupmon/decoder/trace_builder.h"

#include <algorithm>
#include <string>
#include <utility>

#include "join_stage.h"
#include "memory_rows.h"
#include "name_table.h"
#include "nvtx_rows.h"
#include "record_walker.h"
#include "row_delivery.h"
#include "window_index.h"

namespace cupmon::decoder {

namespace {

// What a ranged read asks of a builder with rows (RangedVisitor): the filter's time range, the
// time origin, and how far the join reaches.
class JoinedRange final : public RangedVisitor {
 public:
  JoinedRange(const RowDelivery& rows, const JoinStage& join) : rows_(rows), join_(join) {}

  ReadRange Range() const override {
    const TraceFilter& f = rows_.filter();
    ReadRange r;
    r.window = f.window;
    r.from_wall = f.from_wall;
    r.to_wall = f.to_wall;
    r.from_rel = f.from_rel;
    r.to_rel = f.to_rel;
    return r;
  }
  uint64_t TimeOrigin() const override { return rows_.origin(); }
  uint64_t JoinedRecords() const override { return join_.joined(); }
  uint64_t JoinHorizon() const override { return join_.horizon(); }

 private:
  const RowDelivery& rows_;
  const JoinStage& join_;
};

}  // namespace

TraceBuilder::TraceBuilder(TraceFilter filter, RowSink* sink, size_t horizon,
                           ReorderOptions reorder)
    : names_(std::make_unique<NameTable>(filter.mangled)),
      windows_(std::make_unique<WindowIndex>()) {
  if (!horizon) horizon = 1;
  rows_ = std::make_unique<RowDelivery>(std::move(filter), sink, reorder, horizon, &clock_,
                                        windows_.get(), &counts_);
  // Ranges that ended long before any row still waiting in the join stage was launched are
  // forgotten.
  nvtx_ = std::make_unique<NvtxRows>(8 * static_cast<uint64_t>(horizon),
                                     sink && sink->WantsRanges(), rows_.get(), names_.get(),
                                     &counts_);
  memory_ = std::make_unique<MemoryRows>(sink && sink->WantsMemory(), rows_.get(), &counts_);
  join_ = std::make_unique<JoinStage>(horizon, sink && sink->WantsSynchronization(), rows_.get(),
                                      names_.get(), windows_.get(), &nvtx_->ranges(), &counts_);
  // Rows held for the origin go out in this order: synchronization, ranges, memory.
  rows_->HoldFor(join_.get());
  rows_->HoldFor(nvtx_.get());
  rows_->HoldFor(memory_.get());
  const uint64_t fields = rows_->reuses_row() ? kAllFields & ~kKernelGeometry : kAllFields;
  walker_ = std::make_unique<RecordWalker>(&counts_, join_.get(), nvtx_.get(), memory_.get(),
                                           fields);
}

TraceBuilder::TraceBuilder(RecordConsumer* consumer)
    : names_(std::make_unique<NameTable>(false)),
      windows_(std::make_unique<WindowIndex>()),
      rows_(std::make_unique<RowDelivery>(TraceFilter{}, nullptr, ReorderOptions{}, 1, &clock_,
                                          windows_.get(), &counts_)),
      walker_(std::make_unique<RecordWalker>(&counts_, nullptr, nullptr, nullptr, 0)) {
  AddConsumer(consumer);
}

TraceBuilder::~TraceBuilder() = default;

void TraceBuilder::AddConsumer(RecordConsumer* consumer) { walker_->AddConsumer(consumer); }

void TraceBuilder::AllowRangedRead() {
  if (rows_->timed_filter() && join_) ranged_ = std::make_unique<JoinedRange>(*rows_, *join_);
}

const std::map<uint32_t, WindowSpan>& TraceBuilder::windows() const { return windows_->windows(); }
const std::map<uint32_t, WindowSpan>& TraceBuilder::gaps() const { return windows_->gaps(); }
const std::map<uint32_t, WindowSpan>& TraceBuilder::behind() const { return windows_->behind(); }
const pb::RecordingHeader& TraceBuilder::header() const { return walker_->header(); }
const TraceFilter& TraceBuilder::filter() const { return rows_->filter(); }
uint64_t TraceBuilder::first_ts() const { return join_ ? join_->first_ts() : 0; }
uint64_t TraceBuilder::last_ts() const { return join_ ? join_->last_ts() : 0; }
int64_t TraceBuilder::origin_wall() const { return rows_->origin_wall(); }
std::string_view TraceBuilder::NameOf(uint32_t id) const { return names_->NameOf(id); }
size_t TraceBuilder::name_count() const { return names_->size(); }

void TraceBuilder::OnHeader(const pb::RecordingHeader& header, const ChunkOrigin& /*at*/) {
  walker_->OnHeader(header);
}

bool TraceBuilder::RecordWordsRead(ColumnSelection* keep) const {
  return walker_->RecordWordsRead(keep);
}

void TraceBuilder::OnRawBuffer(const RawBufferPrefix& /*prefix*/,
                               std::span<const uint8_t> records, const ChunkOrigin& at) {
  walker_->OnRawBuffer(records, at);
}

void TraceBuilder::OnPackedRawBuffer(const RawBufferPrefix& /*prefix*/,
                                     std::span<const uint8_t> records,
                                     const ColumnSelection& packed_with, const ChunkOrigin& at) {
  walker_->OnPackedRawBuffer(records, packed_with, at);
}

void TraceBuilder::OnStrings(const pb::StringTable& table) {
  for (RecordConsumer* c : walker_->consumers()) c->OnStrings(table);
  if (join_) names_->OnStrings(table);
}

void TraceBuilder::OnWindowMarker(const pb::WindowMarker& m) {
  for (RecordConsumer* c : walker_->consumers()) c->OnWindowMarker(m);
  if (join_) windows_->OnMarker(m);
}

void TraceBuilder::OnCalibration(const pb::Calibration& c) {
  for (RecordConsumer* consumer : walker_->consumers()) consumer->OnCalibration(c);
  if (!join_) return;
  for (const pb::CalibrationSample& s : c.samples()) {
    const int64_t offset =
        static_cast<int64_t>(static_cast<uint64_t>(s.realtime_ns()) - s.cupti_ns());
    const bool first = counts_.calibration.samples == 0 && &s == &c.samples(0);
    if (first) counts_.calibration.offset_first = counts_.calibration.offset_min =
        counts_.calibration.offset_max = offset;
    counts_.calibration.offset_min = std::min(counts_.calibration.offset_min, offset);
    counts_.calibration.offset_max = std::max(counts_.calibration.offset_max, offset);
  }
  if (rows_->filter().cupti_clock) return;  // a ClockMap without samples passes CUPTI times through
  clock_.Add(c);
  counts_.calibration.samples = clock_.samples();
  if (clock_.non_monotonic() != counts_.calibration.non_monotonic) {
    counts_.calibration.non_monotonic = clock_.non_monotonic();
    counts_.Note("calibration: " + std::to_string(clock_.non_monotonic()) +
                 " sample(s) with non-increasing CUPTI time dropped");
  }
  // Not a warning: each domain is mapped with its own samples (clock_map.h). One message, whose
  // count follows the switches seen so far.
  if (clock_.domain_changes() != counts_.calibration.domain_changes) {
    static constexpr std::string_view kPrefix = "calibration: CUPTI's clock changed domain ";
    std::string m = std::string(kPrefix) + std::to_string(clock_.domain_changes()) +
                    " time(s), e.g. a profiler's timestamp callback; each domain is mapped with "
                    "its own calibration";
    auto it = std::find_if(counts_.notes.begin(), counts_.notes.end(),
                           [](const std::string& x) { return x.starts_with(kPrefix); });
    if (it != counts_.notes.end()) {
      *it = std::move(m);
    } else {
      counts_.notes.push_back(std::move(m));
    }
  }
  counts_.calibration.domain_changes = clock_.domain_changes();
}

void TraceBuilder::OnStats(const pb::Stats& stats) {
  counts_.have_stats = true;
  counts_.stats = stats;
  counts_.stats_final = false;
}

void TraceBuilder::OnFooter(const pb::Footer& footer) {
  if (footer.has_stats()) OnStats(footer.stats());
  counts_.stats_final = footer.has_stats() && footer.recording_ended();
}

void TraceBuilder::Finish() {
  if (!join_) return;
  rows_->EndHolding();
  nvtx_->Finish();
  join_->Finish();
  rows_->Flush();
}

}  // namespace cupmon::decoder

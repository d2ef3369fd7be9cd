// TraceBuilder: decoding, correlation joins, counts and filters for one recording; names, windows,
// NVTX ranges, the join state and the reorder stage are its parts (name_table.h, window_index.h,
// nvtx_ranges.h, correlation_table.h, reorder_stage.h).
#include "cupmon/decoder/trace_builder.h"

#include <algorithm>

#include "correlation_table.h"
#include "cupmon/base/growing_ring.h"
#include "hex_text.h"
#include "name_table.h"
#include "nvtx_ranges.h"
#include "reorder_stage.h"
#include "window_index.h"

namespace cupmon::decoder {

// One GPU or API record, decoded straight from the raw bytes with only the fields rows use
// (about 120 bytes, against 336 for a DecodedRecord): it waits in the join ring.
struct TraceBuilder::Pending {
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

// The join stage: records in arrival order, each waiting `horizon_` later records for its
// partners.
struct TraceBuilder::JoinRing : GrowingRing<Pending> {};

TraceBuilder::TraceBuilder(TraceFilter filter, RowSink* sink, size_t horizon,
                           ReorderOptions reorder)
    : filter_(std::move(filter)),
      sink_(sink),
      horizon_(horizon ? horizon : 1),
      reorder_(reorder),
      windows_(std::make_unique<WindowIndex>()),
      names_(std::make_unique<NameTable>(filter_.mangled)),
      pending_(std::make_unique<JoinRing>()),
      // Correlation entries live for a few horizons after they arrive, so memory stays bounded.
      corr_(CorrelationTable::Make(4 * horizon_ + 1)),
      // Ranges that ended long before any row still waiting in the join stage was launched are
      // forgotten.
      ranges_(std::make_unique<NvtxRanges>(8 * static_cast<uint64_t>(horizon_))) {
  timed_filter_ = filter_.window || filter_.from_wall || filter_.to_wall || filter_.from_rel ||
                  filter_.to_rel;
  filtered_ = timed_filter_ || filter_.device || filter_.stream || filter_.kernel;
  wall_times_ = timed_filter_ || !sink_ || sink_->NeedsWallTimes();
  sync_rows_ = sink_ && sink_->WantsSynchronization();
  reuse_row_ = sink_ && sink_->ReadsTotalsOnly() && !timed_filter_ && !filter_.device &&
               !filter_.stream && !filter_.kernel && reorder_.rows == 0;
  if (reorder_.rows)
    reorder_stage_ = std::make_unique<ReorderStage>(reorder_, sink_, &counts_);
  range_rows_ = sink_ && sink_->WantsRanges();
  memory_rows_ = sink_ && sink_->WantsMemory();
}

TraceBuilder::TraceBuilder(RecordConsumer* consumer)
    : decode_only_(true),
      sink_(nullptr),
      horizon_(1),
      windows_(std::make_unique<WindowIndex>()),
      names_(std::make_unique<NameTable>(false)),
      pending_(std::make_unique<JoinRing>()) {
  AddConsumer(consumer);
}

TraceBuilder::~TraceBuilder() { CorrelationTable::Recycle(std::move(corr_)); }

void TraceBuilder::AddConsumer(RecordConsumer* consumer) {
  consumers_.push_back(consumer);
  consumer_fields_ |= consumer->FieldsRead();
}

const std::map<uint32_t, WindowSpan>& TraceBuilder::windows() const { return windows_->windows(); }
const std::map<uint32_t, WindowSpan>& TraceBuilder::gaps() const { return windows_->gaps(); }
const std::map<uint32_t, WindowSpan>& TraceBuilder::behind() const { return windows_->behind(); }
std::string_view TraceBuilder::NameOf(uint32_t id) const { return names_->NameOf(id); }
size_t TraceBuilder::name_count() const { return names_->size(); }

void TraceBuilder::OnHeader(const pb::RecordingHeader& header, const ChunkOrigin& /*at*/) {
  // Every file restates the header; the first one read defines the layouts.
  if (have_header_) return;
  have_header_ = true;
  header_ = header;
  RecordSizeTable sizes;
  for (const auto& rs : header.record_sizes()) sizes.Set(rs.kind(), rs.size());
  decoder_ = std::make_unique<RecordDecoder>(sizes, header.cupti_api_version());
}

// A kernel's launch geometry, which AddRecord skips for a sink of totals (reuse_row_).
constexpr uint64_t kKernelGeometry =
    FieldBit(Field::kGridX) | FieldBit(Field::kGridY) | FieldBit(Field::kGridZ) |
    FieldBit(Field::kBlockX) | FieldBit(Field::kBlockY) | FieldBit(Field::kBlockZ) |
    FieldBit(Field::kRegisters) | FieldBit(Field::kStaticSharedMemory) |
    FieldBit(Field::kDynamicSharedMemory);

bool TraceBuilder::RecordWordsRead(ColumnSelection* keep) const {
  if (!decoder_) return false;
  const uint64_t own = decode_only_ ? 0 : reuse_row_ ? kAllFields & ~kKernelGeometry : kAllFields;
  *keep = decoder_->WordsRead(own | consumer_fields_, /*pack=*/true);
  return true;
}

void TraceBuilder::OnStrings(const pb::StringTable& table) {
  for (RecordConsumer* c : consumers_) c->OnStrings(table);
  if (!decode_only_) names_->OnStrings(table);
}

void TraceBuilder::OnWindowMarker(const pb::WindowMarker& m) {
  for (RecordConsumer* c : consumers_) c->OnWindowMarker(m);
  if (!decode_only_) windows_->OnMarker(m);
}

void TraceBuilder::OnCalibration(const pb::Calibration& c) {
  for (RecordConsumer* consumer : consumers_) consumer->OnCalibration(c);
  if (decode_only_) return;
  for (const pb::CalibrationSample& s : c.samples()) {
    const int64_t offset = static_cast<int64_t>(static_cast<uint64_t>(s.realtime_ns()) - s.cupti_ns());
    const bool first = counts_.calibration_samples == 0 && &s == &c.samples(0);
    if (first) counts_.calibration_offset_first = counts_.calibration_offset_min =
        counts_.calibration_offset_max = offset;
    counts_.calibration_offset_min = std::min(counts_.calibration_offset_min, offset);
    counts_.calibration_offset_max = std::max(counts_.calibration_offset_max, offset);
  }
  if (filter_.cupti_clock) return;  // a ClockMap without samples passes CUPTI times through
  clock_.Add(c);
  counts_.calibration_samples = clock_.samples();
  if (clock_.non_monotonic() != counts_.calibration_non_monotonic) {
    counts_.calibration_non_monotonic = clock_.non_monotonic();
    counts_.Note("calibration: " + std::to_string(clock_.non_monotonic()) +
                 " sample(s) with non-increasing CUPTI time dropped");
  }
  // Not a warning: each domain is mapped with its own samples (clock_map.h). One message, whose
  // count follows the switches seen so far.
  if (clock_.domain_changes() != counts_.calibration_domain_changes) {
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
  counts_.calibration_domain_changes = clock_.domain_changes();
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

void TraceBuilder::OnPackedRawBuffer(const RawBufferPrefix& prefix,
                                     std::span<const uint8_t> records,
                                     const ColumnSelection& packed_with, const ChunkOrigin& at) {
  // Packed buffers come only after RecordWordsRead, so after the header that made decoder_.
  if (!decoder_) return OnRawBuffer(prefix, records, at);  // counted and noted there
  if (!packed_decoder_ || !(packed_with_ == packed_with)) {
    packed_decoder_ = std::make_unique<RecordDecoder>(decoder_->Packed(packed_with));
    packed_with_ = packed_with;
  }
  WalkBuffer(*packed_decoder_, prefix, records, at);
}

void TraceBuilder::OnRawBuffer(const RawBufferPrefix& prefix, std::span<const uint8_t> records,
                               const ChunkOrigin& at) {
  if (!decoder_) {
    if (decode_only_) return;
    ++counts_.raw_buffers;
    ++counts_.buffers_stopped;
    counts_.Note(*at.path + " at offset " + std::to_string(at.offset) +
                 ": raw buffer before any recording header; not decoded");
    return;
  }
  WalkBuffer(*decoder_, prefix, records, at);
}

void TraceBuilder::WalkBuffer(const RecordDecoder& decoder, const RawBufferPrefix& /*prefix*/,
                              std::span<const uint8_t> records, const ChunkOrigin& at) {
  for (RecordConsumer* c : consumers_) c->OnRecords(decoder, records);
  if (decode_only_) return;
  ++counts_.raw_buffers;
  const auto r = decoder.Walk(records, [this](const RecordLayout& layout, const FieldReader& f,
                                              const uint8_t* rec) { AddRecord(layout, f, rec); });
  counts_.records_not_decoded += r.skipped;
  if (!r.complete) {
    ++counts_.buffers_stopped;
    ++counts_.stopped_by_kind[r.stop.kind];
    counts_.Note(*at.path + " at offset " + std::to_string(at.offset) + ": buffer stopped at byte " +
                 std::to_string(r.stop.offset) + " of " + std::to_string(records.size()) + ": " +
                 r.stop.why);
  }
  // records_by_kind is a map for readers; the hot path counts into an array.
  if (r.records) {
    for (uint32_t k = 0; k < by_kind_.size(); ++k) {
      if (!by_kind_[k]) continue;
      counts_.records_by_kind[k] += by_kind_[k];
      by_kind_[k] = 0;
    }
  }
  JoinRing& ring = *pending_;
  for (; ring.size() > horizon_; ring.pop_front()) Emit(ring.front());
  corr_->Retire(4 * horizon_);
}

void TraceBuilder::AddRecord(const RecordLayout& layout, const FieldReader& f, const uint8_t* rec) {
  ++counts_.records;
  ++by_kind_[layout.kind];  // layouts only exist for kinds < kMaxKind
  const RecordClass cls = layout.record_class;
  if (cls == RecordClass::kExternalCorrelation) {
    ++counts_.external_correlations;
    CorrelationEntry* e = corr_->Track(f.Get32(rec, Field::kCorrelationId));
    if (!e->has_external) {
      e->has_external = true;
      e->external_id = f.Get(rec, Field::kExternalId);
    }
    return;
  }
  if (cls == RecordClass::kOverhead) {
    ++counts_.overhead_records;
    const uint64_t s = f.Get(rec, Field::kStart), e = f.Get(rec, Field::kEnd);
    if (TimedSpan(s, e)) counts_.overhead_ns += e - s;
    return;
  }
  if (cls == RecordClass::kSynchronization && sync_rows_) {
    // Emitted at once: nothing to join, and kept out of the join ring, the spans and the
    // unknown-timestamp count, so that every other row is emitted (and mapped to wall time, with
    // the calibration samples read so far) exactly as for a sink without synchronization rows.
    Pending p;
    p.kind = layout.kind;
    p.record_class = cls;
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
    if (!origin_ts_ && held_sync_.size() < horizon_) held_sync_.push_back(p);
    else Emit(p);
    return;
  }
  if (cls == RecordClass::kMarker) {
    AddMarker(f, rec);
    return;
  }
  if (cls == RecordClass::kMemory || cls == RecordClass::kMemoryPool) {
    AddMemory(layout, f, rec);
    return;
  }
  if (cls != RecordClass::kKernel && cls != RecordClass::kMemcpy && cls != RecordClass::kMemset &&
      cls != RecordClass::kApi)
    return;  // synchronization (unless the sink wants it), CUDA events, names: counted only

  // Its fields as a previous record left them. The ring holds `horizon_` records and the buffer
  // being read: it starts at twice the horizon (untouched pages cost nothing), and doubles when
  // a buffer brings more.
  Pending& p = pending_->PushSlot(2 * horizon_);
  ++joined_;
  // Every field Emit reads for this record class is set below, so the slot is not cleared first
  // (clearing ~130 bytes per record was a tenth of the summary's decoder time). Fields of other
  // classes keep a previous record's values and are never read.
  p.kind = layout.kind;
  p.record_class = cls;
  p.start = f.Get(rec, Field::kStart);
  p.end = f.Get(rec, Field::kEnd);
  p.corr = f.Get32(rec, Field::kCorrelationId);
  if (TimedSpan(p.start, p.end)) {
    if (!origin_ts_) {
      origin_ts_ = p.start;
      ReleaseHeldSync();
      ReleaseHeldRanges();
      ReleaseHeldMemory();
    }
    if (!first_ts_ || p.start < first_ts_) first_ts_ = p.start;
    if (p.end > last_ts_) last_ts_ = p.end;
  } else {
    ++counts_.unknown_timestamps;
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
      // A runtime call replaces a driver call held for the same id: it is the launch the user wrote.
      e->has_api = true;
      e->api_kind = static_cast<uint8_t>(p.kind);
      e->cbid = p.cbid;
      e->pid = p.pid;
      e->tid = p.tid;
      e->ret = p.ret;
      e->api_start = p.start;
      e->api_end = p.end;
    } else if (e->api_kind == p.kind) {
      ++counts_.duplicate_api_correlation;
      counts_.Note("correlation id " + std::to_string(p.corr) +
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
    if (!reuse_row_) {  // a sink of totals never reads them (and they may not be decoded)
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

ReadRange TraceBuilder::Range() const {
  ReadRange r;
  r.window = filter_.window;
  r.from_wall = filter_.from_wall;
  r.to_wall = filter_.to_wall;
  r.from_rel = filter_.from_rel;
  r.to_rel = filter_.to_rel;
  return r;
}

bool TraceBuilder::PassesFilters(const Row& row) const {
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

void TraceBuilder::Emit(const Pending& p) {
  if (reuse_row_) {
    EmitInto(p, reused_row_);
    return;
  }
  if (reorder_stage_) {
    // Built where the reorder stage keeps it (ReorderStage::Claim: an empty row).
    EmitInto(p, reorder_stage_->Claim());
    return;
  }
  Row row;
  EmitInto(p, row);
}

void TraceBuilder::PlaceInTime(Row& row, uint64_t start, uint64_t end) const {
  row.valid_time = TimedSpan(start, end);
  if (!row.valid_time) {
    row.start = row.end = 0;
    row.duration = 0;
    return;
  }
  row.start = start;
  row.end = end;
  if (wall_times_) {
    row.wall_start = clock_.ToWall(start);
    row.wall_end = clock_.ToWall(end);
  }
  row.duration = clock_.WallDuration(start, end);
}

// With a reused row (reuse_row_), a field set on one path only may hold an earlier row's value:
// nothing here reads a field before setting it in the same call, and Passes reads none without
// a filter.
void TraceBuilder::EmitInto(const Pending& p, Row& row) {
  row.kind = p.kind;
  PlaceInTime(row, p.start, p.end);
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
    row.sync_type = p.sync_type;
    row.event_id = p.event_id;
    row.event_sync_id = p.event_sync_id;
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
      ++counts_.api_without_gpu;
    }
  } else {
    row.type = p.record_class == RecordClass::kKernel   ? RowType::kKernel
               : p.record_class == RecordClass::kMemcpy ? RowType::kMemcpy
                                                        : RowType::kMemset;
    row.device = p.device;
    row.context = p.context;
    row.stream = p.stream;
    row.graph_id = p.graph_id;
    if (row.type == RowType::kKernel) {
      for (int i = 0; i < 3; ++i) {
        row.grid[i] = p.grid[i];
        row.block[i] = p.block[i];
      }
      row.registers = p.registers;
      row.static_smem = p.static_smem;
      row.dynamic_smem = p.dynamic_smem;
      if (p.string_index < 0) ++counts_.unresolved_names;
      row.name_id = names_->KernelNameId(p.string_index, p.name_ptr);
      if (p.string_index >= 0 && !reuse_row_)
        row.raw_name = names_->String(static_cast<size_t>(p.string_index));
    } else if (row.type == RowType::kMemcpy) {
      row.bytes = p.bytes;
      row.copy_kind = p.copy_kind;
      row.src_kind = p.src_kind;
      row.dst_kind = p.dst_kind;
      row.src_device = p.src_device;
      row.dst_device = p.dst_device;
      row.name_id = names_->MemcpyNameId(row.copy_kind);
    } else {
      row.bytes = p.bytes;
      row.memset_value = p.memset_value;
      row.name_id = names_->MemsetNameId();
    }
    if (e && e->has_api) {
      row.has_api = true;
      row.api_kind = e->api_kind;
      row.api_cbid = e->cbid;
      row.api_pid = e->pid;
      row.api_tid = e->tid;
      row.api_return = e->ret;
      row.api_valid_time = TimedSpan(e->api_start, e->api_end);
      if (row.api_valid_time) {
        row.api_start = e->api_start;
        row.api_end = e->api_end;
        if (wall_times_) {
          row.api_wall_start = clock_.ToWall(e->api_start);
          row.api_wall_end = clock_.ToWall(e->api_end);
        }
      }
      row.api_name_id = names_->ApiNameId(e->api_kind, e->cbid);
      row.api_name = names_->NameOf(row.api_name_id);
      if (row.api_valid_time && ranges_->labels_any() && !reuse_row_) {
        if (auto label = ranges_->LabelOf(e->pid, e->tid, e->api_start, filter_.nvtx_scope)) {
          row.range = names_->NameOf(label->name_id);
          row.range_scope = label->scope;
        }
      }
    } else {
      ++counts_.gpu_without_api;
      if (row.valid_time && !windows_->empty()) {
        WindowSpan* w = windows_->At(row.start);
        if (w && w->first_api_correlation && row.correlation < w->first_api_correlation) {
          row.launched_before_window = true;
          ++w->launched_before;
          ++counts_.launched_before_window;
        }
      }
    }
  }
  // A sink of totals (reuse_row_) reads none of the names and the range, and has no filter and no
  // reorder stage: it gets the row straight (RowSink::ReadsTotalsOnly).
  if (!reuse_row_) row.name = names_->NameOf(row.name_id);
  if (!reuse_row_ && !Passes(row)) {
    ++counts_.filtered_out;
    return;
  }
  if (row.type == RowType::kApi) {
    ++counts_.api_rows;
  } else if (row.type == RowType::kSynchronization) {
    ++counts_.sync_rows;
  } else {
    ++counts_.gpu_rows;
  }
  if (reuse_row_) sink_->OnRow(row);  // what Deliver does without a reorder stage
  else Deliver(row);
}

void TraceBuilder::Deliver(const Row& row) {
  // Synchronization rows skip the reorder stage: held there, they would release the other rows
  // earlier, before calibration samples that the other exports map them with.
  if (!reorder_stage_ || !row.valid_time || row.type == RowType::kSynchronization) {
    sink_->OnRow(row);
    return;
  }
  reorder_stage_->Add(row);
}

void TraceBuilder::ReleaseHeldSync() {
  for (const Pending& p : held_sync_) Emit(p);
  held_sync_.clear();
}

void TraceBuilder::Finish() {
  if (decode_only_) return;
  ReleaseHeldSync();
  finishing_ = true;
  ReleaseHeldRanges();
  ReleaseHeldMemory();
  // Ranges never ended: emitted with no end (Row::range_ended false), oldest id first.
  const std::vector<NvtxRange> unended = ranges_->TakeUnended();
  for (const NvtxRange& r : unended) {
    ++counts_.unended_ranges;
    EmitRange(r);
  }
  if (!unended.empty())
    counts_.notes.push_back(std::to_string(unended.size()) +
                            " NVTX range(s) started but never ended by the recording's end; "
                            "shown as unended");
  for (JoinRing& ring = *pending_; !ring.empty(); ring.pop_front()) Emit(ring.front());
  if (reorder_stage_) reorder_stage_->Flush();
}

// ---- NVTX ranges ----
//
// A range becomes a row when its END is read, a mark at once; the pairing and the labels of GPU
// rows are NvtxRanges' (decoder/src/nvtx_ranges.h).

namespace {
constexpr uint32_t kMarkerInstantaneous = 1, kMarkerStart = 2, kMarkerEnd = 4;
constexpr uint32_t kObjectProcess = 1, kObjectThread = 2;  // CUpti_ActivityObjectKind
}  // namespace

void TraceBuilder::AddMarker(const FieldReader& f, const uint8_t* rec) {
  const uint32_t flags = f.Get32(rec, Field::kMarkerFlags);
  const uint64_t ts = f.Get(rec, Field::kTimestamp);
  const uint32_t id = f.Get32(rec, Field::kMarkerId);
  const uint32_t object_kind = f.Get32(rec, Field::kObjectKind);
  // objectId is a union: pt.processId/threadId for a process or thread, else device ids.
  const bool on_thread = object_kind == kObjectThread || object_kind == kObjectProcess;
  const uint32_t pid = on_thread ? f.Get32(rec, Field::kObjectId0) : 0;
  const uint32_t tid = object_kind == kObjectThread ? f.Get32(rec, Field::kObjectId1) : 0;
  if (flags & kMarkerEnd) {
    const std::optional<NvtxRange> ended = ranges_->End(id, ts, pid, tid, counts_.records);
    if (!ended) {
      // Usually a range pushed before the trace window opened (its START was not recorded).
      if (counts_.range_ends_without_start++ == 0)
        counts_.notes.push_back("NVTX range END(s) with no START read (e.g. ranges begun before "
                                "a window opened) are left out; see info");
      return;
    }
    ++counts_.ranges;
    EmitRange(*ended);
    return;
  }
  if (!(flags & (kMarkerStart | kMarkerInstantaneous))) return;  // sync markers: not NVTX ranges
  const uint64_t name_ptr = f.Get(rec, Field::kNamePointer);
  if (name_ptr && !names_->HasString(name_ptr)) {
    if (counts_.unresolved_range_names++ == 0)
      counts_.Note("NVTX range name pointer " + Hex(name_ptr) +
                   " has no string entry; shown as <unresolved range name>");
  }
  NvtxRange r;
  r.start = r.end = ts;
  r.id = id;
  r.name_id = names_->MarkerStringId(name_ptr, false);
  r.domain_id = names_->MarkerStringId(f.Get(rec, Field::kDomainPointer), true);
  r.pid = pid;
  r.tid = tid;
  r.depth = ranges_->Depth(pid, tid, ts);
  if (flags & kMarkerInstantaneous) {
    ++counts_.marks;
    r.kind = RangeKind::kMark;
    EmitRange(r);
    return;
  }
  const bool placed = ts && ts < kTimeLimit;  // else it labels nothing
  if (std::optional<NvtxRange> given_up = ranges_->Start(r, counts_.records, placed)) {
    ++counts_.unended_ranges;
    EmitRange(*given_up);
  }
}

void TraceBuilder::EmitRange(const NvtxRange& r) {
  if (!range_rows_) return;
  if (!origin_ts_ && !finishing_ && held_ranges_.size() < horizon_) {
    held_ranges_.push_back(r);  // relative time filters need the origin
    return;
  }
  Row row;
  row.type = RowType::kRange;
  row.kind = kKindMarker;
  PlaceInTime(row, r.start, r.ended ? r.end : r.start);
  row.name_id = r.name_id;
  row.name = names_->NameOf(r.name_id);
  row.range_domain = names_->NameOf(r.domain_id);
  row.pid = r.pid;
  row.tid = r.tid;
  row.range_kind = r.kind;
  row.range_ended = r.ended;
  row.range_depth = r.depth;
  row.range_id = r.id;
  if (!Passes(row)) {
    ++counts_.filtered_out;
    return;
  }
  ++counts_.range_rows;
  sink_->OnRow(row);
}

void TraceBuilder::ReleaseHeldRanges() {
  std::vector<NvtxRange> held;
  held.swap(held_ranges_);
  for (const NvtxRange& r : held) EmitRange(r);
}

// ---- Device memory ----
// MEMORY2 and MEMORY_POOL records become rows for the sinks that ask; nothing is joined (the
// running sums live in the sinks: decoder/src/commands/rows_report.cc). Like ranges, rows read before the
// origin is known wait for it, so relative time filters can place them.

void TraceBuilder::AddMemory(const RecordLayout& layout, const FieldReader& f,
                             const uint8_t* rec) {
  if (layout.record_class == RecordClass::kMemory) ++counts_.memory_records;
  else ++counts_.memory_pool_records;
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
  row.memory_op = small(f.Get32(rec, Field::kMemoryOperation));
  row.memory_kind = small(f.Get32(rec, Field::kMemoryKind));
  row.pool_type = small(f.Get32(rec, Field::kPoolType));
  row.address = f.Get(rec, Field::kAddress);
  row.pool_address = f.Get(rec, Field::kPoolAddress);
  if (!origin_ts_ && !finishing_ && held_memory_.size() < horizon_) {
    held_memory_.push_back(row);  // relative time filters need the origin
    return;
  }
  EmitMemory(row);
}

void TraceBuilder::EmitMemory(Row row) {
  // Always on the wall clock (memory rows are few): every report that places a memory change in
  // time then uses the calibration this row was read with, as the exports do.
  if (row.valid_time) row.wall_start = row.wall_end = clock_.ToWall(row.start);
  if (!Passes(row)) {
    ++counts_.filtered_out;
    return;
  }
  ++counts_.memory_rows;
  sink_->OnRow(row);
}

void TraceBuilder::ReleaseHeldMemory() {
  std::vector<Row> held;
  held.swap(held_memory_);
  for (const Row& r : held) EmitMemory(r);
}

}  // namespace cupmon::decoder

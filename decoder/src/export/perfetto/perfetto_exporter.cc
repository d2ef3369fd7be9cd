// The Perfetto protobuf export (see perfetto_exporter.h): rows into slices, on the parts declared
// in this folder. Field numbers are those of perfetto_protos.h.
#include "export/perfetto/perfetto_exporter.h"

#include <algorithm>
#include <limits>

#include "cupmon/base/check.h"
#include "export/perfetto/perfetto_protos.h"
#include "job/job_merge.h"

namespace cupmon::decoder {
namespace {

using namespace perfetto;  // NOLINT(build/namespaces): the export's field numbers and ids

// The job track's process: a pid no rank has (ranks' pids, and 900'000'000 + index for a pid
// two ranks share).
constexpr uint32_t kJobPid = 899'999'999;
constexpr size_t kFlowSlots = 1 << 16;
constexpr uint32_t kMaxFlowsPerLaunch = 0xFFFF;

// Flow ids are trace-wide: the recording's position, the correlation id and the activity's
// ordinal among those its launch call started.
uint64_t FlowId(size_t index, uint32_t correlation, uint32_t ordinal) {
  return (static_cast<uint64_t>(index + 1) << 48) | (static_cast<uint64_t>(correlation) << 16) |
         ordinal;
}

}  // namespace

Expected<std::unique_ptr<Exporter>> PerfettoExporter::Make(std::ostream& out,
                                                           const std::vector<const Rank*>& ranks,
                                                           const ExportSettings& settings) {
  auto exporter = std::make_unique<PerfettoExporter>(out);
  if (settings.job_table && ranks.size() > 1)
    exporter->job_ = std::make_unique<job::ExportRankTables>();
  return exporter;
}

PerfettoExporter::PerfettoExporter(std::ostream& out) : packets_(out), flow_slots_(kFlowSlots) {}

PerfettoExporter::~PerfettoExporter() = default;

void PerfettoExporter::Begin(const TraceBuilder& builder, const Recording& recording, size_t index,
                             const Rank* rank) {
  builder_ = &builder;
  index_ = index;
  packets_.BeginSequence(static_cast<uint32_t>(index + 1));
  ends_.Clear();
  interning_.Clear();
  std::fill(flow_slots_.begin(), flow_slots_.end(), FlowSlot{});
  annotations_.clear();
  memory_ = MemoryUsage{};

  // First packet of the sequence: clears incremental state, sets the default clock (the
  // sequence's incremental clock, defined by the ClockSnapshot written before the first slice)
  // and interns the fixed categories and annotation names.
  proto_wire::Writer& w = packets_.writer();
  packets_.Start();
  w.Varint(kPacketSequenceFlags, kSeqIncrementalStateCleared);
  size_t at = w.BeginNested(kPacketDefaults);
  w.Varint(kDefaultsTimestampClockId, kClockSequence);
  w.EndNested(at);
  at = w.BeginNested(kPacketInternedData);
  SequenceInterning::InternFixed(w);
  w.EndNested(at);
  packets_.Finish();

  tracks_.BeginRecording(recording, index, rank);
  if (job_ && rank) job_steps_ = job_->Begin(*rank);
}

void PerfettoExporter::Write(const Row& r) {
  if (job_) job_->Take(r);
  if (r.type == RowType::kMemory) {
    memory_.Add(r);  // counters, written by End in time order
    return;
  }
  if (!r.valid_time) return;  // cannot be placed on a timeline; counted in the summary
  if (r.type == RowType::kRange) {
    WriteRange(r);
    return;
  }
  const int64_t start = r.wall_start;
  const int64_t end = start + static_cast<int64_t>(r.duration);
  const bool api = r.type == RowType::kApi;
  TrackGroup& group =
      api ? tracks_.Cpu(tracks_.PidOf(r.pid), r.tid) : tracks_.Gpu(r.device, r.context, r.stream);
  const uint64_t track = tracks_.LaneFor(group, start, end);
  packets_.EnsureClock(start);
  ends_.WriteUpTo(start);

  // Interning: the name by the builder's id; a kernel's launch shape (grid, block, registers)
  // as one string, since a run repeats few shapes and one interned annotation costs 7 bytes
  // where three cost 20.
  bool new_name = false;
  const uint64_t name_iid = interning_.NameIid(r, &new_name);
  uint64_t launch_iid = 0;
  bool new_launch = false;
  if (r.type == RowType::kKernel) launch_iid = interning_.LaunchIid(r, &new_launch);
  const bool new_nvtx = !r.range.empty() && !interning_.nvtx_interned();
  const bool new_scope =
      !r.range.empty() && r.range_scope == NvtxScope::kProcess && !interning_.nvtx_scope_interned();

  proto_wire::Writer& w = packets_.writer();
  packets_.Start();
  packets_.Stamp(start);
  w.Varint(kPacketSequenceFlags, kSeqNeedsIncrementalState);  // interned names, clock
  if (new_name || new_launch || new_nvtx || new_scope) {
    const size_t at = w.BeginNested(kPacketInternedData);
    if (new_name) Intern(w, kInternedEventNames, name_iid, r.name);
    if (new_launch) SequenceInterning::InternLaunch(w, launch_iid, r);
    if (new_nvtx) interning_.InternNvtx(w);
    if (new_scope) interning_.InternNvtxScope(w);
    w.EndNested(at);
  }
  const size_t ev = w.BeginNested(kPacketTrackEvent);
  w.Varint(kEventType, kSliceBegin);
  w.Varint(kEventTrackUuid, track);
  w.Varint(kEventNameIid, name_iid);
  uint64_t category = kCatKernel;
  switch (r.type) {
    case RowType::kKernel:
      category = kCatKernel;
      break;
    case RowType::kMemcpy:
      category = kCatMemcpy;
      break;
    case RowType::kMemset:
      category = kCatMemset;
      break;
    case RowType::kApi:
      category = r.kind == 4 ? kCatDriver : kCatRuntime;
      break;
    case RowType::kSynchronization:  // not asked for (RowSink::WantsSynchronization)
    case RowType::kRange:            // WriteRange
    case RowType::kMemory:           // WriteMemoryCounters
      break;
  }
  w.Varint(kEventCategoryIids, category);
  AnnotateUint(w, kAnnCorrelation, r.correlation);
  if (api) {
    // Written only when not 0 (CUDA_SUCCESS / cudaSuccess, nearly every call): absent means 0.
    if (r.return_value) AnnotateUint(w, kAnnReturn, r.return_value);
    // One flow per activity this call launched; each activity terminates its own (below).
    const uint32_t flows = std::min(r.launched, kMaxFlowsPerLaunch);
    for (uint32_t k = 0; k < flows; ++k)
      w.Fixed64(kEventFlowIds, FlowId(index_, r.correlation, k));
    if (!r.annotation.empty()) {
      auto [it, inserted] = annotations_.try_emplace(std::string(r.annotation), start, end);
      if (!inserted) {
        it->second.first = std::min(it->second.first, start);
        it->second.second = std::max(it->second.second, end);
      }
    }
  } else {
    if (r.type == RowType::kKernel) {
      const size_t at = w.BeginNested(kEventDebugAnnotations);
      w.Varint(kAnnotationNameIid, kAnnLaunch);
      w.Varint(kAnnotationStringIid, launch_iid);
      w.EndNested(at);
    } else {
      AnnotateUint(w, kAnnBytes, r.bytes);
    }
    if (!r.annotation.empty()) AnnotateString(w, kAnnAnnotation, r.annotation);
    if (r.api.before_window) AnnotateUint(w, kAnnLaunchedBeforeWindow, 1);
    if (!r.range.empty()) {
      AnnotateString(w, kAnnNvtxRange, r.range);
      if (r.range_scope == NvtxScope::kProcess) AnnotateString(w, kAnnNvtxScope, "process");
    }
    if (r.api.found && r.api.valid_time) {
      FlowSlot& slot = flow_slots_[r.correlation & (kFlowSlots - 1)];
      if (!slot.used || slot.correlation != r.correlation) slot = FlowSlot{r.correlation, 0, true};
      const uint32_t k = slot.next++;
      if (k < kMaxFlowsPerLaunch)
        w.Fixed64(kEventTerminatingFlowIds, FlowId(index_, r.correlation, k));
    }
  }
  w.EndNested(ev);
  packets_.Finish();
  ends_.Add(end, track);
  ++slices_;
}

void PerfettoExporter::WriteRange(const Row& r) {
  proto_wire::Writer& w = packets_.writer();
  const int64_t start = r.wall_start;
  // An unended range lasts to the recording's last record (it arrives from Finish, when that
  // is known).
  const uint64_t last = builder_->last_ts();
  const int64_t last_wall = last ? builder_->clock().ToWall(last) : start;
  const int64_t end =
      r.nvtx.ended ? start + static_cast<int64_t>(r.duration) : std::max(start, last_wall);
  uint64_t track;
  if (r.nvtx.kind == RangeKind::kStartEnd) {
    // Ended on another thread: on the thread's range track.
    track = tracks_.LaneFor(tracks_.Ranges(tracks_.PidOf(r.pid), r.tid), start, end);
  } else {
    // Push/pop ranges and marks nest with the thread's API calls: on its own track (first lane).
    track = tracks_.FirstLane(tracks_.Cpu(tracks_.PidOf(r.pid), r.tid));
  }
  packets_.EnsureClock(start);
  ends_.WriteUpTo(start);
  bool new_name = false;
  const uint64_t name_iid = interning_.NameIid(r, &new_name);
  const bool new_nvtx = !interning_.nvtx_interned();
  packets_.Start();
  packets_.Stamp(start);
  w.Varint(kPacketSequenceFlags, kSeqNeedsIncrementalState);
  if (new_name || new_nvtx) {
    const size_t at = w.BeginNested(kPacketInternedData);
    if (new_name) Intern(w, kInternedEventNames, name_iid, r.name);
    if (new_nvtx) interning_.InternNvtx(w);
    w.EndNested(at);
  }
  const size_t ev = w.BeginNested(kPacketTrackEvent);
  const bool mark = r.nvtx.kind == RangeKind::kMark;
  w.Varint(kEventType, mark ? kInstant : kSliceBegin);
  w.Varint(kEventTrackUuid, track);
  w.Varint(kEventNameIid, name_iid);
  w.Varint(kEventCategoryIids, kCatNvtx);
  if (!r.range_domain.empty()) AnnotateString(w, kAnnDomain, r.range_domain);
  AnnotateUint(w, kAnnDepth, r.nvtx.depth);
  if (!r.nvtx.ended) AnnotateUint(w, kAnnUnended, 1);
  w.EndNested(ev);
  packets_.Finish();
  if (!mark) ends_.Add(end, track);
  ++slices_;
}

void PerfettoExporter::WholeSlice(uint64_t track, std::string_view name, uint64_t category,
                                  int64_t start, int64_t end,
                                  const std::vector<std::pair<uint64_t, std::string>>& strings) {
  proto_wire::Writer& w = packets_.writer();
  packets_.EnsureClock(start);
  packets_.Start();
  packets_.Stamp(start);
  w.Varint(kPacketSequenceFlags, kSeqNeedsIncrementalState);
  const size_t ev = w.BeginNested(kPacketTrackEvent);
  w.Varint(kEventType, kSliceBegin);
  w.Varint(kEventTrackUuid, track);
  w.Bytes(kEventName, name);
  w.Varint(kEventCategoryIids, category);
  for (const auto& [key, value] : strings) AnnotateString(w, key, value);
  w.EndNested(ev);
  packets_.Finish();
  packets_.WriteSliceEnd(end, track);
  ++slices_;
}

void PerfettoExporter::WriteMemoryCounters(const TraceBuilder& b) {
  proto_wire::Writer& w = packets_.writer();
  memory_.Finish();
  std::map<uint32_t, uint64_t> tracks;  // by device
  for (const auto& [device, stats] : memory_.devices()) {
    if (!stats.allocations) continue;  // pool records only: no bytes in use to draw
    const uint64_t parent = tracks_.DeviceUuid(device);  // may write the device's process first
    const uint64_t uuid = tracks_.NewUuid();
    tracks.emplace(device, uuid);
    packets_.WriteBytesCounterTrack(uuid, parent, "memory in use (since the recording began)");
  }
  for (const MemoryStep& st : memory_.steps()) {
    const int64_t t = b.clock().ToWall(st.ts);
    packets_.EnsureClock(t);
    packets_.Start();
    packets_.Stamp(t);
    const size_t ev = w.BeginNested(kPacketTrackEvent);
    w.Varint(kEventType, kCounter);
    w.Varint(kEventTrackUuid, tracks.at(st.device));
    w.Int64(kEventCounterValue, static_cast<int64_t>(st.in_use));
    w.EndNested(ev);
    packets_.Finish();
  }
}

void PerfettoExporter::End(const TraceBuilder& b, const Recording&, const ReadIntegrity&) {
  if (job_) job_->End();
  ends_.WriteUpTo(std::numeric_limits<int64_t>::max());
  WriteMemoryCounters(b);
  TrackGroup windows;
  windows.parent_uuid = tracks_.process_uuid();
  windows.name = "cupmon windows";
  for (const auto& [id, w] : b.windows()) {
    if (!w.begin) continue;
    // An open window (or one whose END marker is missing) lasts to the recording's last record.
    const uint64_t end = w.end >= w.begin && w.end ? w.end : std::max(b.last_ts(), w.begin);
    const int64_t s = b.clock().ToWall(w.begin), e = b.clock().ToWall(end);
    WholeSlice(tracks_.LaneFor(windows, s, e), "window " + std::to_string(id), kCatWindow, s, e,
               {{kAnnSource, w.source}, {kAnnNote, w.note}});
  }
  std::vector<std::pair<std::pair<int64_t, int64_t>, const std::string*>> spans;
  for (const auto& [label, span] : annotations_) spans.emplace_back(span, &label);
  std::sort(spans.begin(), spans.end());
  TrackGroup labels;
  labels.parent_uuid = tracks_.process_uuid();
  labels.name = "annotations";
  for (const auto& [span, label] : spans)
    WholeSlice(tracks_.LaneFor(labels, span.first, span.second), *label, kCatAnnotation, span.first,
               span.second, {});
}

void PerfettoExporter::WriteJobTrack() {
  job::DiscardSteps discard;  // the slow steps are kept
  auto a = job::MergeJob(job::MemoryTables(job_->Release()), job::OptionsFor(StepOptions{}),
                         &discard);
  CUPMON_CHECK(a.has_value());  // tables in memory cannot fail to read
  if (a->streams.empty() || a->slow.empty()) return;
  struct Slow {
    int64_t start, end;
    std::string name;
  };
  std::vector<Slow> slow;
  for (size_t j : a->slow) {
    const job::JobStep& s = a->steps[j];
    Slow x{INT64_MAX, INT64_MIN, "step " + std::to_string(s.number) + ": " +
                                     std::string(job::VerdictName(s.verdict.what))};
    if (s.verdict.culprit) x.name += ", " + a->who[*s.verdict.culprit].label;
    for (const job::RankStep& f : s.ranks)
      if (f.present) x.start = std::min(x.start, f.wall_start), x.end = std::max(x.end, f.wall_end);
    if (x.start <= x.end) slow.push_back(std::move(x));
  }
  std::sort(slow.begin(), slow.end(), [](const Slow& x, const Slow& y) {
    return std::tie(x.start, x.end) < std::tie(y.start, y.end);
  });
  proto_wire::Writer& w = packets_.writer();
  packets_.Start();
  w.Varint(kPacketSequenceFlags, kSeqNeedsIncrementalState);
  const size_t at = w.BeginNested(kPacketInternedData);
  Intern(w, kInternedCategories, kCatJob, kCategoryNames[kCatJob]);
  w.EndNested(at);
  packets_.Finish();
  const uint64_t process = tracks_.NewUuid();
  packets_.WriteProcessTrack(process, kJobPid, "job (" + std::to_string(a->who.size()) + " ranks)");
  TrackGroup track;
  track.parent_uuid = process;
  track.name = "job";
  for (const Slow& x : slow)
    WholeSlice(tracks_.LaneFor(track, x.start, x.end), x.name, kCatJob, x.start, x.end, {});
}

void PerfettoExporter::Close() {
  if (job_ && packets_.sequence()) WriteJobTrack();
  packets_.Close();
}

}  // namespace cupmon::decoder

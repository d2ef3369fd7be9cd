// The Perfetto protobuf export (see perfetto_exporter.h). Field numbers are those of Perfetto's
// protos/perfetto/trace/perfetto_trace.proto (google/perfetto at ec5d16b1); each constant below
// names its message and field. The schema is not needed to build: tests/decoder/perfetto_check.py
// parses our output with it.
#include "export/perfetto/perfetto_exporter.h"

#include <algorithm>
#include <limits>

#include "cupmon/base/check.h"
#include "job/job_merge.h"

namespace cupmon::decoder {
namespace {

// message Trace
constexpr uint32_t kTracePacket = 1;  // repeated TracePacket packet = 1
// message TracePacket
constexpr uint32_t kPacketClockSnapshot = 6;      // ClockSnapshot clock_snapshot = 6
constexpr uint32_t kPacketTimestamp = 8;          // optional uint64 timestamp = 8
constexpr uint32_t kPacketSequenceId = 10;        // uint32 trusted_packet_sequence_id = 10
constexpr uint32_t kPacketTrackEvent = 11;        // TrackEvent track_event = 11
constexpr uint32_t kPacketInternedData = 12;      // optional InternedData interned_data = 12
constexpr uint32_t kPacketSequenceFlags = 13;     // optional uint32 sequence_flags = 13
constexpr uint32_t kPacketTimestampClockId = 58;  // optional uint32 timestamp_clock_id = 58
constexpr uint32_t kPacketDefaults = 59;          // TracePacketDefaults trace_packet_defaults = 59
constexpr uint32_t kPacketTrackDescriptor = 60;   // TrackDescriptor track_descriptor = 60
// enum TracePacket.SequenceFlags
constexpr uint64_t kSeqIncrementalStateCleared = 1;  // SEQ_INCREMENTAL_STATE_CLEARED = 1
constexpr uint64_t kSeqNeedsIncrementalState = 2;    // SEQ_NEEDS_INCREMENTAL_STATE = 2
// message TracePacketDefaults
constexpr uint32_t kDefaultsTimestampClockId = 58;  // optional uint32 timestamp_clock_id = 58
// message ClockSnapshot
constexpr uint32_t kSnapshotClocks = 1;             // repeated Clock clocks = 1
constexpr uint32_t kSnapshotPrimaryTraceClock = 2;  // optional BuiltinClock primary_trace_clock = 2
// message ClockSnapshot.Clock
constexpr uint32_t kClockId = 1;             // optional uint32 clock_id = 1
constexpr uint32_t kClockTimestamp = 2;      // optional uint64 timestamp = 2
constexpr uint32_t kClockIsIncremental = 3;  // optional bool is_incremental = 3
// enum BuiltinClock, and the first sequence-scoped clock id ([64, 127] are per sequence)
constexpr uint64_t kClockRealtime = 1;  // BUILTIN_CLOCK_REALTIME = 1
constexpr uint64_t kClockSequence = 64;
// message TrackDescriptor
constexpr uint32_t kTrackUuid = 1;          // optional uint64 uuid = 1
constexpr uint32_t kTrackName = 2;          // string name = 2
constexpr uint32_t kTrackProcess = 3;       // optional ProcessDescriptor process = 3
constexpr uint32_t kTrackThread = 4;        // optional ThreadDescriptor thread = 4
constexpr uint32_t kTrackParentUuid = 5;    // optional uint64 parent_uuid = 5
constexpr uint32_t kTrackCounter = 8;       // optional CounterDescriptor counter = 8
constexpr uint32_t kTrackDescription = 14;  // optional string description = 14
// message CounterDescriptor
constexpr uint32_t kCounterUnit = 3;        // optional Unit unit = 3
constexpr uint64_t kUnitSizeBytes = 3;      // UNIT_SIZE_BYTES = 3
// message ProcessDescriptor
constexpr uint32_t kProcessPid = 1;   // optional int32 pid = 1
constexpr uint32_t kProcessName = 6;  // optional string process_name = 6
// message ThreadDescriptor
constexpr uint32_t kThreadPid = 1;   // optional int32 pid = 1
constexpr uint32_t kThreadTid = 2;   // optional int64 tid = 2
constexpr uint32_t kThreadName = 5;  // optional string thread_name = 5
// message TrackEvent
constexpr uint32_t kEventCategoryIids = 3;         // repeated uint64 category_iids = 3
constexpr uint32_t kEventDebugAnnotations = 4;     // repeated DebugAnnotation debug_annotations = 4
constexpr uint32_t kEventType = 9;                 // optional Type type = 9
constexpr uint32_t kEventNameIid = 10;             // uint64 name_iid = 10
constexpr uint32_t kEventTrackUuid = 11;           // optional uint64 track_uuid = 11
constexpr uint32_t kEventName = 23;                // string name = 23
constexpr uint32_t kEventCounterValue = 30;        // int64 counter_value = 30
constexpr uint32_t kEventFlowIds = 47;             // repeated fixed64 flow_ids = 47
constexpr uint32_t kEventTerminatingFlowIds = 48;  // repeated fixed64 terminating_flow_ids = 48
// enum TrackEvent.Type
constexpr uint64_t kSliceBegin = 1;  // TYPE_SLICE_BEGIN = 1
constexpr uint64_t kSliceEnd = 2;    // TYPE_SLICE_END = 2
constexpr uint64_t kInstant = 3;     // TYPE_INSTANT = 3
constexpr uint64_t kCounter = 4;     // TYPE_COUNTER = 4
// message DebugAnnotation
constexpr uint32_t kAnnotationNameIid = 1;     // uint64 name_iid = 1
constexpr uint32_t kAnnotationUint = 3;        // uint64 uint_value = 3
constexpr uint32_t kAnnotationString = 6;      // string string_value = 6
constexpr uint32_t kAnnotationStringIid = 17;  // uint64 string_value_iid = 17
// message InternedData
constexpr uint32_t kInternedCategories = 1;       // repeated EventCategory event_categories = 1
constexpr uint32_t kInternedEventNames = 2;       // repeated EventName event_names = 2
constexpr uint32_t kInternedAnnotationNames = 3;  // repeated DebugAnnotationName ... = 3
// repeated InternedString debug_annotation_string_values = 29
constexpr uint32_t kInternedAnnotationStrings = 29;
// messages EventCategory, EventName, DebugAnnotationName { iid = 1; name = 2; },
// InternedString { iid = 1; bytes str = 2; }
constexpr uint32_t kInternIid = 1;
constexpr uint32_t kInternName = 2;

// Our interning ids. Categories and annotation names are fixed and interned once per sequence.
enum Category : uint64_t {
  kCatKernel = 1,
  kCatMemcpy,
  kCatMemset,
  kCatRuntime,
  kCatDriver,
  kCatWindow,
  kCatAnnotation,
  kCatNvtx,  // interned with the NVTX annotation names, only once a recording has NVTX
  kCatJob    // interned by the job track, at Close
};
constexpr const char* kCategoryNames[] = {"",       "kernel",       "memcpy",
                                          "memset", "cuda_runtime", "cuda_driver",
                                          "window", "annotation",   "nvtx",
                                          "job"};
// The job track's process: a pid no rank has (ranks' pids, and 900'000'000 + index for a pid
// two ranks share).
constexpr uint32_t kJobPid = 899'999'999;
enum AnnotationName : uint64_t {
  kAnnCorrelation = 1,
  kAnnLaunch,
  kAnnBytes,
  kAnnAnnotation,
  kAnnReturn,
  kAnnSource,
  kAnnNote,
  kAnnLaunchedBeforeWindow,
  // NVTX (interned only once a recording has NVTX, so that other traces keep their bytes).
  kAnnNvtxRange,
  kAnnDomain,
  kAnnDepth,
  kAnnUnended,
  kAnnNvtxScope  // "process" on a kernel whose range was open on another thread (row.h); interned
                 // at the first such kernel
};
constexpr const char* kAnnotationNames[] = {"",           "correlation", "launch", "bytes",
                                            "annotation", "return",      "source", "note",
                                            "launched_before_window", "nvtx_range", "domain",
                                            "depth", "unended", "nvtx_scope"};

constexpr size_t kFlushAt = 1 << 20;
constexpr size_t kFlowSlots = 1 << 16;
constexpr uint32_t kMaxFlowsPerLaunch = 0xFFFF;

// Flow ids are trace-wide: the recording's position, the correlation id and the activity's
// ordinal among those its launch call started.
uint64_t FlowId(size_t index, uint32_t correlation, uint32_t ordinal) {
  return (static_cast<uint64_t>(index + 1) << 48) | (static_cast<uint64_t>(correlation) << 16) |
         ordinal;
}

void AnnotateUint(proto_wire::Writer& w, uint64_t name, uint64_t v) {
  const size_t at = w.BeginNested(kEventDebugAnnotations);
  w.Varint(kAnnotationNameIid, name);
  w.Varint(kAnnotationUint, v);
  w.EndNested(at);
}

void AnnotateString(proto_wire::Writer& w, uint64_t name, std::string_view v) {
  const size_t at = w.BeginNested(kEventDebugAnnotations);
  w.Varint(kAnnotationNameIid, name);
  w.Bytes(kAnnotationString, v);
  w.EndNested(at);
}

void Intern(proto_wire::Writer& w, uint32_t field, uint64_t iid, std::string_view name) {
  const size_t at = w.BeginNested(field);
  w.Varint(kInternIid, iid);
  w.Bytes(kInternName, name);
  w.EndNested(at);
}

// "grid 256,1,1 block 128,1,1 registers 32".
std::string LaunchText(const Row& r) {
  std::string s = "grid ";
  for (int i = 0; i < 3; ++i) s += std::to_string(r.grid[i]) + (i < 2 ? "," : "");
  s += " block ";
  for (int i = 0; i < 3; ++i) s += std::to_string(r.block[i]) + (i < 2 ? "," : "");
  return s + " registers " + std::to_string(r.registers);
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

PerfettoExporter::PerfettoExporter(std::ostream& out) : out_(out), flow_slots_(kFlowSlots) {}

PerfettoExporter::~PerfettoExporter() = default;

void PerfettoExporter::StartPacket() {
  packet_at_ = w_.BeginNested(kTracePacket);
  w_.Varint(kPacketSequenceId, seq_id_);
}

void PerfettoExporter::FinishPacket() {
  w_.EndNested(packet_at_);
  ++packets_;
  if (w_.size() >= kFlushAt) {
    out_.write(reinterpret_cast<const char*>(w_.data()), static_cast<std::streamsize>(w_.size()));
    w_.Clear();
  }
}

uint32_t PerfettoExporter::PidOf(uint32_t record_pid) const {
  return rank_ ? rank_pid_ : record_pid;
}

void PerfettoExporter::Begin(const TraceBuilder& builder, const Recording& recording, size_t index,
                         const Rank* rank) {
  builder_ = &builder;
  recording_ = &recording;
  rank_ = rank;
  index_ = index;
  seq_id_ = static_cast<uint32_t>(index + 1);
  clock_ready_ = false;
  clock_now_ = 0;
  ends_ = {};
  name_interned_.clear();
  name_iids_ = 0;
  launches_.clear();
  next_launch_iid_ = 1;
  gpu_tracks_.clear();
  device_uuids_.clear();
  cpu_tracks_.clear();
  last_gpu_ = last_cpu_ = nullptr;
  last_cpu_key_ = {UINT32_MAX, UINT32_MAX};
  std::fill(flow_slots_.begin(), flow_slots_.end(), FlowSlot{});
  annotations_.clear();
  nvtx_interned_ = false;
  nvtx_scope_interned_ = false;
  range_tracks_.clear();
  memory_ = MemoryUsage{};

  // First packet of the sequence: clears incremental state, sets the default clock (the
  // sequence's incremental clock, defined by the ClockSnapshot written before the first slice)
  // and interns the fixed categories and annotation names.
  StartPacket();
  w_.Varint(kPacketSequenceFlags, kSeqIncrementalStateCleared);
  size_t at = w_.BeginNested(kPacketDefaults);
  w_.Varint(kDefaultsTimestampClockId, kClockSequence);
  w_.EndNested(at);
  at = w_.BeginNested(kPacketInternedData);
  for (uint64_t i = kCatKernel; i <= kCatAnnotation; ++i)
    Intern(w_, kInternedCategories, i, kCategoryNames[i]);
  for (uint64_t i = kAnnCorrelation; i <= kAnnLaunchedBeforeWindow; ++i)
    Intern(w_, kInternedAnnotationNames, i, kAnnotationNames[i]);
  w_.EndNested(at);
  FinishPacket();

  // The rank's process, named as in the chrome-json export. A pid another rank already has (two
  // hosts) gets a made-up one so that the two processes stay apart.
  const auto& h = recording.header;
  std::string name;
  if (rank) {
    rank_pid_ = h.pid();
    if (std::find(rank_pids_.begin(), rank_pids_.end(), rank_pid_) != rank_pids_.end())
      rank_pid_ = 900'000'000u + static_cast<uint32_t>(index);
    rank_pids_.push_back(rank_pid_);
    name = rank->label;
  } else {
    rank_pid_ = h.pid();
    std::string cmd;
    for (const auto& a : h.command_line()) cmd += (cmd.empty() ? "" : " ") + a;
    name = "CPU pid " + std::to_string(rank_pid_) + (cmd.empty() ? "" : " " + cmd);
  }
  if (h.synthetic()) name += " (SYNTHETIC)";
  process_uuid_ = NewUuid();
  EmitProcessDescriptor(process_uuid_, rank_pid_, name);
  if (job_ && rank) job_steps_ = job_->Begin(*rank);
}

void PerfettoExporter::EmitProcessDescriptor(uint64_t uuid, uint32_t pid, const std::string& name) {
  StartPacket();
  const size_t at = w_.BeginNested(kPacketTrackDescriptor);
  w_.Varint(kTrackUuid, uuid);
  const size_t p = w_.BeginNested(kTrackProcess);
  w_.Varint(kProcessPid, pid);
  w_.Bytes(kProcessName, name);
  w_.EndNested(p);
  w_.EndNested(at);
  FinishPacket();
}

void PerfettoExporter::EmitThreadDescriptor(uint64_t uuid, uint32_t pid, uint32_t tid,
                                        const std::string& name) {
  StartPacket();
  const size_t at = w_.BeginNested(kPacketTrackDescriptor);
  w_.Varint(kTrackUuid, uuid);
  const size_t t = w_.BeginNested(kTrackThread);
  w_.Varint(kThreadPid, pid);
  w_.Varint(kThreadTid, tid);
  w_.Bytes(kThreadName, name);
  w_.EndNested(t);
  w_.EndNested(at);
  FinishPacket();
}

void PerfettoExporter::EmitTrackDescriptor(uint64_t uuid, uint64_t parent, const std::string& name,
                                       const std::string& description) {
  StartPacket();
  const size_t at = w_.BeginNested(kPacketTrackDescriptor);
  w_.Varint(kTrackUuid, uuid);
  w_.Varint(kTrackParentUuid, parent);
  w_.Bytes(kTrackName, name);
  if (!description.empty()) w_.Bytes(kTrackDescription, description);
  w_.EndNested(at);
  FinishPacket();
}

uint64_t PerfettoExporter::DeviceUuid(uint32_t device) {
  auto it = device_uuids_.find(device);
  if (it != device_uuids_.end()) return it->second;
  const uint64_t uuid = NewUuid();
  device_uuids_.emplace(device, uuid);
  std::string name = "GPU " + std::to_string(device);
  for (const auto& d : recording_->header.devices())
    if (d.id() == device && !d.name().empty()) name += " " + d.name();
  name += rank_ ? " (" + rank_->label + ")" : " (pid " + std::to_string(rank_pid_) + ")";
  // Same made-up pid as the chrome-json export: one per (recording, device).
  EmitProcessDescriptor(uuid, 1'000'000u + static_cast<uint32_t>(index_) * 1000u + device, name);
  return uuid;
}

PerfettoExporter::TrackGroup& PerfettoExporter::GpuTrack(uint32_t device, uint32_t context,
                                                 uint32_t stream) {
  const GpuKey key{device, context, stream};
  if (last_gpu_ && key == last_gpu_key_) return *last_gpu_;
  auto [it, inserted] = gpu_tracks_.try_emplace(key);
  if (inserted) {
    // A stream belongs to one context, so the context is said once, by the track, instead of by
    // every slice on it (as chrome-json's "context" argument does).
    it->second.parent_uuid = DeviceUuid(device);
    it->second.name = "stream " + std::to_string(stream);
    it->second.description = "context " + std::to_string(context);
  }
  last_gpu_key_ = key;
  last_gpu_ = &it->second;
  return it->second;
}

PerfettoExporter::TrackGroup& PerfettoExporter::CpuTrack(uint32_t pid, uint32_t tid) {
  const std::pair<uint32_t, uint32_t> key{pid, tid};
  if (last_cpu_ && key == last_cpu_key_) return *last_cpu_;
  auto [it, inserted] = cpu_tracks_.try_emplace(key);
  if (inserted) {
    it->second.parent_uuid = process_uuid_;
    it->second.name = "thread " + std::to_string(tid);
    it->second.thread = true;
    it->second.pid = pid;
    it->second.tid = tid;
  }
  last_cpu_key_ = key;
  last_cpu_ = &it->second;
  return it->second;
}

bool PerfettoExporter::Lane::FitsGap(int64_t start, int64_t end) const {
  if (start < forgotten_end) return false;  // may overlap a slice no longer remembered
  for (size_t i = 0; i < recent_size; ++i) {
    const auto& [s, e] = recent[i];
    // Entirely before, or strictly after: a slice beginning exactly where this one ends was
    // written first, and a reader ordering equal times by file order would pair them wrongly.
    if (!(e <= start || s > end)) return false;
  }
  return true;
}

void PerfettoExporter::Lane::Remember(int64_t start, int64_t end) {
  if (recent_size == kRecent) {
    forgotten_end = std::max(forgotten_end, recent[recent_head].second);
  } else {
    ++recent_size;
  }
  recent[recent_head] = {start, end};
  recent_head = (recent_head + 1) % kRecent;
}

uint64_t PerfettoExporter::LaneFor(TrackGroup& group, int64_t start, int64_t end) {
  // A lane's last end is its latest end, so a slice starting at or after it overlaps nothing
  // there. An earlier slice (a late row) can only take a remembered gap: every slice that ends
  // at or before its start has had its end written already (ends are written once a later slice
  // begins), so the lane's begin/end pairs stay in order.
  for (Lane& lane : group.lanes) {
    if (lane.last_end <= start || lane.FitsGap(start, end)) {
      lane.last_end = std::max(lane.last_end, end);
      lane.Remember(start, end);
      return lane.uuid;
    }
  }
  Lane lane;
  lane.uuid = NewUuid();
  lane.last_end = end;
  lane.Remember(start, end);
  if (group.lanes.empty() && group.thread) {
    EmitThreadDescriptor(lane.uuid, group.pid, group.tid, group.name);
  } else {
    const std::string name = group.lanes.empty()
                                 ? group.name
                                 : group.name + " lane " + std::to_string(group.lanes.size() + 1);
    EmitTrackDescriptor(lane.uuid, group.parent_uuid, name, group.description);
  }
  group.lanes.push_back(lane);
  return lane.uuid;
}

void PerfettoExporter::EnsureClock(int64_t t) {
  if (clock_ready_) return;
  // The sequence's incremental clock starts at the first slice's wall-clock time; REALTIME is
  // the trace's clock, so trace time is wall-clock time on every rank.
  clock_ready_ = true;
  clock_now_ = t;
  StartPacket();
  w_.Int64(kPacketTimestamp, t);
  w_.Varint(kPacketTimestampClockId, kClockRealtime);
  const size_t at = w_.BeginNested(kPacketClockSnapshot);
  size_t c = w_.BeginNested(kSnapshotClocks);
  w_.Varint(kClockId, kClockRealtime);
  w_.Int64(kClockTimestamp, t);
  w_.EndNested(c);
  c = w_.BeginNested(kSnapshotClocks);
  w_.Varint(kClockId, kClockSequence);
  w_.Int64(kClockTimestamp, t);
  w_.Varint(kClockIsIncremental, 1);
  w_.EndNested(c);
  w_.Varint(kSnapshotPrimaryTraceClock, kClockRealtime);
  w_.EndNested(at);
  FinishPacket();
}

void PerfettoExporter::Stamp(int64_t t) {
  if (t >= clock_now_) {
    w_.Varint(kPacketTimestamp, static_cast<uint64_t>(t - clock_now_));
    clock_now_ = t;
  } else {
    // Earlier than a packet already written (a row past the reorder bound, windows written at
    // the end): the incremental clock cannot go back, so this one is absolute.
    w_.Int64(kPacketTimestamp, t);
    w_.Varint(kPacketTimestampClockId, kClockRealtime);
  }
}

void PerfettoExporter::WriteEnd(const PendingEnd& e) {
  StartPacket();
  // No SEQ_NEEDS_INCREMENTAL_STATE here (2 bytes of every end): an end names no interned
  // data, and its sequence's state is never lost in a file (the flag only lets a reader drop
  // packets after a loss).
  Stamp(e.time);
  const size_t at = w_.BeginNested(kPacketTrackEvent);
  w_.Varint(kEventType, kSliceEnd);
  w_.Varint(kEventTrackUuid, e.track_uuid);
  w_.EndNested(at);
  FinishPacket();
}

void PerfettoExporter::FlushEndsUpTo(int64_t t) {
  while (!ends_.empty() && ends_.top().time <= t) {
    const PendingEnd e = ends_.top();
    ends_.pop();
    WriteEnd(e);
  }
}

uint64_t PerfettoExporter::LaunchIid(const Row& r, bool* fresh) {
  const LaunchKey key{
      {r.grid[0], r.grid[1], r.grid[2], r.block[0], r.block[1], r.block[2], r.registers}};
  auto [it, inserted] = launches_.try_emplace(key, next_launch_iid_);
  if (inserted) {
    ++next_launch_iid_;
    *fresh = true;
  }
  return it->second;
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
  TrackGroup& group = api ? CpuTrack(PidOf(r.pid), r.tid) : GpuTrack(r.device, r.context, r.stream);
  const uint64_t track = LaneFor(group, start, end);
  EnsureClock(start);
  FlushEndsUpTo(start);

  // Interning: the name by the builder's id; a kernel's launch shape (grid, block, registers)
  // as one string, since a run repeats few shapes and one interned annotation costs 7 bytes
  // where three cost 20.
  bool new_name = false;
  const uint64_t name_iid = NameIid(r, &new_name);
  uint64_t launch_iid = 0;
  bool new_launch = false;
  if (r.type == RowType::kKernel) launch_iid = LaunchIid(r, &new_launch);
  const bool new_nvtx = !r.range.empty() && !nvtx_interned_;
  const bool new_scope =
      !r.range.empty() && r.range_scope == NvtxScope::kProcess && !nvtx_scope_interned_;

  StartPacket();
  Stamp(start);
  w_.Varint(kPacketSequenceFlags, kSeqNeedsIncrementalState);  // interned names, clock
  if (new_name || new_launch || new_nvtx || new_scope) {
    const size_t at = w_.BeginNested(kPacketInternedData);
    if (new_name) Intern(w_, kInternedEventNames, name_iid, r.name);
    if (new_launch) Intern(w_, kInternedAnnotationStrings, launch_iid, LaunchText(r));
    if (new_nvtx) InternNvtx();
    if (new_scope) {
      Intern(w_, kInternedAnnotationNames, kAnnNvtxScope, kAnnotationNames[kAnnNvtxScope]);
      nvtx_scope_interned_ = true;
    }
    w_.EndNested(at);
  }
  const size_t ev = w_.BeginNested(kPacketTrackEvent);
  w_.Varint(kEventType, kSliceBegin);
  w_.Varint(kEventTrackUuid, track);
  w_.Varint(kEventNameIid, name_iid);
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
  w_.Varint(kEventCategoryIids, category);
  AnnotateUint(w_, kAnnCorrelation, r.correlation);
  if (api) {
    // Written only when not 0 (CUDA_SUCCESS / cudaSuccess, nearly every call): absent means 0.
    if (r.return_value) AnnotateUint(w_, kAnnReturn, r.return_value);
    // One flow per activity this call launched; each activity terminates its own (below).
    const uint32_t flows = std::min(r.launched, kMaxFlowsPerLaunch);
    for (uint32_t k = 0; k < flows; ++k)
      w_.Fixed64(kEventFlowIds, FlowId(index_, r.correlation, k));
    if (!r.annotation.empty()) {
      auto [it, inserted] = annotations_.try_emplace(std::string(r.annotation), start, end);
      if (!inserted) {
        it->second.first = std::min(it->second.first, start);
        it->second.second = std::max(it->second.second, end);
      }
    }
  } else {
    if (r.type == RowType::kKernel) {
      const size_t at = w_.BeginNested(kEventDebugAnnotations);
      w_.Varint(kAnnotationNameIid, kAnnLaunch);
      w_.Varint(kAnnotationStringIid, launch_iid);
      w_.EndNested(at);
    } else {
      AnnotateUint(w_, kAnnBytes, r.bytes);
    }
    if (!r.annotation.empty()) AnnotateString(w_, kAnnAnnotation, r.annotation);
    if (r.launched_before_window) AnnotateUint(w_, kAnnLaunchedBeforeWindow, 1);
    if (!r.range.empty()) {
      AnnotateString(w_, kAnnNvtxRange, r.range);
      if (r.range_scope == NvtxScope::kProcess) AnnotateString(w_, kAnnNvtxScope, "process");
    }
    if (r.has_api && r.api_valid_time) {
      FlowSlot& slot = flow_slots_[r.correlation & (kFlowSlots - 1)];
      if (!slot.used || slot.correlation != r.correlation) slot = FlowSlot{r.correlation, 0, true};
      const uint32_t k = slot.next++;
      if (k < kMaxFlowsPerLaunch)
        w_.Fixed64(kEventTerminatingFlowIds, FlowId(index_, r.correlation, k));
    }
  }
  w_.EndNested(ev);
  FinishPacket();
  ends_.push(PendingEnd{end, end_order_++, track});
  ++slices_;
}

void PerfettoExporter::InternNvtx() {
  Intern(w_, kInternedCategories, kCatNvtx, kCategoryNames[kCatNvtx]);
  for (uint64_t i = kAnnNvtxRange; i <= kAnnUnended; ++i)
    Intern(w_, kInternedAnnotationNames, i, kAnnotationNames[i]);
  nvtx_interned_ = true;
}

uint64_t PerfettoExporter::FirstLane(TrackGroup& group) {
  if (group.lanes.empty()) {
    Lane lane;
    lane.uuid = NewUuid();
    if (group.thread) EmitThreadDescriptor(lane.uuid, group.pid, group.tid, group.name);
    else EmitTrackDescriptor(lane.uuid, group.parent_uuid, group.name, group.description);
    group.lanes.push_back(lane);
  }
  return group.lanes.front().uuid;
}

void PerfettoExporter::WriteRange(const Row& r) {
  const int64_t start = r.wall_start;
  // An unended range lasts to the recording's last record (it arrives from Finish, when that
  // is known).
  const uint64_t last = builder_->last_ts();
  const int64_t last_wall = last ? builder_->clock().ToWall(last) : start;
  const int64_t end =
      r.range_ended ? start + static_cast<int64_t>(r.duration) : std::max(start, last_wall);
  uint64_t track;
  if (r.range_kind == RangeKind::kStartEnd) {
    // Ended on another thread: it need not nest with the thread's calls, so it gets a track of
    // its own (with lanes for overlaps).
    auto [it, inserted] = range_tracks_.try_emplace({PidOf(r.pid), r.tid});
    if (inserted) {
      it->second.parent_uuid = process_uuid_;
      it->second.name = "thread " + std::to_string(r.tid) + " ranges";
    }
    track = LaneFor(it->second, start, end);
  } else {
    // Push/pop ranges and marks nest with the thread's API calls: on its own track (first lane).
    track = FirstLane(CpuTrack(PidOf(r.pid), r.tid));
  }
  EnsureClock(start);
  FlushEndsUpTo(start);
  bool new_name = false;
  const uint64_t name_iid = NameIid(r, &new_name);
  const bool new_nvtx = !nvtx_interned_;
  StartPacket();
  Stamp(start);
  w_.Varint(kPacketSequenceFlags, kSeqNeedsIncrementalState);
  if (new_name || new_nvtx) {
    const size_t at = w_.BeginNested(kPacketInternedData);
    if (new_name) Intern(w_, kInternedEventNames, name_iid, r.name);
    if (new_nvtx) InternNvtx();
    w_.EndNested(at);
  }
  const size_t ev = w_.BeginNested(kPacketTrackEvent);
  const bool mark = r.range_kind == RangeKind::kMark;
  w_.Varint(kEventType, mark ? kInstant : kSliceBegin);
  w_.Varint(kEventTrackUuid, track);
  w_.Varint(kEventNameIid, name_iid);
  w_.Varint(kEventCategoryIids, kCatNvtx);
  if (!r.range_domain.empty()) AnnotateString(w_, kAnnDomain, r.range_domain);
  AnnotateUint(w_, kAnnDepth, r.range_depth);
  if (!r.range_ended) AnnotateUint(w_, kAnnUnended, 1);
  w_.EndNested(ev);
  FinishPacket();
  if (!mark) ends_.push(PendingEnd{end, end_order_++, track});
  ++slices_;
}

void PerfettoExporter::WholeSlice(uint64_t track, std::string_view name, uint64_t category,
                              int64_t start, int64_t end,
                              const std::vector<std::pair<uint64_t, std::string>>& strings) {
  EnsureClock(start);
  StartPacket();
  Stamp(start);
  w_.Varint(kPacketSequenceFlags, kSeqNeedsIncrementalState);
  const size_t ev = w_.BeginNested(kPacketTrackEvent);
  w_.Varint(kEventType, kSliceBegin);
  w_.Varint(kEventTrackUuid, track);
  w_.Bytes(kEventName, name);
  w_.Varint(kEventCategoryIids, category);
  for (const auto& [key, value] : strings) AnnotateString(w_, key, value);
  w_.EndNested(ev);
  FinishPacket();
  WriteEnd(PendingEnd{end, end_order_++, track});
  ++slices_;
}

void PerfettoExporter::WriteMemoryCounters(const TraceBuilder& b) {
  memory_.Finish();
  std::map<uint32_t, uint64_t> tracks;  // by device
  for (const auto& [device, stats] : memory_.devices()) {
    if (!stats.allocations) continue;  // pool records only: no bytes in use to draw
    const uint64_t parent = DeviceUuid(device);  // may write the device's process first
    const uint64_t uuid = NewUuid();
    tracks.emplace(device, uuid);
    StartPacket();
    const size_t at = w_.BeginNested(kPacketTrackDescriptor);
    w_.Varint(kTrackUuid, uuid);
    w_.Varint(kTrackParentUuid, parent);
    w_.Bytes(kTrackName, "memory in use (since the recording began)");
    const size_t c = w_.BeginNested(kTrackCounter);
    w_.Varint(kCounterUnit, kUnitSizeBytes);
    w_.EndNested(c);
    w_.EndNested(at);
    FinishPacket();
  }
  for (const MemoryStep& st : memory_.steps()) {
    const int64_t t = b.clock().ToWall(st.ts);
    EnsureClock(t);
    StartPacket();
    Stamp(t);
    const size_t ev = w_.BeginNested(kPacketTrackEvent);
    w_.Varint(kEventType, kCounter);
    w_.Varint(kEventTrackUuid, tracks.at(st.device));
    w_.Int64(kEventCounterValue, static_cast<int64_t>(st.in_use));
    w_.EndNested(ev);
    FinishPacket();
  }
}

void PerfettoExporter::End(const TraceBuilder& b, const Recording&, const ReadIntegrity&) {
  if (job_) job_->End();
  FlushEndsUpTo(std::numeric_limits<int64_t>::max());
  WriteMemoryCounters(b);
  TrackGroup windows;
  windows.parent_uuid = process_uuid_;
  windows.name = "cupmon windows";
  for (const auto& [id, w] : b.windows()) {
    if (!w.begin) continue;
    // An open window (or one whose END marker is missing) lasts to the recording's last record.
    const uint64_t end = w.end >= w.begin && w.end ? w.end : std::max(b.last_ts(), w.begin);
    const int64_t s = b.clock().ToWall(w.begin), e = b.clock().ToWall(end);
    WholeSlice(LaneFor(windows, s, e), "window " + std::to_string(id), kCatWindow, s, e,
               {{kAnnSource, w.source}, {kAnnNote, w.note}});
  }
  std::vector<std::pair<std::pair<int64_t, int64_t>, const std::string*>> spans;
  for (const auto& [label, span] : annotations_) spans.emplace_back(span, &label);
  std::sort(spans.begin(), spans.end());
  TrackGroup labels;
  labels.parent_uuid = process_uuid_;
  labels.name = "annotations";
  for (const auto& [span, label] : spans)
    WholeSlice(LaneFor(labels, span.first, span.second), *label, kCatAnnotation, span.first,
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
  StartPacket();
  w_.Varint(kPacketSequenceFlags, kSeqNeedsIncrementalState);
  const size_t at = w_.BeginNested(kPacketInternedData);
  Intern(w_, kInternedCategories, kCatJob, kCategoryNames[kCatJob]);
  w_.EndNested(at);
  FinishPacket();
  const uint64_t process = NewUuid();
  EmitProcessDescriptor(process, kJobPid, "job (" + std::to_string(a->who.size()) + " ranks)");
  TrackGroup track;
  track.parent_uuid = process;
  track.name = "job";
  for (const Slow& x : slow)
    WholeSlice(LaneFor(track, x.start, x.end), x.name, kCatJob, x.start, x.end, {});
}

void PerfettoExporter::Close() {
  if (job_ && seq_id_) WriteJobTrack();
  if (w_.size())
    out_.write(reinterpret_cast<const char*>(w_.data()), static_cast<std::streamsize>(w_.size()));
  w_.Clear();
  out_.flush();
}

}  // namespace cupmon::decoder

// The Perfetto export's vocabulary: the field numbers of Perfetto's
// protos/perfetto/trace/perfetto_trace.proto (google/perfetto at ec5d16b1) it writes, each constant
// naming its message and field, and the export's fixed interning ids. The schema is not needed to
// build: tests/decoder/perfetto_check.py parses the output with it. Private to the export.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "export/perfetto/proto_wire.h"

namespace cupmon::decoder::perfetto {

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
constexpr uint32_t kCounterUnit = 3;    // optional Unit unit = 3
constexpr uint64_t kUnitSizeBytes = 3;  // UNIT_SIZE_BYTES = 3
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
inline constexpr const char* kCategoryNames[] = {
    "",       "kernel",     "memcpy", "memset", "cuda_runtime", "cuda_driver",
    "window", "annotation", "nvtx",   "job"};
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
inline constexpr const char* kAnnotationNames[] = {
    "",           "correlation", "launch",
    "bytes",      "annotation",  "return",
    "source",     "note",        "launched_before_window",
    "nvtx_range", "domain",      "depth",
    "unended",    "nvtx_scope"};

// A TrackEvent's debug annotations and InternedData's entries, written into the open message.
inline void AnnotateUint(proto_wire::Writer& w, uint64_t name, uint64_t v) {
  const size_t at = w.BeginNested(kEventDebugAnnotations);
  w.Varint(kAnnotationNameIid, name);
  w.Varint(kAnnotationUint, v);
  w.EndNested(at);
}

inline void AnnotateString(proto_wire::Writer& w, uint64_t name, std::string_view v) {
  const size_t at = w.BeginNested(kEventDebugAnnotations);
  w.Varint(kAnnotationNameIid, name);
  w.Bytes(kAnnotationString, v);
  w.EndNested(at);
}

inline void Intern(proto_wire::Writer& w, uint32_t field, uint64_t iid, std::string_view name) {
  const size_t at = w.BeginNested(field);
  w.Varint(kInternIid, iid);
  w.Bytes(kInternName, name);
  w.EndNested(at);
}

}  // namespace cupmon::decoder::perfetto

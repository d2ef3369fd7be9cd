// CUPTI 13.0 record layouts (CUPTI API version 130001), verified against offsetof/sizeof of the
// toolkit's structs by tests/decoder/record_layout_test.cc whenever the headers are present.
#include "cupmon/decoder/record_layout.h"

#include <cstring>

#include "cupmon/format/chunk.h"

namespace cupmon::decoder {
namespace {

using F = Field;

// The 13.0 layouts are only trusted for 13.0.x writers: a later CUPTI may change a struct in place
// while keeping its name and size, and a wrong value is worse than a counted skip.
constexpr uint32_t kApi13Min = 130000;
constexpr uint32_t kApi13Max = 130099;

constexpr FieldOffset kKernel10[] = {
    {F::kRegisters, 6, 2},          {F::kStart, 16, 8},
    {F::kEnd, 24, 8},               {F::kDeviceId, 40, 4},
    {F::kContextId, 44, 4},         {F::kStreamId, 48, 4},
    {F::kGridX, 52, 4},             {F::kGridY, 56, 4},
    {F::kGridZ, 60, 4},             {F::kBlockX, 64, 4},
    {F::kBlockY, 68, 4},            {F::kBlockZ, 72, 4},
    {F::kStaticSharedMemory, 76, 4}, {F::kDynamicSharedMemory, 80, 4},
    {F::kCorrelationId, 92, 4},     {F::kNamePointer, 104, 8},
    {F::kGraphId, 156, 4},
};
constexpr FieldOffset kMemcpy6[] = {
    {F::kCopyKind, 4, 1},  {F::kSrcKind, 5, 1},   {F::kDstKind, 6, 1},
    {F::kBytes, 8, 8},     {F::kStart, 16, 8},    {F::kEnd, 24, 8},
    {F::kDeviceId, 32, 4}, {F::kContextId, 36, 4}, {F::kStreamId, 40, 4},
    {F::kCorrelationId, 44, 4}, {F::kGraphId, 72, 4},
};
constexpr FieldOffset kMemcpyPtoP4[] = {
    {F::kCopyKind, 4, 1},       {F::kSrcKind, 5, 1},       {F::kDstKind, 6, 1},
    {F::kBytes, 8, 8},          {F::kStart, 16, 8},        {F::kEnd, 24, 8},
    {F::kDeviceId, 32, 4},      {F::kContextId, 36, 4},    {F::kStreamId, 40, 4},
    {F::kSrcDeviceId, 44, 4},   {F::kDstDeviceId, 52, 4},  {F::kCorrelationId, 60, 4},
    {F::kGraphId, 80, 4},
};
constexpr FieldOffset kMemset4[] = {
    {F::kMemsetValue, 4, 4}, {F::kBytes, 8, 8},      {F::kStart, 16, 8},
    {F::kEnd, 24, 8},        {F::kDeviceId, 32, 4},  {F::kContextId, 36, 4},
    {F::kStreamId, 40, 4},   {F::kCorrelationId, 44, 4}, {F::kGraphId, 72, 4},
};
constexpr FieldOffset kApi[] = {
    {F::kCbid, 4, 4},     {F::kStart, 8, 8},          {F::kEnd, 16, 8},
    {F::kProcessId, 24, 4}, {F::kThreadId, 28, 4},    {F::kCorrelationId, 32, 4},
    {F::kReturnValue, 36, 4},
};
constexpr FieldOffset kOverhead3[] = {
    {F::kOverheadKind, 4, 4}, {F::kObjectKind, 8, 4}, {F::kObjectId0, 12, 4},
    {F::kObjectId1, 16, 4},   {F::kStart, 24, 8},     {F::kEnd, 32, 8},
    {F::kCorrelationId, 40, 4},
};
constexpr FieldOffset kSynchronization2[] = {
    {F::kSyncType, 4, 4},   {F::kStart, 8, 8},     {F::kEnd, 16, 8},
    {F::kCorrelationId, 24, 4}, {F::kContextId, 28, 4}, {F::kStreamId, 32, 4},
    {F::kEventId, 36, 4},   {F::kEventSyncId, 40, 8}, {F::kReturnValue, 48, 4},
};
constexpr FieldOffset kCudaEvent2[] = {
    {F::kCorrelationId, 4, 4}, {F::kContextId, 8, 4}, {F::kStreamId, 12, 4},
    {F::kEventId, 16, 4},      {F::kDeviceId, 24, 4}, {F::kTimestamp, 40, 8},
    {F::kEventSyncId, 48, 8},
};
constexpr FieldOffset kExternalCorrelation[] = {
    {F::kExternalKind, 4, 4}, {F::kExternalId, 8, 8}, {F::kCorrelationId, 16, 4},
};
constexpr FieldOffset kMarker2[] = {
    {F::kMarkerFlags, 4, 4}, {F::kTimestamp, 8, 8},  {F::kMarkerId, 16, 4},
    {F::kObjectKind, 20, 4}, {F::kObjectId0, 24, 4}, {F::kObjectId1, 28, 4},
    {F::kNamePointer, 40, 8}, {F::kDomainPointer, 48, 8},
};
constexpr FieldOffset kMemory4[] = {
    {F::kMemoryOperation, 4, 4}, {F::kMemoryKind, 8, 4},  {F::kCorrelationId, 12, 4},
    {F::kAddress, 16, 8},        {F::kBytes, 24, 8},      {F::kTimestamp, 32, 8},
    {F::kProcessId, 48, 4},      {F::kDeviceId, 52, 4},   {F::kContextId, 56, 4},
    {F::kStreamId, 60, 4},       {F::kPoolType, 80, 4},   {F::kPoolAddress, 88, 8},
};
constexpr FieldOffset kMemoryPool3[] = {
    {F::kMemoryOperation, 4, 4}, {F::kPoolType, 8, 4},  {F::kCorrelationId, 12, 4},
    {F::kProcessId, 16, 4},      {F::kDeviceId, 20, 4}, {F::kAddress, 32, 8},
    {F::kBytes, 40, 8},          {F::kTimestamp, 56, 8},
};
constexpr FieldOffset kName[] = {
    {F::kObjectKind, 4, 4}, {F::kObjectId0, 8, 4}, {F::kObjectId1, 12, 4},
    {F::kNamePointer, 24, 8},
};

constexpr RecordLayout kLayouts[] = {
    {kKindConcurrentKernel, RecordClass::kKernel, "CUpti_ActivityKernel10", kApi13Min, kApi13Max, 216, kKernel10},
    {kKindKernel, RecordClass::kKernel, "CUpti_ActivityKernel10", kApi13Min, kApi13Max, 216, kKernel10},
    {kKindMemcpy, RecordClass::kMemcpy, "CUpti_ActivityMemcpy6", kApi13Min, kApi13Max, 96, kMemcpy6},
    {kKindMemcpy2, RecordClass::kMemcpy, "CUpti_ActivityMemcpyPtoP4", kApi13Min, kApi13Max, 96, kMemcpyPtoP4},
    {kKindMemset, RecordClass::kMemset, "CUpti_ActivityMemset4", kApi13Min, kApi13Max, 88, kMemset4},
    {kKindRuntime, RecordClass::kApi, "CUpti_ActivityAPI", kApi13Min, kApi13Max, 40, kApi},
    {kKindDriver, RecordClass::kApi, "CUpti_ActivityAPI", kApi13Min, kApi13Max, 40, kApi},
    {kKindOverhead, RecordClass::kOverhead, "CUpti_ActivityOverhead3", kApi13Min, kApi13Max, 56, kOverhead3},
    {kKindSynchronization, RecordClass::kSynchronization, "CUpti_ActivitySynchronization2", kApi13Min, kApi13Max, 56, kSynchronization2},
    {kKindCudaEvent, RecordClass::kCudaEvent, "CUpti_ActivityCudaEvent2", kApi13Min, kApi13Max, 56, kCudaEvent2},
    {kKindExternalCorrelation, RecordClass::kExternalCorrelation, "CUpti_ActivityExternalCorrelation", kApi13Min, kApi13Max, 24, kExternalCorrelation},
    {kKindMarker, RecordClass::kMarker, "CUpti_ActivityMarker2", kApi13Min, kApi13Max, 56, kMarker2},
    {kKindName, RecordClass::kName, "CUpti_ActivityName", kApi13Min, kApi13Max, 32, kName},
    {kKindMemory2, RecordClass::kMemory, "CUpti_ActivityMemory4", kApi13Min, kApi13Max, 128, kMemory4},
    {kKindMemoryPool, RecordClass::kMemoryPool, "CUpti_ActivityMemoryPool3", kApi13Min, kApi13Max, 80, kMemoryPool3},
};

constexpr const char* kFieldNames[] = {
    "start", "end", "deviceId", "contextId", "streamId", "correlationId", "gridX", "gridY",
    "gridZ", "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
    "dynamicSharedMemory", "name", "graphId", "bytes", "copyKind", "srcKind", "dstKind",
    "srcDeviceId", "dstDeviceId", "value", "cbid", "processId", "threadId", "returnValue",
    "overheadKind", "objectKind", "objectId0", "objectId1", "type", "eventId", "cudaEventSyncId",
    "externalKind", "externalId", "flags", "id", "timestamp", "domain", "memoryOperationType",
    "memoryKind", "address", "memoryPoolType", "memoryPoolConfig.address",
};
static_assert(std::size(kFieldNames) == kFieldCount);

}  // namespace

const char* FieldName(Field f) { return kFieldNames[static_cast<size_t>(f)]; }

std::span<const RecordLayout> AllLayouts() { return kLayouts; }

const RecordLayout* FindLayout(uint32_t kind, uint32_t api_version) {
  for (const RecordLayout& l : kLayouts)
    if (l.kind == kind && api_version >= l.min_api && api_version <= l.max_api) return &l;
  return nullptr;
}

void DecodeRecordFields(const RecordLayout& layout, const uint8_t* record, DecodedRecord* out) {
  out->kind = layout.kind;
  out->record_class = layout.record_class;
  out->present = 0;
  out->values.fill(0);
  for (const FieldOffset& f : layout.fields) {
    const uint8_t* p = record + f.offset;
    uint64_t v = 0;
    switch (f.width) {
      case 1: v = p[0]; break;
      case 2: v = static_cast<uint64_t>(p[0]) | static_cast<uint64_t>(p[1]) << 8; break;
      case 4: v = GetLe32(p); break;
      default: v = GetLe64(p); break;
    }
    out->values[static_cast<size_t>(f.field)] = v;
    out->present |= uint64_t{1} << static_cast<unsigned>(f.field);
  }
}

FieldReader::FieldReader(const RecordLayout& layout) {
  for (const FieldOffset& f : layout.fields)
    slots_[static_cast<size_t>(f.field)] = Slot{f.offset, f.width, true};
}

FieldReader FieldReader::Packed(uint32_t size, uint64_t words) const {
  FieldReader out = *this;
  for (Slot& s : out.slots_) {
    if (s.width == 0) continue;
    bool selected = true;  // every byte of the field is written when packed
    for (uint32_t b = s.offset; b < uint32_t{s.offset} + s.width; ++b)
      selected &= b >= size / 8 * 8 || WordSelected(words, b / 8);
    if (selected) {
      s.offset = static_cast<uint16_t>(PackedOffset(s.offset, size, words));
    } else {
      s.offset = 0;
      s.width = 0;
    }
  }
  return out;
}

RecordDecoder RecordDecoder::Packed(const ColumnSelection& packed) const {
  RecordDecoder out = *this;
  for (uint32_t kind = 0; kind < RecordSizeTable::kMaxKind; ++kind) {
    const uint32_t size = sizes_.Size(kind);
    const ColumnSelection::Kind& k = packed.kinds[kind];
    if (size == 0 || k.size != size) continue;  // a buffer with this kind is not packed
    out.sizes_.Set(kind, PackedSize(size, k.words));
    if (entries_[kind].state == State::kSupported)
      out.entries_[kind].reader = entries_[kind].reader.Packed(size, k.words);
  }
  return out;
}

RecordDecoder::RecordDecoder(const RecordSizeTable& sizes, uint32_t cupti_api_version)
    : sizes_(sizes), api_version_(cupti_api_version) {
  for (uint32_t kind = 0; kind < RecordSizeTable::kMaxKind; ++kind) {
    Entry& e = entries_[kind];
    bool known_kind = false;
    for (const RecordLayout& l : kLayouts) known_kind |= l.kind == kind;
    if (!known_kind) continue;  // sized by the file, never decoded: skipped and counted
    const RecordLayout* l = FindLayout(kind, cupti_api_version);
    if (!l) {
      e.state = State::kUnsupported;
      e.why = "no field layout for activity kind " + std::to_string(kind) +
              " at CUPTI API version " + std::to_string(cupti_api_version);
    } else if (sizes.Size(kind) != 0 && sizes.Size(kind) != l->size) {
      e.state = State::kUnsupported;
      e.why = "activity kind " + std::to_string(kind) + " has size " +
              std::to_string(sizes.Size(kind)) + " in the file but " + l->struct_name + " is " +
              std::to_string(l->size) + " bytes";
    } else {
      e.state = State::kSupported;
      e.layout = l;
      e.reader = FieldReader(*l);
    }
  }
}

ColumnSelection RecordDecoder::WordsRead(uint64_t fields, bool pack) const {
  ColumnSelection sel;
  sel.pack = pack;
  for (uint32_t kind = 0; kind < RecordSizeTable::kMaxKind; ++kind) {
    const uint32_t size = sizes_.Size(kind);
    if (size == 0) continue;  // Walk stops at such a record: a group of it is decoded whole
    uint64_t words = 1;       // the kind (Walk reads it for every record, also unsupported ones)
    const Entry& e = entries_[kind];
    if (pack && e.state == State::kUnsupported) continue;  // its stop's offset stays unpacked
    if (e.state == State::kSupported) {
      for (const FieldOffset& f : e.layout->fields) {
        if (!(fields & FieldBit(f.field))) continue;
        for (uint32_t b = f.offset; b < f.offset + f.width; ++b)
          if (b / 8 < 64) words |= uint64_t{1} << (b / 8);
      }
    }
    sel.kinds[kind] = ColumnSelection::Kind{size, words};
  }
  return sel;
}

}  // namespace cupmon::decoder

// Field-offset tables for CUPTI activity records, keyed by kind and CUPTI API version, and a decoder
// that reads records from raw buffer bytes with no libcupti (the layouts are checked in a test).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "cupmon/format/raw_codec.h"
#include "cupmon/format/record_sizes.h"

namespace cupmon::decoder {

// CUpti_ActivityKind values the decoder knows.
enum ActivityKind : uint32_t {
  kKindMemcpy = 1,
  kKindMemset = 2,
  kKindKernel = 3,
  kKindDriver = 4,
  kKindRuntime = 5,
  kKindConcurrentKernel = 10,
  kKindName = 11,
  kKindMarker = 12,
  kKindOverhead = 17,
  kKindMemcpy2 = 22,
  kKindCudaEvent = 36,
  kKindSynchronization = 38,
  kKindExternalCorrelation = 39,
  kKindMemory2 = 49,
  kKindMemoryPool = 50,
};

enum class RecordClass : uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kApi,
  kOverhead,
  kSynchronization,
  kCudaEvent,
  kExternalCorrelation,
  kMarker,
  kName,
  kMemory,      // MEMORY2: one allocation or release
  kMemoryPool,  // MEMORY_POOL: a pool created, trimmed or destroyed
};

// The fields the decoder reads. Not every record class has every field.
enum class Field : uint8_t {
  kStart,
  kEnd,
  kDeviceId,
  kContextId,
  kStreamId,
  kCorrelationId,
  kGridX,
  kGridY,
  kGridZ,
  kBlockX,
  kBlockY,
  kBlockZ,
  kRegisters,
  kStaticSharedMemory,
  kDynamicSharedMemory,
  kNamePointer,  // kernel name, marker name, name record's name: a pointer value
  kGraphId,
  kBytes,
  kCopyKind,
  kSrcKind,
  kDstKind,
  kSrcDeviceId,
  kDstDeviceId,
  kMemsetValue,
  kCbid,
  kProcessId,
  kThreadId,
  kReturnValue,
  kOverheadKind,
  kObjectKind,
  kObjectId0,  // CUpti_ActivityObjectKindId: pt.processId or dcs.deviceId
  kObjectId1,  // pt.threadId or dcs.contextId
  kSyncType,
  kEventId,
  kEventSyncId,
  kExternalKind,
  kExternalId,
  kMarkerFlags,
  kMarkerId,
  kTimestamp,
  kDomainPointer,
  kMemoryOperation,  // CUpti_ActivityMemoryOperationType or CUpti_ActivityMemoryPoolOperationType
  kMemoryKind,       // CUpti_ActivityMemoryKind
  kAddress,
  kPoolType,         // CUpti_ActivityMemoryPoolType (0: not from a pool)
  kPoolAddress,      // MEMORY2: the base address of the pool it came from
  kCount,
};
inline constexpr size_t kFieldCount = static_cast<size_t>(Field::kCount);
// A set of fields, one bit per Field.
inline constexpr uint64_t FieldBit(Field f) { return uint64_t{1} << static_cast<unsigned>(f); }
inline constexpr uint64_t kAllFields = ~uint64_t{0};
const char* FieldName(Field f);

struct FieldOffset {
  Field field;
  uint16_t offset;
  uint8_t width;  // 1, 2, 4 or 8 bytes, little-endian, unsigned
};

// The layout of one activity kind in a range of CUPTI API versions. A layout applies only when the
// writer's version is in [min_api, max_api] and its record size for the kind equals `size`.
struct RecordLayout {
  uint32_t kind;
  RecordClass record_class;
  const char* struct_name;
  uint32_t min_api;
  uint32_t max_api;
  uint32_t size;
  std::span<const FieldOffset> fields;
};

// Every layout the decoder knows (exposed for the offsetof test and docs).
std::span<const RecordLayout> AllLayouts();
// The layout for `kind` at `api_version`, or nullptr.
const RecordLayout* FindLayout(uint32_t kind, uint32_t api_version);

// One decoded record. Fields the layout lacks read as 0 (check Has()).
struct DecodedRecord {
  uint32_t kind = 0;
  RecordClass record_class = RecordClass::kKernel;
  uint64_t present = 0;  // bit per Field
  std::array<uint64_t, kFieldCount> values{};

  uint64_t Get(Field f) const { return values[static_cast<size_t>(f)]; }
  uint32_t Get32(Field f) const { return static_cast<uint32_t>(Get(f)); }
  bool Has(Field f) const { return (present >> static_cast<unsigned>(f)) & 1; }
};
static_assert(kFieldCount <= 64);

// Decodes every field of `layout` from `record` (which holds at least layout.size bytes).
void DecodeRecordFields(const RecordLayout& layout, const uint8_t* record, DecodedRecord* out);

// One layout's offsets indexed by Field, so a single field is read straight from the record bytes
// (no DecodedRecord in between: the hot path reads only the fields it needs).
class FieldReader {
 public:
  FieldReader() = default;
  explicit FieldReader(const RecordLayout& layout);
  // The field's value from `record` (layout.size bytes), or 0 when the layout lacks it.
  [[gnu::always_inline]] uint64_t Get(const uint8_t* record, Field f) const {
    const Slot s = slots_[static_cast<size_t>(f)];
    const uint8_t* p = record + s.offset;
    switch (s.width) {
      case 0: return 0;
      case 1: return p[0];
      case 2: return static_cast<uint64_t>(p[0]) | static_cast<uint64_t>(p[1]) << 8;
      case 4: return GetLe32Bytes(p);
      default: return GetLe32Bytes(p) | static_cast<uint64_t>(GetLe32Bytes(p + 4)) << 32;
    }
  }
  [[gnu::always_inline]] uint32_t Get32(const uint8_t* record, Field f) const {
    return static_cast<uint32_t>(Get(record, f));
  }
  bool Has(Field f) const { return slots_[static_cast<size_t>(f)].present; }
  // This reader for records of `size` bytes packed with `words` (ColumnSelection::pack): a field
  // in selected words is read from where packing put it; any other reads as 0 (Has() unchanged).
  FieldReader Packed(uint32_t size, uint64_t words) const;

 private:
  static uint32_t GetLe32Bytes(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
  }
  struct Slot {
    uint16_t offset = 0;
    uint8_t width = 0;     // 0: reads as 0
    bool present = false;  // the layout has the field
  };
  std::array<Slot, kFieldCount> slots_{};
};

// Why a buffer walk stopped early.
struct BufferStop {
  uint32_t kind = 0;
  uint64_t offset = 0;  // within the buffer
  std::string why;
};

// Decodes raw CUPTI buffers with the writer's size table (from the file) and the layouts above.
// Kinds the file's table sizes but the decoder has no layout for at all (e.g. MEMORY2) are skipped
// by size and counted. A kind missing from the size table, or one whose layout does not apply to
// the writer's version or size, stops the buffer: its remaining records cannot be read safely.
class RecordDecoder {
 public:
  RecordDecoder(const RecordSizeTable& sizes, uint32_t cupti_api_version);

  struct Result {
    uint64_t records = 0;       // decoded and handed to the callback
    uint64_t skipped = 0;       // sized but not decoded (no layout for the kind)
    bool complete = true;       // false: the buffer stopped early (see stop)
    BufferStop stop;
  };

  // Calls fn(const RecordLayout&, const FieldReader&, const uint8_t* record) for each decodable
  // record, in buffer order; the record pointer holds layout.size bytes.
  template <typename Fn>
  Result Walk(std::span<const uint8_t> buffer, Fn&& fn) const {
    Result r;
    size_t off = 0;
    const uint8_t* data = buffer.data();
    const size_t n = buffer.size();
    while (off < n) {
      if (n - off < 4) {
        Stop(&r, 0, off, "a record header is cut short");
        return r;
      }
      const uint32_t kind = RecordKindAt(data + off);
      const uint32_t size = sizes_.Size(kind);
      if (size == 0) {
        Stop(&r, kind, off, "activity kind " + std::to_string(kind) + " is not in the file's size table");
        return r;
      }
      if (size > n - off) {
        Stop(&r, kind, off, "record of kind " + std::to_string(kind) + " runs past the buffer end");
        return r;
      }
      const Entry& e = entries_[kind];
      if (e.state == State::kSupported) {
        fn(*e.layout, e.reader, data + off);
        ++r.records;
      } else if (e.state == State::kNoLayout) {
        ++r.skipped;
      } else {
        Stop(&r, kind, off, e.why);
        return r;
      }
      off += size;
    }
    return r;
  }

  // Calls fn(const DecodedRecord&) for each decodable record, in buffer order.
  template <typename Fn>
  Result Decode(std::span<const uint8_t> buffer, Fn&& fn) const {
    DecodedRecord rec;
    return Walk(buffer, [&](const RecordLayout& layout, const FieldReader&, const uint8_t* p) {
      DecodeRecordFields(layout, p, &rec);
      fn(static_cast<const DecodedRecord&>(rec));
    });
  }

  uint32_t api_version() const { return api_version_; }

  // The words of each record that Walk and a callback reading only `fields` (FieldBit) through
  // its FieldReader look at, for a partial columnar inverse (RawBufferDecoder::Decode's `keep`):
  // every kind in the size table, with its size, the kind word and the words of those of the
  // layout's fields. A buffer whose column groups disagree with the table is decoded whole, so
  // Walk never reads a skipped word.
  // With `pack`, the selection asks for packed records (ColumnSelection::pack) and leaves out the
  // kinds Walk stops at, so that a buffer holding one is decoded whole and stops where it did.
  ColumnSelection WordsRead(uint64_t fields = kAllFields, bool pack = false) const;
  // A decoder of the buffers decoded with `packed` (a selection with pack set): the same kinds and
  // layouts, each selected kind's size and field offsets those of its packed records.
  RecordDecoder Packed(const ColumnSelection& packed) const;

 private:
  enum class State : uint8_t { kNoLayout, kSupported, kUnsupported };
  struct Entry {
    State state = State::kNoLayout;
    const RecordLayout* layout = nullptr;
    FieldReader reader;
    std::string why;
  };
  static void Stop(Result* r, uint32_t kind, uint64_t off, std::string why) {
    r->complete = false;
    r->stop = BufferStop{kind, off, std::move(why)};
  }

  RecordSizeTable sizes_;
  uint32_t api_version_;
  std::array<Entry, RecordSizeTable::kMaxKind> entries_;
};

}  // namespace cupmon::decoder

// The writer's activity-kind -> record-size table, and walking a raw CUPTI buffer with it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace cupmon {

// Maps a CUpti_ActivityKind value to the record size in bytes that the writing libcupti used.
// Size 0 means "not known": a buffer holding such a record cannot be walked past it.
class RecordSizeTable {
 public:
  static constexpr uint32_t kMaxKind = 128;

  void Set(uint32_t kind, uint32_t size) {
    if (kind < kMaxKind) sizes_[kind] = size;
  }
  uint32_t Size(uint32_t kind) const { return kind < kMaxKind ? sizes_[kind] : 0; }
  bool Empty() const {
    for (uint32_t s : sizes_)
      if (s) return false;
    return true;
  }

  // The sizes compiled into CUPTI 13.0 (API version 130001); see docs/FORMAT.md. Used by tests and
  // as a documented reference, never instead of the table stored in a file.
  static RecordSizeTable Cupti13();

 private:
  std::array<uint32_t, kMaxKind> sizes_{};
};

// Where each activity kind keeps its timestamps and correlation id, as byte offsets into its
// record (0: the kind has no such field, or the writer does not know it). A kind with one
// timestamp (marker, memory) has start == end. The writer uses it for the footer's chunk index
// (docs/FORMAT.md, "Chunk index"); the monitor fills it from the CUPTI structs it was compiled
// with, for the kinds whose probed size matches them.
struct RecordTimeFields {
  uint32_t start = 0;
  uint32_t end = 0;
  uint32_t correlation = 0;
};
class RecordTimeLayout {
 public:
  void Set(uint32_t kind, RecordTimeFields f) {
    if (kind < RecordSizeTable::kMaxKind) fields_[kind] = f;
  }
  const RecordTimeFields& Get(uint32_t kind) const {
    static const RecordTimeFields kNone;
    return kind < RecordSizeTable::kMaxKind ? fields_[kind] : kNone;
  }
  bool Empty() const {
    for (const auto& f : fields_)
      if (f.start) return false;
    return true;
  }

 private:
  std::array<RecordTimeFields, RecordSizeTable::kMaxKind> fields_{};
};

// The kind field every CUPTI activity record starts with (CUpti_Activity::kind, 4 bytes).
inline uint32_t RecordKindAt(const uint8_t* record) {
  return static_cast<uint32_t>(record[0]) | static_cast<uint32_t>(record[1]) << 8 |
         static_cast<uint32_t>(record[2]) << 16 | static_cast<uint32_t>(record[3]) << 24;
}

struct WalkResult {
  size_t records = 0;
  size_t bytes_walked = 0;  // == buffer size when the walk reached the end exactly
  bool complete = false;    // false: stopped at an unknown kind or a record overrunning the end
  uint32_t stopped_kind = 0;
};

// Walks `buffer` record by record and calls fn(kind, record_bytes) for each. Stops at the first
// record whose kind is not in `sizes` or that would run past the end.
template <typename Fn>
WalkResult WalkRecords(std::span<const uint8_t> buffer, const RecordSizeTable& sizes, Fn&& fn) {
  WalkResult r;
  size_t off = 0;
  while (off + 4 <= buffer.size()) {
    const uint32_t kind = RecordKindAt(buffer.data() + off);
    const uint32_t size = sizes.Size(kind);
    if (size == 0 || size > buffer.size() - off) {
      r.stopped_kind = kind;
      r.bytes_walked = off;
      return r;
    }
    fn(kind, buffer.subspan(off, size));
    off += size;
    ++r.records;
  }
  r.bytes_walked = off;
  r.complete = off == buffer.size();
  return r;
}

}  // namespace cupmon

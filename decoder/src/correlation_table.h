// CorrelationTable: the trace builder's join state by correlation id, on the reading thread; and
// the hand-over of an emptied table from one builder to the next.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>

#include "cupmon/base/check.h"
#include "cupmon/base/mapped_array.h"

namespace cupmon::decoder {

// Everything joined on one correlation id. The one-byte members come last: the table keeps its
// own bookkeeping in the tail padding after them (CorrelationTable::Stored).
struct CorrelationEntry {
  uint64_t api_start = 0, api_end = 0;
  uint64_t external_id = 0;
  uint32_t cbid = 0, pid = 0, tid = 0, ret = 0;
  uint32_t gpu_count = 0;
  int32_t gpu_first = 0;  // first activity's name: a string index, -2 memset, -10-copyKind memcpy
  bool has_api = false, has_external = false;
  uint8_t api_kind = 0;  // kKindRuntime or kKindDriver
};

// Map from correlation id to CorrelationEntry, holding the `max_live` ids tracked last: tracking
// one more forgets the oldest, so memory does not grow with the recording. Entries are created and
// forgotten in the same order, so they live in a FIFO ring in creation order: the join stage,
// which walks the stream, walks the ring in order too, and the oldest entry is the one just before
// the live run. CUPTI hands out correlation ids from one process-wide counter, so the live ids
// form a mostly increasing run: an index slot `id mod index size` holds the ring position of an id
// directly (4 bytes, no hashing). The index has 8 to 16 slots per live entry (16 at the default
// horizon), because ids of calls that were not recorded (API calls outside windows) leave gaps: a
// rank's ids spread over several times their number, and with one slot per live id many would go
// to the hash map, which is far slower than the index. An id
// whose slot holds another live id still goes to that map (`overflow_`), so arbitrary ids stay
// correct. Single-threaded: one builder's reading thread; Make and Recycle are thread-safe.
class CorrelationTable {
 public:
  // The ring holds exactly max_live + 1 entries (Track holds one more for a moment; the default
  // bound, 4 * 65,536 + 1, lies just above a power of two, so rounding it up doubled the ring),
  // the index a power of two of at least 8 slots per entry. Sizes change only speed: fewer slots
  // an entry send more ids to `overflow_`, whose allocations fault in more pages than the smaller
  // index saves.
  explicit CorrelationTable(size_t max_live);

  // A table for a new builder: the one a finished builder gave back with Recycle when its bound
  // is `max_live`, else a new one. Its ring and index (32 MiB at the default horizon, most of it
  // written on a recording of 300,000 records) would otherwise be cleared again by the kernel,
  // page by page, for each rank of an export. Thread-safe (builders run on several threads).
  static std::unique_ptr<CorrelationTable> Make(size_t max_live);
  // Forgets every entry, oldest first, and keeps the emptied table for the next Make: at most one
  // table is kept. Thread-safe.
  static void Recycle(std::unique_ptr<CorrelationTable> table);

  // The entry for `id`, or null when it is not tracked.
  CorrelationEntry* Find(uint32_t id) {
    const uint32_t at = index_[id & index_mask_];
    if (at && ring_[at - 1].id == id) return &ring_[at - 1].entry;
    if (overflow_.empty()) return nullptr;
    auto it = overflow_.find(id);
    return it == overflow_.end() ? nullptr : &ring_[it->second].entry;
  }
  // The entry for `id`, created empty when it is not tracked; creating one beyond max_live
  // forgets the oldest. Entries never move: a pointer stays valid until its entry is forgotten.
  CorrelationEntry* Track(uint32_t id) {
    auto [e, created] = Insert(id);
    if (created && live_ > max_live_) ForgetOldest();
    return e;
  }
  // Forgets the oldest entries until at most `keep` are live.
  void Retire(size_t keep) {
    while (live_ > keep) ForgetOldest();
  }
  size_t max_live() const { return max_live_; }
  size_t live() const { return live_; }

 private:
  // One ring slot. The entry is a potentially-overlapping member (it is not a C++03 POD: its
  // members have initializers), so `live` and `id` take its tail padding: 56 bytes a slot, not 64.
  struct Stored {
    [[no_unique_address]] CorrelationEntry entry;
    bool live;
    uint32_t id;
  };
  static_assert(sizeof(Stored) == 56, "the ring slot packs the table's bookkeeping");
  std::pair<CorrelationEntry*, bool> Insert(uint32_t id);
  void ForgetOldest();
  uint32_t Create(uint32_t id);

  size_t max_live_;
  ZeroedArray<Stored> ring_;
  ZeroedArray<uint32_t> index_;  // ring position + 1 of the id in this slot; 0: none
  size_t index_mask_ = 0;
  // The live entries are the `live_` ring positions from oldest_ on, wrapping; next_ follows them.
  size_t oldest_ = 0, next_ = 0, live_ = 0;
  std::unordered_map<uint32_t, uint32_t> overflow_;  // id -> ring position
};

// Inline: one call per record on the join's path.
inline std::pair<CorrelationEntry*, bool> CorrelationTable::Insert(uint32_t id) {
  uint32_t& at = index_[id & index_mask_];
  if (at) {
    if (ring_[at - 1].id == id) return {&ring_[at - 1].entry, false};
    auto it = overflow_.find(id);
    if (it != overflow_.end()) return {&ring_[it->second].entry, false};
    const uint32_t pos = Create(id);
    overflow_.emplace(id, pos);
    return {&ring_[pos].entry, true};
  }
  if (!overflow_.empty()) {
    auto it = overflow_.find(id);
    if (it != overflow_.end()) return {&ring_[it->second].entry, false};
  }
  const uint32_t pos = Create(id);
  at = pos + 1;
  return {&ring_[pos].entry, true};
}

inline void CorrelationTable::ForgetOldest() {
  const size_t pos = oldest_;
  oldest_ = oldest_ + 1 == ring_.size() ? 0 : oldest_ + 1;
  Stored& s = ring_[pos];
  s.live = false;
  --live_;
  uint32_t& at = index_[s.id & index_mask_];
  if (at == pos + 1) {
    at = 0;
    return;
  }
  overflow_.erase(s.id);
}

inline uint32_t CorrelationTable::Create(uint32_t id) {
  const auto pos = static_cast<uint32_t>(next_);
  next_ = next_ + 1 == ring_.size() ? 0 : next_ + 1;
  Stored& s = ring_[pos];
  // Holds while at most max_live_ + 1 entries are live (Track forgets the oldest beyond that).
  CUPMON_CHECK(!s.live);
  // The entry first: its assignment copies its members only, never the slot's own.
  s.entry = CorrelationEntry{};
  s.id = id;
  s.live = true;
  ++live_;
  return pos;
}

}  // namespace cupmon::decoder

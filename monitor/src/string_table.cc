// StringTable: interning of CUPTI's name pointers and of annotation labels, with byte caps.
#include "string_table.h"

#include <cupti.h>

#include <cstring>

namespace cupmon {
namespace {

// Rough cost of one map entry and its string entry beyond the text (nodes, ids, the pending copy).
constexpr size_t kEntryOverheadBytes = 96;

std::atomic<uint64_t> g_next_generation{1};

uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Per application thread: labels this thread pushed before, for one table (generation). Bounded:
// beyond kMaxCachedLabels a thread goes through the table's lock.
constexpr size_t kMaxCachedLabels = 256;
struct LabelCache {
  uint64_t generation = 0;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint64_t, Hash, std::equal_to<>> ids;
};
thread_local LabelCache t_labels;

}  // namespace

StringTable::StringTable(Limits limits, FaultInjector faults)
    : limits_(limits),
      faults_(std::move(faults)),
      generation_(g_next_generation.fetch_add(1, std::memory_order_relaxed)) {}

size_t StringTable::bytes() const {
  MutexLock lk(mu_);
  return bytes_ + label_bytes_;
}

void StringTable::InternBuffer(const SessionFacts& facts, const uint8_t* buffer, size_t valid) {
  if (!facts.kernel_name_offset && !facts.marker_name_offset) return;
  MaybeFault(faults_, "intern");
  MutexLock lk(mu_);
  WalkRecords({buffer, valid}, facts.sizes, [&](uint32_t kind, std::span<const uint8_t> rec) {
    mu_.AssertHeld();  // WalkRecords calls back inside this scope
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      if (facts.kernel_name_offset) InternLocked(Load64(rec.data() + facts.kernel_name_offset));
    } else if (kind == CUPTI_ACTIVITY_KIND_MARKER && facts.marker_name_offset) {
      InternLocked(Load64(rec.data() + facts.marker_name_offset));
      InternLocked(Load64(rec.data() + facts.marker_domain_offset));
    }
  });
}

void StringTable::InternLocked(uint64_t pointer) {
  if (pointer == 0 || pointer == last_pointer_) return;
  if (ids_.contains(pointer)) {
    last_pointer_ = pointer;
    return;
  }
  const char* text = reinterpret_cast<const char*>(pointer);
  const size_t length = strnlen(text, limits_.max_string_bytes);
  if (bytes_ + length + kEntryOverheadBytes > limits_.max_bytes) {
    // Full: the records keep their pointers and decode as unnamed; counted once per record.
    refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Add(pointer, std::string(text, length));
  bytes_ += length + kEntryOverheadBytes;
  last_pointer_ = pointer;
}

void StringTable::Add(uint64_t pointer, std::string text) {
  // The entry first, the map last: if an allocation throws in between, the pointer is simply
  // interned again later (a second entry for one pointer; the decoder keeps either).
  pb::StringEntry e;
  e.set_id(next_id_);
  e.set_pointer(pointer);
  e.set_text(std::move(text));
  pending_.push_back(std::move(e));
  ids_.emplace(pointer, next_id_);
  ++next_id_;
  strings_.fetch_add(1, std::memory_order_relaxed);
}

Expected<uint64_t> StringTable::InternLabel(std::string_view label) {
  if (label.size() > limits_.max_label_length)
    return MakeError("annotation label of " + std::to_string(label.size()) +
                     " bytes is longer than " + std::to_string(limits_.max_label_length));
  LabelCache& cache = t_labels;
  if (cache.generation == generation_) {
    if (auto it = cache.ids.find(label); it != cache.ids.end()) return it->second;
  } else {
    cache.ids.clear();
    cache.generation = generation_;
  }
  uint64_t id = 0;
  {
    MutexLock lk(mu_);
    if (auto it = labels_.find(label); it != labels_.end()) {
      id = it->second;
    } else {
      const size_t cost = label.size() + kEntryOverheadBytes;
      if (label_bytes_ + cost > limits_.max_label_bytes) {
        labels_refused_.fetch_add(1, std::memory_order_relaxed);
        return MakeError("annotation labels fill " + std::to_string(label_bytes_) +
                         " bytes, the registry's cap; reuse labels (e.g. \"step\" instead of "
                         "\"step 1234\")");
      }
      auto [node, inserted] = labels_.emplace(std::string(label), 0);
      // The id is the address of the table's copy: unique, never reused while the table lives
      // (the monitor's table lives until exit).
      id = reinterpret_cast<uint64_t>(node->first.c_str());
      node->second = id;
      label_bytes_ += cost;
      pb::StringEntry e;
      e.set_id(next_id_++);
      e.set_pointer(id);
      e.set_text(node->first);
      pending_.push_back(std::move(e));
      strings_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (cache.ids.size() < kMaxCachedLabels) cache.ids.emplace(std::string(label), id);
  return id;
}

void StringTable::TakeNew(std::vector<pb::StringEntry>* out) {
  MutexLock lk(mu_);
  if (pending_.empty()) return;
  if (out->empty()) {
    out->swap(pending_);
    return;
  }
  for (auto& e : pending_) out->push_back(std::move(e));
  pending_.clear();
}

}  // namespace cupmon

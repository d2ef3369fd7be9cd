// NameTable: the trace builder's names, on its (reading) thread: the recording's string entries,
// and the display names rows carry, each interned once under a small id.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/decoder/record_layout.h"

namespace cupmon::decoder {

// String entries: files restate every earlier entry, records name kernels by pointer and NVTX
// ranges by pointer, and the monitor's annotation API labels external ids with entries whose
// pointer is the id. Every distinct entry is kept (a kernel record names the entry current when it
// arrived: Pending::string_index), and the latest entry per pointer wins.
//
// Display names: a kernel's demangled name (raw with `mangled`), an API's name, "[CUDA memcpy
// HtoD]", a range's or domain's text. Each distinct text is stored once and rows carry its id and
// a view of it, valid for the table's life.
//
// Memory grows with the recording's distinct strings and names (a few thousand in a training job),
// never with its records.
class NameTable {
 public:
  explicit NameTable(bool mangled);
  NameTable(const NameTable&) = delete;
  NameTable& operator=(const NameTable&) = delete;

  void OnStrings(const pb::StringTable& table);

  // The index of the entry now current for a kernel's name pointer, or -1 when none is. Kernels
  // reuse a few hundred names: a direct-mapped cache saves the hash lookup per record.
  int32_t KernelStringIndex(uint64_t pointer) {
    NameCacheSlot& slot = name_cache_[(pointer ^ pointer >> 8 ^ pointer >> 16) & 255];
    if (slot.index_plus_1 && slot.pointer == pointer)
      return static_cast<int32_t>(slot.index_plus_1 - 1);
    auto it = string_by_pointer_.find(pointer);
    if (it == string_by_pointer_.end()) return -1;
    slot = NameCacheSlot{pointer, it->second + 1};
    return static_cast<int32_t>(it->second);
  }
  bool HasString(uint64_t pointer) const { return string_by_pointer_.contains(pointer); }
  // An entry by index (from KernelStringIndex), as written: a kernel's mangled name.
  const std::string& String(size_t index) const { return strings_[index]; }

  // Display name ids. A kernel's from its entry index; with no entry (index < 0) a placeholder
  // naming the pointer ("<unresolved kernel name 0x...>").
  uint32_t KernelNameId(int64_t index, uint64_t pointer) {
    if (index >= 0 && static_cast<size_t>(index) < kernel_name_ids_.size() &&
        kernel_name_ids_[static_cast<size_t>(index)] >= 0)
      return static_cast<uint32_t>(kernel_name_ids_[static_cast<size_t>(index)]);
    return NewKernelNameId(index, pointer);
  }
  uint32_t ApiNameId(uint32_t kind, uint32_t cbid) {
    const bool driver = kind == kKindDriver;
    if (cbid < kMaxDenseCbid && api_name_ids_[driver][cbid] >= 0)
      return static_cast<uint32_t>(api_name_ids_[driver][cbid]);
    return NewApiNameId(driver, cbid);
  }
  uint32_t MemcpyNameId(uint32_t copy_kind);
  uint32_t MemsetNameId();
  uint32_t SyncNameId();
  // An NVTX range's name or domain by its pointer: the entry's text, "(unnamed)" for a range
  // pushed with no message, "" for the default domain, else a placeholder naming the pointer.
  uint32_t MarkerStringId(uint64_t pointer, bool domain);
  // The label of an external correlation id: the entry whose pointer is the id, else
  // "external#<id>". Valid for the table's life.
  std::string_view Annotation(uint64_t external_id);

  std::string_view NameOf(uint32_t id) const { return name_views_[id]; }
  size_t size() const { return name_views_.size(); }

 private:
  static constexpr uint32_t kMaxDenseCbid = 4096;  // API name ids for smaller cbids: a vector

  uint32_t Intern(std::string name);
  // The miss paths of KernelNameId and ApiNameId: an id not looked up yet.
  uint32_t NewKernelNameId(int64_t index, uint64_t pointer);
  uint32_t NewApiNameId(bool driver, uint32_t cbid);

  bool mangled_;
  std::deque<std::string> strings_;
  std::unordered_map<uint64_t, uint32_t> string_by_pointer_;
  // Display names (deque: views stay valid), viewed by id from a vector (NameOf runs several times
  // a row), and found by text.
  std::deque<std::string> names_;
  std::vector<std::string_view> name_views_;
  std::unordered_map<std::string_view, uint32_t> name_ids_;
  std::vector<int32_t> kernel_name_ids_;                  // entry index -> name id (-1: not yet)
  std::unordered_map<uint64_t, uint32_t> unresolved_ids_;  // pointer -> placeholder name id
  std::vector<int32_t> api_name_ids_[2];                  // [driver][cbid] -> name id (-1: not yet)
  std::unordered_map<uint32_t, uint32_t> api_name_ids_far_;  // cbids past kMaxDenseCbid
  std::array<int32_t, 11> memcpy_name_ids_;
  int32_t memset_name_id_ = -1, sync_name_id_ = -1;
  std::unordered_map<uint64_t, uint32_t> marker_string_ids_;  // pointer -> name id (names, domains)
  std::unordered_map<uint64_t, std::string> annotations_;     // external id -> label
  // Kernel name pointer -> entry index + 1 (0: empty slot), direct-mapped in front of
  // string_by_pointer_; cleared whenever an entry is added.
  struct NameCacheSlot {
    uint64_t pointer = 0;
    uint32_t index_plus_1 = 0;
  };
  std::array<NameCacheSlot, 256> name_cache_{};
};

}  // namespace cupmon::decoder

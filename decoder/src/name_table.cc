// NameTable: string entries and interned display names (name_table.h).
#include "name_table.h"

#include "cupmon/decoder/api_names.h"
#include "cupmon/decoder/kernel_names.h"
#include "hex_text.h"

namespace cupmon::decoder {

NameTable::NameTable(bool mangled) : mangled_(mangled) {
  memcpy_name_ids_.fill(-1);
  for (auto& v : api_name_ids_) v.assign(kMaxDenseCbid, -1);
}

void NameTable::OnStrings(const pb::StringTable& table) {
  for (const auto& e : table.entries()) {
    auto it = string_by_pointer_.find(e.pointer());
    // Files restate every earlier string; an identical restatement needs no new entry.
    if (it != string_by_pointer_.end() && strings_[it->second] == e.text()) continue;
    strings_.push_back(e.text());
    string_by_pointer_[e.pointer()] = static_cast<uint32_t>(strings_.size() - 1);
    name_cache_.fill(NameCacheSlot{});  // the pointer may now name a newer entry
    marker_string_ids_.clear();
  }
}

uint32_t NameTable::Intern(std::string name) {
  auto it = name_ids_.find(name);
  if (it != name_ids_.end()) return it->second;
  names_.push_back(std::move(name));
  const auto id = static_cast<uint32_t>(names_.size() - 1);
  name_views_.push_back(names_.back());
  name_ids_.emplace(names_.back(), id);
  return id;
}

uint32_t NameTable::NewKernelNameId(int64_t index, uint64_t pointer) {
  if (index < 0) {
    auto it = unresolved_ids_.find(pointer);
    if (it != unresolved_ids_.end()) return it->second;
    const uint32_t id = Intern("<unresolved kernel name " + Hex(pointer) + ">");
    unresolved_ids_.emplace(pointer, id);
    return id;
  }
  // KernelNameId found no id for this entry: the first row naming it.
  const auto i = static_cast<size_t>(index);
  if (i >= kernel_name_ids_.size()) kernel_name_ids_.resize(strings_.size(), -1);
  const std::string& raw = strings_[i];
  const uint32_t id = Intern(mangled_ ? raw : Demangle(raw));
  kernel_name_ids_[i] = static_cast<int32_t>(id);
  return id;
}

uint32_t NameTable::NewApiNameId(bool driver, uint32_t cbid) {
  if (cbid < kMaxDenseCbid) {  // ApiNameId found no id for it: the first row naming it
    const uint32_t id = Intern(ApiDisplayName(driver, cbid));
    api_name_ids_[driver][cbid] = static_cast<int32_t>(id);
    return id;
  }
  auto [it, inserted] = api_name_ids_far_.try_emplace((driver ? 1u << 31 : 0u) | cbid, 0);
  if (inserted) it->second = Intern(ApiDisplayName(driver, cbid));
  return it->second;
}

uint32_t NameTable::MemcpyNameId(uint32_t copy_kind) {
  int32_t& id = memcpy_name_ids_[copy_kind < memcpy_name_ids_.size() ? copy_kind : 0];
  if (id < 0) id = static_cast<int32_t>(Intern(MemcpyKindName(copy_kind)));
  return static_cast<uint32_t>(id);
}

uint32_t NameTable::MemsetNameId() {
  if (memset_name_id_ < 0) memset_name_id_ = static_cast<int32_t>(Intern("[CUDA memset]"));
  return static_cast<uint32_t>(memset_name_id_);
}

uint32_t NameTable::SyncNameId() {
  if (sync_name_id_ < 0) sync_name_id_ = static_cast<int32_t>(Intern("[CUDA synchronization]"));
  return static_cast<uint32_t>(sync_name_id_);
}

uint32_t NameTable::MarkerStringId(uint64_t pointer, bool domain) {
  const uint64_t key = pointer ^ (domain ? uint64_t{1} << 63 : 0);
  auto it = marker_string_ids_.find(key);
  if (it != marker_string_ids_.end()) return it->second;
  std::string text;
  if (pointer == 0) {
    text = domain ? "" : "(unnamed)";  // the default domain; a range pushed with no message
  } else if (auto s = string_by_pointer_.find(pointer); s != string_by_pointer_.end()) {
    text = strings_[s->second];
  } else {
    // Counted per record by the builder; the placeholder names the pointer, as for kernels.
    text = std::string(domain ? "<unresolved domain " : "<unresolved range name ") + Hex(pointer) +
           ">";
  }
  const uint32_t id = Intern(std::move(text));
  marker_string_ids_.emplace(key, id);
  return id;
}

std::string_view NameTable::Annotation(uint64_t external_id) {
  auto [a, inserted] = annotations_.try_emplace(external_id);
  if (inserted) {
    // Labels are string entries whose `pointer` is the external id (written by the monitor's
    // annotation API); without one the id itself is the label.
    auto s = string_by_pointer_.find(external_id);
    a->second = s != string_by_pointer_.end() ? strings_[s->second]
                                              : "external#" + std::to_string(external_id);
  }
  return a->second;
}

}  // namespace cupmon::decoder

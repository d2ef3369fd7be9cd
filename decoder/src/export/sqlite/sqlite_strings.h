// The SQLite export's StringIds table and the ids of the names its rows carry (kernel and API
// names). Private to the SQLite export.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cupmon/decoder/record_layout.h"
#include "cupmon/decoder/row.h"

namespace cupmon::decoder {

// Texts get ids from 1, in the order they first appear, across ranks; the StringIds rows are
// written from strings() at the end. Kernel names are looked up per rank (the builder's name ids
// are a rank's), API names per callback id. Used on the caller's thread only.
class SqliteStrings {
 public:
  struct KernelNames {
    int64_t demangled = 0, short_name = 0, mangled = 0;  // ids (mangled 0: NULL)
    bool known = false;
  };

  SqliteStrings();
  SqliteStrings(const SqliteStrings&) = delete;
  SqliteStrings& operator=(const SqliteStrings&) = delete;

  int64_t Id(std::string_view text) {
    auto [it, inserted] = ids_.try_emplace(std::string(text), 0);
    if (inserted) {
      by_id_.push_back(&it->first);
      it->second = static_cast<int64_t>(by_id_.size());
    }
    return it->second;
  }
  // A kernel row's demangled, short and mangled names.
  const KernelNames& KernelNamesOf(const Row& r) {
    if (r.name_id >= kernel_names_.size()) kernel_names_.resize(r.name_id + 1);
    KernelNames& k = kernel_names_[r.name_id];
    if (!k.known) ResolveKernel(r, k);
    return k;
  }
  // An API row's call name, as nsys names it.
  int64_t ApiNameId(const Row& r) {
    const bool driver = r.kind == kKindDriver;
    const std::vector<int64_t>& ids = api_name_ids_[driver];
    if (r.cbid < ids.size() && ids[r.cbid]) return ids[r.cbid];
    return ResolveApiName(driver, r.cbid);
  }
  // A new rank: its builder's name ids.
  void BeginRank() { kernel_names_.clear(); }
  // Id - 1 -> text.
  const std::vector<const std::string*>& strings() const { return by_id_; }

 private:
  void ResolveKernel(const Row& r, KernelNames& k);
  int64_t ResolveApiName(bool driver, uint32_t cbid);

  std::unordered_map<std::string, int64_t> ids_;
  std::vector<const std::string*> by_id_;  // id - 1 -> text (keys of ids_)
  std::vector<int64_t> api_name_ids_[2];   // [driver][cbid] -> id (0: not yet)
  std::vector<KernelNames> kernel_names_;  // the rank's builder name id -> ids
};

}  // namespace cupmon::decoder

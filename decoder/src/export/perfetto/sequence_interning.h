// What one packet sequence of the Perfetto export has interned. Private to the export.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "cupmon/decoder/row.h"
#include "export/perfetto/proto_wire.h"

namespace cupmon::decoder::perfetto {

// The interned ids of one sequence: event names, kernel launch shapes (annotation string values)
// and the NVTX category and annotation names, each interned at its first use, into the InternedData
// message the caller has open in that packet. The fixed categories and annotation names are
// interned by the sequence's first packet (InternFixed). Single-threaded.
class SequenceInterning {
 public:
  // A new sequence: nothing interned.
  void Clear();
  static void InternFixed(proto_wire::Writer& w);

  // The event name iid of `r`'s name; *is_new when it is to be interned in this packet. Inline:
  // it runs once a row, on the export's hot path.
  uint64_t NameIid(const Row& r, bool* is_new) {
    if (r.name_id >= name_interned_.size()) name_interned_.resize(r.name_id + 1, 0);
    uint32_t& iid = name_interned_[r.name_id];
    *is_new = iid == 0;
    if (iid == 0) iid = ++name_iids_;
    return iid;
  }
  // The string iid of a kernel's launch shape; *fresh when it is new (InternLaunch in this
  // packet).
  uint64_t LaunchIid(const Row& r, bool* fresh) {
    const LaunchKey key{{r.launch.grid[0], r.launch.grid[1], r.launch.grid[2], r.launch.block[0],
                         r.launch.block[1], r.launch.block[2], r.launch.registers}};
    auto [it, inserted] = launches_.try_emplace(key, next_launch_iid_);
    if (inserted) {
      ++next_launch_iid_;
      *fresh = true;
    }
    return it->second;
  }
  static void InternLaunch(proto_wire::Writer& w, uint64_t iid, const Row& r);

  // NVTX's category and annotation names, interned once a recording has NVTX (so that other
  // traces keep their bytes); "nvtx_scope" apart, at the first label taken from another thread.
  bool nvtx_interned() const { return nvtx_interned_; }
  void InternNvtx(proto_wire::Writer& w);
  bool nvtx_scope_interned() const { return nvtx_scope_interned_; }
  void InternNvtxScope(proto_wire::Writer& w);

 private:
  // A kernel's launch shape: grid, block, registers.
  struct LaunchKey {
    uint32_t v[7];
    bool operator==(const LaunchKey& o) const { return std::equal(v, v + 7, o.v); }
  };
  struct LaunchHash {
    size_t operator()(const LaunchKey& k) const {
      uint64_t h = 0;
      for (uint32_t x : k.v) h = (h ^ x) * 0x100000001B3ull;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };

  // Builder name id -> its interned id (0: not interned yet). Interned ids count from 1 in the
  // order names first appear in the trace, not by the builder's ids (which also count the names
  // of rows a time range leaves out), so a ranged read writes the bytes of a whole one.
  std::vector<uint32_t> name_interned_;
  uint32_t name_iids_ = 0;
  std::unordered_map<LaunchKey, uint64_t, LaunchHash> launches_;  // -> string iid
  uint64_t next_launch_iid_ = 1;
  bool nvtx_interned_ = false;
  bool nvtx_scope_interned_ = false;
};

}  // namespace cupmon::decoder::perfetto

// StringTable: copies of the strings CUPTI's records point to (kernel, marker and domain names)
// and of annotation labels, each under an id, bounded in bytes; the writer drains what is new.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/base/error.h"
#include "cupmon/base/thread_annotations.h"
#include "cupmon/monitor/fault_injection.h"
#include "session_facts.h"

namespace cupmon {

// Ordering: a string is added before the buffer that uses it is queued for the writer, and the
// writer drains TakeNew() before it writes each batch of buffers, so every string entry reaches the
// files ahead of the first record that points to it (the decoder relies on that).
//
// Threading: InternBuffer on CUPTI's completion thread(s), InternLabel on application threads,
// TakeNew on the writer thread. mu_ guards everything below it; it is never held while calling
// CUPTI. Application threads take it only the first time a thread uses a label (a per-thread cache
// answers later pushes of the same label without the lock and without allocating).
class StringTable {
 public:
  struct Limits {
    size_t max_bytes = size_t{64} << 20;        // kernel/marker names, copies and map entries
    size_t max_string_bytes = size_t{1} << 20;  // longer names are cut (templates can be huge)
    size_t max_label_bytes = size_t{16} << 20;  // all annotation labels together
    size_t max_label_length = 4096;
  };

  explicit StringTable(Limits limits, FaultInjector faults = nullptr);
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  // CUPTI's completion thread: interns the name pointers of the kernel and marker records in the
  // buffer (the strings belong to CUPTI and are alive while the callback runs). May throw
  // std::bad_alloc; what was interned before the throw stays consistent.
  void InternBuffer(const SessionFacts& facts, const uint8_t* buffer, size_t valid);
  // Application thread: the id of `label` (the address of the table's copy, written as that
  // string entry's pointer: the decoder's convention for labels). Errors: too long, registry full.
  Expected<uint64_t> InternLabel(std::string_view label);
  // Writer thread: appends the entries added since the last call.
  void TakeNew(std::vector<pb::StringEntry>* out);

  uint64_t strings() const { return strings_.load(std::memory_order_relaxed); }
  uint64_t strings_refused() const { return refused_.load(std::memory_order_relaxed); }
  uint64_t labels_refused() const { return labels_refused_.load(std::memory_order_relaxed); }
  size_t bytes() const;

 private:
  void InternLocked(uint64_t pointer) CUPMON_REQUIRES(mu_);
  void Add(uint64_t pointer, std::string text) CUPMON_REQUIRES(mu_);

  const Limits limits_;
  const FaultInjector faults_;
  const uint64_t generation_;  // tells per-thread label caches of different tables apart

  mutable Mutex mu_;
  std::unordered_map<uint64_t, uint32_t> ids_ CUPMON_GUARDED_BY(mu_);  // pointer -> id
  uint64_t last_pointer_ CUPMON_GUARDED_BY(mu_) = 0;  // one-entry cache in front of the map
  uint32_t next_id_ CUPMON_GUARDED_BY(mu_) = 1;
  size_t bytes_ CUPMON_GUARDED_BY(mu_) = 0;
  size_t label_bytes_ CUPMON_GUARDED_BY(mu_) = 0;
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> labels_
      CUPMON_GUARDED_BY(mu_);
  std::vector<pb::StringEntry> pending_ CUPMON_GUARDED_BY(mu_);  // not yet taken by the writer

  std::atomic<uint64_t> strings_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> labels_refused_{0};
};

}  // namespace cupmon

// How the text exports (csv, jsonl, chrome-json) and the text traces name a row's type, its NVTX
// call and its recording, and the short kernel names they show. Private to the decoder
// (decoder/src).
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cupmon/decoder/kernel_names.h"
#include "cupmon/decoder/trace_builder.h"

namespace cupmon::decoder {

constexpr std::string_view RowTypeName(RowType t) {
  switch (t) {
    case RowType::kKernel: return "kernel";
    case RowType::kMemcpy: return "memcpy";
    case RowType::kMemset: return "memset";
    case RowType::kApi: return "api";
    case RowType::kSynchronization: return "synchronization";
    case RowType::kRange: return "range";
    case RowType::kMemory: return "memory";
  }
  return "?";
}

// The NVTX call a range row came from, as JSONL and the exports name it.
inline const char* RangeKindName(RangeKind k) {
  switch (k) {
    case RangeKind::kPushPop: return "push_pop";
    case RangeKind::kStartEnd: return "start_end";
    case RangeKind::kMark: return "mark";
  }
  return "?";
}

// A recording id as the reports show it: "0x" and lower-case hex digits.
inline std::string RecordingIdText(uint64_t id) {
  char buf[2 + 16] = {'0', 'x'};
  const auto r = std::to_chars(buf + 2, buf + sizeof buf, id, 16);
  return std::string(buf, r.ptr);
}

// A kernel row's short name (ShortKernelName of its demangled name, also under --mangled); other
// rows' names as they are. Computed once per name id of one recording: Clear() for the next (name
// ids are its builder's). Single-threaded.
class ShortKernelNames {
 public:
  // Inline for a name seen before (nearly every row), out of line the first time.
  [[gnu::always_inline]] std::string_view Of(const Row& r) {
    if (r.type != RowType::kKernel) return r.name;
    if (r.name_id < by_id_.size() && by_id_[r.name_id]) return *by_id_[r.name_id];
    return First(r);
  }
  void Clear() { by_id_.clear(); }

 private:
  [[gnu::noinline]] std::string_view First(const Row& r) {
    if (r.name_id >= by_id_.size()) by_id_.resize(r.name_id + 1);
    std::optional<std::string>& name = by_id_[r.name_id];
    const bool raw = !r.raw_name.empty() && r.name == r.raw_name;
    name = ShortKernelName(raw ? Demangle(std::string(r.raw_name)) : r.name);
    return *name;
  }
  std::vector<std::optional<std::string>> by_id_;
};

}  // namespace cupmon::decoder

// NvtxRanges: the trace builder's NVTX state, on its (reading) thread: STARTs waiting for their
// END, and per thread the ranges that label GPU rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cupmon/decoder/row.h"

namespace cupmon::decoder {

// One NVTX range or mark on its way to becoming a row (RowType::kRange).
struct NvtxRange {
  uint64_t start = 0, end = 0;
  uint32_t id = 0, name_id = 0, domain_id = 0, pid = 0, tid = 0, depth = 0;
  RangeKind kind = RangeKind::kPushPop;
  bool ended = true;
};

// CUPTI writes one MARKER record per NVTX event: a mark (INSTANTANEOUS), or the START and the END
// of a range, paired by the marker id (the END has no name). NvtxRows decodes the records and
// makes rows; this pairs STARTs with ENDs and remembers, per thread (pid, tid), the ranges whose
// START was read, in arrival order, so that a GPU row gets the innermost range open on its
// launching thread when the launch began (or, under NvtxScope::kProcess, one open on another
// thread of its process), even while that range is still open.
// Bounded: at most kMaxOpen STARTs wait (the oldest id is given up as unended beyond that); an
// ended range is forgotten `forget_after` records after its END, and each thread keeps at most
// kMaxPerThread. Times are CUPTI ns. Single-threaded.
class NvtxRanges {
 public:
  static constexpr size_t kMaxOpen = size_t{1} << 16;
  static constexpr size_t kMaxPerThread = 4096;

  explicit NvtxRanges(uint64_t forget_after) : forget_after_(forget_after) {}

  // A START read as the `records_read`-th record, `range` its fields (end and kind unused, depth
  // from Depth before this call); `placed`: its time can be placed (else it labels nothing).
  // Returns the range given up to make room, unended, if any. A second START with an id already
  // waiting is damage: the first one stands.
  std::optional<NvtxRange> Start(const NvtxRange& range, uint64_t records_read, bool placed);
  // An END read as the `records_read`-th record: the range it ends (a start/end range when the
  // END's thread is not the START's), or nothing when no START with its id waits. An END with no
  // time closes the range at its start for labels.
  std::optional<NvtxRange> End(uint32_t id, uint64_t ts, uint32_t pid, uint32_t tid,
                               uint64_t records_read);
  // How many of the thread's ranges hold time t (its depth for a range starting at t).
  uint32_t Depth(uint32_t pid, uint32_t tid, uint64_t t) const;
  // The name id of the innermost range holding time t on the thread, if any.
  std::optional<uint32_t> Innermost(uint32_t pid, uint32_t tid, uint64_t t) const;
  // A GPU row's label: the range that labels a launch made at time t on thread (pid, tid). The
  // thread's innermost range holding t; under NvtxScope::kProcess, when the thread has none, the
  // range holding t that started last among the other threads of process pid (ties: the larger
  // marker id, so the answer does not depend on hash order).
  struct Label {
    uint32_t name_id = 0;
    NvtxScope scope = NvtxScope::kThread;
  };
  std::optional<Label> LabelOf(uint32_t pid, uint32_t tid, uint64_t t, NvtxScope scope) const;
  // False while no START has been read with a time: no GPU row has a label.
  bool labels_any() const { return !by_thread_.empty(); }
  // Every range still waiting for its END, oldest id first, as unended; none waits afterwards.
  std::vector<NvtxRange> TakeUnended();

 private:
  struct ThreadRange {
    uint64_t start = 0, end = 0;  // end 0: still open
    uint64_t ended_at = 0;        // records read when its END was read
    uint32_t id = 0, name_id = 0;
  };
  static uint64_t ThreadKey(uint32_t pid, uint32_t tid) { return uint64_t{pid} << 32 | tid; }
  // The range of `list` holding t that started last (ties: the larger id), or `best`.
  static const ThreadRange* Latest(const std::deque<ThreadRange>& list, uint64_t t,
                                   const ThreadRange* best);

  uint64_t forget_after_;
  std::map<uint32_t, NvtxRange> open_;  // STARTs waiting for their END, by marker id
  std::unordered_map<uint64_t, std::deque<ThreadRange>> by_thread_;
};

}  // namespace cupmon::decoder

// ReorderStage: puts the trace builder's rows in start-time order before they reach the sink, on
// the builder's (reading) thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cupmon/base/growing_ring.h"
#include "cupmon/base/mapped_array.h"
#include "cupmon/decoder/row.h"
#include "cupmon/decoder/trace_counts.h"

namespace cupmon::decoder {

// Holds rows keyed by (start, arrival) and releases them to the sink in that order, as
// ReorderOptions says (row.h): once more than `rows` are held, or once the latest start
// seen is more than `ns` past the earliest held start (ns > 0). A row that arrives after a row
// starting later than it was released goes to the sink at once, counted in
// TraceCounts::out_of_order. Single-threaded.
class ReorderStage {
 public:
  // Rows go to `sink`; `counts` (the builder's) gets out_of_order and its note. Both outlive the
  // stage. options.rows > 0.
  ReorderStage(ReorderOptions options, RowSink* sink, TraceCounts* counts);
  ReorderStage(const ReorderStage&) = delete;
  ReorderStage& operator=(const ReorderStage&) = delete;

  // An empty row (as Row{}) in the storage for the next row to Add, to be filled in place: the
  // caller builds its row there, and Add then takes it without copying its 384 bytes. Valid until
  // the next call of Add, Flush or Claim; a claimed row that is never added (filtered out, or
  // handed to the sink straight) costs nothing.
  Row& Claim();
  // Takes a row with a valid time (Row::valid_time), and hands the sink those now due. `row` may
  // be the one Claim returned.
  void Add(const Row& row);
  // Hands the sink every row held, in order.
  void Flush();

 private:
  struct Key {
    uint64_t start;
    uint64_t seq;
    uint32_t slot;
  };
  // A run of held keys in (start, arrival) order.
  using KeyRun = GrowingRing<Key>;
  static constexpr size_t kRuns = 8;
  static_assert(kRuns < 32, "used_ has a bit per run, and Add forms the mask of all of them");

  // The slot the next row takes: the one freed last (still in the cache), else a new one, the
  // slots grown first when all are in use. Claim and Add agree on it, so a claimed row is added
  // where it was built.
  uint32_t ReserveSlot() {
    if (!free_slots_.empty()) return free_slots_.back();
    if (slots_used_ == slots_.size()) Grow();
    return static_cast<uint32_t>(slots_used_);
  }
  void Grow();  // doubles the slots; only past 2^20 rows (--reorder-rows above that)
  void ReleaseOne();
  // The held key released next: the smallest of the runs' heads and the heap's top; `*run` is its
  // run, or kRuns for the heap. Only while keys are held.
  const Key& Front(size_t* run) const;

  ReorderOptions options_;
  RowSink* sink_;
  TraceCounts* counts_;
  // Rows held, in slots [0, slots_used_) of a mapping of whole huge pages (a malloc'd block would
  // begin and end on 4 KiB pages, each faulted in on its own); doubled when full.
  UninitArray<Row> slots_;
  size_t slots_used_ = 0;
  std::vector<uint32_t> free_slots_;
  // Keys of rows that extend one of the sorted runs sit in that run's FIFO ring, keys of the others
  // in a min-heap.
  std::vector<Key> heap_;
  std::array<KeyRun, kRuns> runs_;
  // The start of each run's last key, while it has keys: Add compares every run's tail for each
  // row, from one array instead of through each run's ring.
  std::array<uint64_t, kRuns> tails_{};
  // Each run's first key, while it has keys (a copy of runs_[r].front()), and which runs have
  // keys (bit r): Front compares the heads from one array, and only those of runs with keys.
  std::array<Key, kRuns> heads_{};
  uint32_t used_ = 0;
  size_t held_ = 0;  // keys in heap_ and runs_
  // Where Front() found the held key released next (a run, or kRuns for the heap), while
  // front_valid_: kept across the calls of one release and the arrivals that do not come before
  // it (most rows), so that the eight runs are scanned once a release instead of three times.
  mutable bool front_valid_ = false;
  mutable size_t front_run_ = 0;
  uint64_t seq_ = 0, max_start_ = 0, last_released_ = 0;
  bool released_any_ = false;
};

}  // namespace cupmon::decoder

// ReorderStage: rows in start-time order (reorder_stage.h).
#include "reorder_stage.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>

namespace cupmon::decoder {
namespace {

bool Later(uint64_t a_start, uint64_t a_seq, uint64_t b_start, uint64_t b_seq) {
  return a_start != b_start ? a_start > b_start : a_seq > b_seq;
}

// Whole cache lines per slot: the slots' storage is page-aligned, so each row is six lines and
// no line holds parts of two rows.
static_assert(sizeof(Row) % 64 == 0, "keep Row a whole number of cache lines (row.h)");

// `row = Row{}` in 16-byte blocks copied from an empty row. g++ 12 compiles the assignment to
// `rep stosq`, whose start-up cost outweighs clearing a row this small; g++ folds these blocks
// into 24 stores. They are
// written one statement each: a loop would be turned back into the same string instruction.
using RowBlock = uint64_t __attribute__((vector_size(16), may_alias, aligned(alignof(Row))));
static_assert(std::is_trivially_copyable_v<Row> && sizeof(Row) % sizeof(RowBlock) == 0);
const Row kEmptyRow{};

template <size_t... I>
void CopyRowBlocks(RowBlock* to, const RowBlock* from, std::index_sequence<I...>) {
  ((to[I] = from[I]), ...);
}

// A held row was stored up to ReorderOptions::rows rows ago (25 MiB of rows by default) and has
// left the cache by its release, so the sink would wait on its first read. Rows are fetched a
// few releases ahead along their run; fetching the next row alone comes too late. The distance,
// 3, was chosen by measurement (the commit that set it has the figures).
constexpr size_t kPrefetchAhead = 3;

void PrefetchRow(const Row& row) {
  const char* bytes = reinterpret_cast<const char*>(&row);
  for (size_t at = 0; at < sizeof(Row); at += 64) __builtin_prefetch(bytes + at);
}

void ResetRow(Row& row) {
  CopyRowBlocks(reinterpret_cast<RowBlock*>(&row), reinterpret_cast<const RowBlock*>(&kEmptyRow),
                std::make_index_sequence<sizeof(Row) / sizeof(RowBlock)>());
}

}  // namespace

ReorderStage::ReorderStage(ReorderOptions options, RowSink* sink, TraceCounts* counts)
    : options_(options),
      sink_(sink),
      counts_(counts),
      // The stage holds at most rows + 1 rows: mapping the storage at once saves growing (copying
      // and faulting in) the 384-byte rows several times over. The mapping is virtual until used
      // (a short recording touches a few of its pages).
      slots_(std::min<size_t>(options.rows + 1, size_t{1} << 20)) {}

void ReorderStage::Add(const Row& row) {
  if (released_any_ && row.start < last_released_) {
    // Later than the reorder bound allows: emitted anyway, out of place, and counted.
    if (counts_->out_of_order++ == 0)
      counts_->Note("a row starting at CUPTI time " + std::to_string(row.start) +
                    " arrived after rows starting later were written; such rows are emitted out "
                    "of order (raise --reorder-rows)");
    sink_->OnRow(row);
    return;
  }
  // A claimed row sits in this slot already: Claim reserved it (and grew the slots if need be).
  const uint32_t slot = ReserveSlot();
  if (free_slots_.empty()) ++slots_used_;
  else free_slots_.pop_back();
  if (&slots_[slot] != &row) slots_[slot] = row;
  const Key key{row.start, seq_++, slot};
  if (front_valid_) {
    // A key that comes before the released-next one is at the head of its run or the heap's top
    // once placed: found again by the next Front().
    size_t run;
    const Key& front = Front(&run);
    if (Later(front.start, front.seq, key.start, key.seq)) front_valid_ = false;
  }
  // Rows that extend a sorted run go to that run's FIFO (O(1)); only rows that fit no run pay for
  // the heap. CUPTI delivers each buffer's records mostly in start order, but buffers of kernels
  // and of API calls interleave, so with one run the rows of every other buffer would go through
  // the heap. A row joins the
  // run whose last start is the latest at or before its own (an empty run when none fits), so
  // each interleaved stream keeps its own run. Release takes the smallest head of runs and heap.
  size_t fit = kRuns;
  uint64_t fit_start = 0;
  for (uint32_t used = used_; used; used &= used - 1) {  // the runs with keys, in order
    const auto r = static_cast<size_t>(__builtin_ctz(used));
    const uint64_t tail = tails_[r];
    if (tail <= row.start && (fit == kRuns || tail > fit_start)) {
      fit = r;
      fit_start = tail;
    }
  }
  if (fit == kRuns && used_ != (1u << kRuns) - 1) {
    fit = static_cast<size_t>(__builtin_ctz(~used_));  // the first empty run
    heads_[fit] = key;
    used_ |= 1u << fit;
  }
  if (fit < kRuns) {
    KeyRun& q = runs_[fit];
    tails_[fit] = key.start;
    q.push_back(key);
  } else {
    heap_.push_back(key);
    std::push_heap(heap_.begin(), heap_.end(), [](const Key& a, const Key& b) {
      return Later(a.start, a.seq, b.start, b.seq);
    });
  }
  ++held_;
  if (row.start > max_start_) max_start_ = row.start;
  while (held_ > options_.rows) ReleaseOne();
  if (options_.ns) {
    size_t run;
    while (held_ && max_start_ - Front(&run).start > options_.ns) ReleaseOne();
  }
}

Row& ReorderStage::Claim() {
  Row& row = slots_[ReserveSlot()];
  ResetRow(row);  // the slot holds a released (or unused) row
  return row;
}

void ReorderStage::Grow() {
  UninitArray<Row> grown(std::max<size_t>(2 * slots_.size(), 1024));
  for (size_t i = 0; i < slots_used_; ++i) grown[i] = slots_[i];
  slots_ = std::move(grown);
}

void ReorderStage::Flush() {
  while (held_) ReleaseOne();
}

const ReorderStage::Key& ReorderStage::Front(size_t* run) const {
  if (front_valid_) {
    *run = front_run_;
    return front_run_ < kRuns ? heads_[front_run_] : heap_.front();
  }
  const Key* best = heap_.empty() ? nullptr : &heap_.front();
  *run = kRuns;
  for (uint32_t used = used_; used; used &= used - 1) {
    const auto r = static_cast<size_t>(__builtin_ctz(used));
    const Key& k = heads_[r];
    if (!best || Later(best->start, best->seq, k.start, k.seq)) {
      best = &k;
      *run = r;
    }
  }
  front_valid_ = true;
  front_run_ = *run;
  return *best;
}

void ReorderStage::ReleaseOne() {
  size_t run;
  const Key k = Front(&run);
  if (run < kRuns) {
    KeyRun& q = runs_[run];
    q.pop_front();
    if (q.empty()) used_ &= ~(1u << run);
    else heads_[run] = q.front();
    // The run's rows come out in its order whenever it holds the front: the one kPrefetchAhead
    // keys on is fetched now, so that it is in the cache by the time it is released.
    if (q.size() > kPrefetchAhead) PrefetchRow(slots_[q[kPrefetchAhead].slot]);
  } else {
    std::pop_heap(heap_.begin(), heap_.end(), [](const Key& a, const Key& b) {
      return Later(a.start, a.seq, b.start, b.seq);
    });
    heap_.pop_back();
  }
  --held_;
  front_valid_ = false;
  released_any_ = true;
  last_released_ = k.start;
  free_slots_.push_back(k.slot);
  // The row released next, wherever it is held, is fetched too: while the sink formats this one.
  if (held_) PrefetchRow(slots_[Front(&run).slot]);
  sink_->OnRow(slots_[k.slot]);
}

}  // namespace cupmon::decoder

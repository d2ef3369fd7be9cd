// StepGpuTime: `diff`'s GPU time of a recording's rows in its steps, with the steps known before
// the rows or found in the same read.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "cupmon/base/check.h"
#include "cupmon/decoder/steps.h"

namespace cupmon::decoder {

// The GPU time of a recording's rows that lie in its steps, by type: a row lies in the step whose
// start is the latest at or before its own, and in none when it starts before the first step or
// after the last one's end. With the steps known before the rows (Placed), each step's time;
// else (Deferred, the steps found in the same read) only the time in one run of consecutive steps
// (those a side's range keeps), which is every row's time but that of the rows before the run's
// first step and after its last one: at least the kEdgeRows rows with the earliest and with the
// latest starts are kept to take those out (Edge).
class StepGpuTime {
 public:
  static constexpr size_t kTypes = 3;  // kernel, memcpy, memset (RowType's first three)
  using Times = std::array<uint64_t, kTypes>;
  static constexpr size_t kEdgeRows = size_t{1} << 14;

  static StepGpuTime Placed(const std::vector<Step>& steps) { return StepGpuTime(&steps, 0); }
  // `edge_rows`: how many rows each edge keeps (kEdgeRows; tests take fewer).
  static StepGpuTime Deferred(size_t edge_rows = kEdgeRows) {
    return StepGpuTime(nullptr, edge_rows);
  }

  void Add(uint64_t start, uint64_t duration, size_t type) {
    if (steps_) return Place(start, duration, type);
    total_[type] += duration;
    head_.Add({start, duration, type});
    tail_.Add({start, duration, type});
  }
  // Deferred: takes the steps found and which of them count (`in_range`, one flag per step);
  // false when the kept rows cannot tell the time in those steps (they are not one run of
  // consecutive steps, or more rows than an edge keeps start before the run or after it), and
  // then the rows must be read again with the steps known.
  bool Settle(const std::vector<Step>& steps, const std::vector<bool>& in_range) {
    CUPMON_CHECK(in_range.size() == steps.size());
    if (steps_) return true;
    settled_for_ = in_range;
    settled_ = {};
    const auto first = std::find(in_range.begin(), in_range.end(), true);
    if (first == in_range.end()) return settled_in_ = true;
    const auto i = static_cast<size_t>(first - in_range.begin());
    const auto j =
        static_cast<size_t>(std::find(first, in_range.end(), false) - in_range.begin()) - 1;
    if (std::find(in_range.begin() + static_cast<ptrdiff_t>(j + 1), in_range.end(), true) !=
        in_range.end())
      return false;
    // The run takes the rows with lo <= start <= hi.
    if (j + 1 < steps.size() && steps[j + 1].start == 0) return false;
    const uint64_t lo = steps[i].start;
    const uint64_t hi = j + 1 < steps.size() ? steps[j + 1].start - 1 : steps[j].end;
    if (!head_.HoldsAllBefore(lo) || !tail_.HoldsAllAfter(hi)) return false;
    settled_ = total_;
    for (const Row& e : head_.rows())
      if (e.start < lo) settled_[e.type] -= e.duration;
    for (const Row& e : tail_.rows())
      if (e.start > hi) settled_[e.type] -= e.duration;
    return settled_in_ = true;
  }
  // The time in the steps `in_range` marks (one flag per step). Deferred: the steps it was settled
  // with.
  Times In(const std::vector<bool>& in_range) const {
    if (settled_in_) {
      CUPMON_CHECK(in_range == settled_for_);
      return settled_;
    }
    Times sum{};
    for (size_t i = 0; i < in_range.size() && i < in_step_.size(); ++i)
      if (in_range[i])
        for (size_t t = 0; t < kTypes; ++t) sum[t] += in_step_[i][t];
    return sum;
  }

 private:
  struct Row {
    uint64_t start, duration;
    size_t type;
  };
  // The rows with the `keep` earliest starts (or latest, `latest`), and maybe up to `keep` more:
  // rows are appended, and once 2 * keep are held the `keep` first by start are kept
  // (nth_element), which bounds the rest (`bound_`); a row beyond the bound is not kept. Rows
  // come nearly in start order, so the latest edge takes most rows: each costs O(1) amortised.
  class Edge {
   public:
    Edge(size_t keep, bool latest) : keep_(keep), latest_(latest) {}
    void Add(const Row& r) {
      if (bounded_ && (latest_ ? r.start < bound_ : r.start > bound_)) return;
      rows_.push_back(r);
      if (rows_.size() < 2 * keep_) return;
      const auto order = [this](const Row& x, const Row& y) {
        return latest_ ? x.start > y.start : x.start < y.start;
      };
      std::nth_element(rows_.begin(), rows_.begin() + static_cast<ptrdiff_t>(keep_ - 1),
                       rows_.end(), order);
      bound_ = rows_[keep_ - 1].start;
      rows_.resize(keep_);
      bounded_ = true;
    }
    // Earliest edge: every row that starts before `t` is held (a row not held starts at or after
    // the bound).
    bool HoldsAllBefore(uint64_t t) const { return !bounded_ || bound_ >= t; }
    // Latest edge: every row that starts after `t` is held.
    bool HoldsAllAfter(uint64_t t) const { return !bounded_ || bound_ <= t; }
    const std::vector<Row>& rows() const { return rows_; }

   private:
    size_t keep_;
    bool latest_;
    bool bounded_ = false;
    uint64_t bound_ = 0;
    std::vector<Row> rows_;
  };

  StepGpuTime(const std::vector<Step>* steps, size_t edge_rows)
      : steps_(steps),
        in_step_(steps ? steps->size() : 0),
        head_(std::max<size_t>(edge_rows, 1), false),
        tail_(std::max<size_t>(edge_rows, 1), true) {}
  void Place(uint64_t t, uint64_t duration, size_t type) {
    const std::vector<Step>& steps = *steps_;
    if (steps.empty() || t < steps.front().start || t > steps.back().end) return;
    // Rows come nearly in start order: try the step of the previous row and the next one first.
    size_t i = cursor_;
    const auto fits = [&](size_t k) {
      return steps[k].start <= t && (k + 1 == steps.size() || t < steps[k + 1].start);
    };
    if (!fits(i)) {
      if (i + 1 < steps.size() && fits(i + 1)) {
        ++i;
      } else {
        auto it = std::upper_bound(steps.begin(), steps.end(), t,
                                   [](uint64_t v, const Step& s) { return v < s.start; });
        i = static_cast<size_t>(it - steps.begin()) - 1;
      }
    }
    cursor_ = i;
    in_step_[i][type] += duration;
  }

  const std::vector<Step>* steps_;
  std::vector<Times> in_step_;
  size_t cursor_ = 0;
  Times total_{}, settled_{};
  Edge head_, tail_;
  bool settled_in_ = false;  // Deferred, settled: settled_ is the time in settled_for_'s steps
  std::vector<bool> settled_for_;
};

}  // namespace cupmon::decoder

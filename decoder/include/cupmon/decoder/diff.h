// `cupmon-decode diff A B`: compares two recordings, two ranks, two windows or two time ranges
// per kernel name and memcpy kind (calls, total, mean, p50, p99), with step times side by side
// and a regression gate. The report itself is decoder/src/commands/diff_report.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cupmon::decoder {

// Durations in bounded memory: exact below 128 ns, else in buckets of 128 per power of two, so
// that a quantile read back (a bucket's midpoint, clamped to the exact min and max) is within
// kRelativeError of the true nearest-rank value. Buckets are counted over the span of buckets
// seen only (a name's durations rarely span more than a few powers of two).
class DurationHistogram {
 public:
  static constexpr double kRelativeError = 1.0 / 256;

  void Add(uint64_t ns);
  void Merge(const DurationHistogram& other);
  // Nearest rank: the smallest duration d with at least ceil(q * count) durations <= d;
  // 0 when empty. q in [0, 1].
  uint64_t Quantile(double q) const;
  uint64_t count() const { return count_; }
  uint64_t min() const { return min_; }
  uint64_t max() const { return max_; }
  // Bucket of `ns` and the smallest duration in bucket `b` (exposed for the tests).
  static uint32_t BucketOf(uint64_t ns);
  static uint64_t BucketFloor(uint32_t b);

 private:
  void Grow(uint32_t b);
  std::vector<uint64_t> counts_;  // counts_[i]: bucket lo_ + i
  uint32_t lo_ = 0;
  uint64_t count_ = 0, min_ = UINT64_MAX, max_ = 0;
};

enum class DiffFormat { kTable, kCsv, kJsonl };

// One side's own selection. Set fields replace the common --window/--from/--to for that side
// (a from_* replaces both from fields, a to_* both to fields).
struct DiffSideRange {
  std::optional<uint32_t> window;
  std::optional<int64_t> from_rel, from_wall, to_rel, to_wall;
  std::optional<uint32_t> rank;  // only the recording with this rank number (see ListRanks)
};

struct DiffOptions {
  DiffFormat format = DiffFormat::kTable;
  DiffSideRange a, b;
  // The outcome is kRegression when the compared GPU time (see RunDiffReport) grows by more than
  // this many percent from A to B.
  std::optional<double> fail_above;
  // Table rows (names) shown; csv and jsonl list every name unless DiffReportOptions::limit is set.
  uint64_t table_rows = 40;
};

}  // namespace cupmon::decoder

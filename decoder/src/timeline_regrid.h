// TimelineRegrid: the buckets of a bucket size chosen after the read. One TimelineBuilder sweeps
// the activities into fine buckets (a power of ten in ns), and each candidate size, a multiple of
// it, sums the fine rows as they are emitted. A candidate's rows and counts are then those a
// TimelineBuilder of that size would have emitted from the same activities, as long as the fine
// sweep lost nothing that a coarser one might have kept: no activity came late for its fine
// bucket, none was cut out of either busy union, the fine builder did not stop at its row limit,
// and the candidate's rows stay within the limit asked for. Take says when that does not hold, and
// the caller then reads again with one builder of the size it needs.
//
// Why the sums are exact: buckets are aligned to their size in unix time, so a candidate's bucket
// is a whole number of fine ones; busy time per bucket is the union of the intervals clipped to
// it, which adds up over the fine buckets inside; counts and bytes add up; memory in use at a
// bucket's end is its last fine bucket's, and its peak the largest of theirs. A fine builder's
// sweep position never lies before a coarser one's, so what the fine sweep kept whole, the coarse
// one did too.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "cupmon/decoder/timeline.h"

namespace cupmon::decoder {

class TimelineRegrid {
 public:
  // `fine`: the fine builder's options (bucket_ns a power of ten); `sizes`: the candidates, each
  // a multiple of fine.bucket_ns (others are ignored).
  TimelineRegrid(const TimelineOptions& fine, const std::vector<uint64_t>& sizes);

  void Add(const TimelineActivity& a) { fine_.Add(a); }
  // Call once, at the end.
  void Finish();

  struct Result {
    std::map<uint32_t, std::vector<TimelineBucket>> buckets;  // by device, in time order
    TimelineCounts counts;
  };
  // The rows and counts of a builder of `size` with `max_rows`, or nullopt when they may differ
  // from what these fine rows add up to (see above), or `size` was not a candidate.
  std::optional<Result> Take(uint64_t size, uint64_t max_rows);

 private:
  struct Candidate {
    uint64_t size = 0;
    std::map<uint32_t, std::vector<TimelineBucket>> buckets;
    uint64_t rows = 0;
  };
  void OnFine(const TimelineBucket& b);

  std::vector<Candidate> candidates_;
  TimelineBuilder fine_;
};

}  // namespace cupmon::decoder

// Tests for ReorderStage (decoder/src/reorder_stage.cc): rows built in place with Claim, rows
// claimed and never added, and rows past the bound.
#include "reorder_stage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace cupmon::decoder {
namespace {

struct Starts : RowSink {
  std::vector<uint64_t> starts;
  void OnRow(const Row& row) override { starts.push_back(row.start); }
};

Row At(uint64_t start) {
  Row r;
  r.valid_time = true;
  r.start = r.end = start;
  return r;
}

// Rows built where Claim says, rows copied in, and claimed rows never added (a filtered row)
// come out in start order; a claim that was not added is handed out again.
TEST(ReorderStageTest, ClaimedRowsAreTakenInPlaceAndUnaddedClaimsCostNothing) {
  Starts sink;
  TraceCounts counts;
  ReorderStage stage(ReorderOptions{3, 0}, &sink, &counts);
  Row& a = stage.Claim();
  a = At(30);
  stage.Add(a);
  Row& b = stage.Claim();
  EXPECT_NE(&a, &b);
  b = At(99);  // filtered out: never added
  Row& c = stage.Claim();
  EXPECT_EQ(&b, &c) << "the unused claim is the next slot again";
  EXPECT_EQ(c.start, 0u) << "a claim is an empty row, whatever its slot held";
  EXPECT_TRUE(c.nvtx.ended);
  c = At(10);
  stage.Add(c);
  stage.Add(At(20));  // a copy
  EXPECT_TRUE(sink.starts.empty());
  Row& d = stage.Claim();
  d = At(5);  // past the bound of 3 held: the earliest goes out
  stage.Add(d);
  ASSERT_EQ(sink.starts.size(), 1u);
  EXPECT_EQ(sink.starts[0], 5u);
  stage.Flush();
  EXPECT_EQ(counts.out_of_order, 0u);
  EXPECT_EQ(sink.starts, (std::vector<uint64_t>{5, 10, 20, 30}));
}

// Many rows through a small bound, each built in a claim, every third claim dropped: every added
// row comes out once, in order, and none that was dropped.
TEST(ReorderStageTest, ThousandsOfClaimsKeepOrderAndDropNothingAdded) {
  Starts sink;
  TraceCounts counts;
  ReorderStage stage(ReorderOptions{64, 0}, &sink, &counts);
  std::vector<uint64_t> added;
  for (uint64_t i = 0; i < 5000; ++i) {
    Row& r = stage.Claim();
    r = At(1000000 + (i * 7919) % 40 + i * 50);  // jitter of up to 40 rows' spacing
    if (i % 3 == 2) continue;
    added.push_back(r.start);
    stage.Add(r);
  }
  stage.Flush();
  std::sort(added.begin(), added.end());
  EXPECT_EQ(counts.out_of_order, 0u);
  EXPECT_EQ(sink.starts, added);
}

}  // namespace
}  // namespace cupmon::decoder

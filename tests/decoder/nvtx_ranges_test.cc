// Tests for NvtxRanges (decoder/src/nvtx_ranges.cc): START/END pairing, the labels and depths of
// a thread's ranges, the process-wide labels, and the bounds that keep its memory flat.
#include "nvtx_ranges.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

namespace cupmon::decoder {
namespace {

NvtxRange Range(uint32_t id, uint64_t start, uint32_t tid, uint32_t name_id, uint32_t depth = 0) {
  NvtxRange r;
  r.id = id;
  r.start = r.end = start;
  r.pid = 1;
  r.tid = tid;
  r.name_id = name_id;
  r.depth = depth;
  return r;
}

TEST(NvtxRangesTest, AnEndPairsWithItsStartAndSaysWhichKindOfRangeItWas) {
  NvtxRanges ranges(1000);
  EXPECT_FALSE(ranges.labels_any());
  EXPECT_FALSE(ranges.Start(Range(5, 100, 10, 50), 1, true));
  EXPECT_FALSE(ranges.Start(Range(6, 110, 10, 60), 2, true));
  EXPECT_FALSE(ranges.Start(Range(6, 999, 10, 61), 3, true));  // a held id: the first stands
  EXPECT_TRUE(ranges.labels_any());
  EXPECT_FALSE(ranges.End(7, 200, 1, 10, 4)) << "no START with id 7";

  const std::optional<NvtxRange> same = ranges.End(6, 150, 1, 10, 5);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->start, 110u);
  EXPECT_EQ(same->end, 150u);
  EXPECT_EQ(same->name_id, 60u);
  EXPECT_TRUE(same->ended);
  EXPECT_EQ(same->kind, RangeKind::kPushPop);
  EXPECT_FALSE(ranges.End(6, 160, 1, 10, 6)) << "ended once";

  const std::optional<NvtxRange> other = ranges.End(5, 300, 1, 11, 7);  // another thread ends it
  ASSERT_TRUE(other);
  EXPECT_EQ(other->kind, RangeKind::kStartEnd);
  EXPECT_EQ(other->tid, 10u) << "the row stays on the thread that started it";
  EXPECT_TRUE(ranges.TakeUnended().empty());
}

TEST(NvtxRangesTest, LabelsAreTheInnermostRangeHoldingTheTimeOnThatThread) {
  NvtxRanges ranges(1000);
  ranges.Start(Range(1, 100, 10, 7), 1, true);
  EXPECT_EQ(ranges.Depth(1, 10, 120), 1u);
  ranges.Start(Range(2, 120, 10, 8, 1), 2, true);
  ranges.Start(Range(3, 130, 11, 9), 3, true);  // another thread
  EXPECT_EQ(ranges.Innermost(1, 10, 125), 8u);
  EXPECT_EQ(ranges.Innermost(1, 10, 110), 7u);
  EXPECT_EQ(ranges.Innermost(1, 10, 99), std::nullopt);
  EXPECT_EQ(ranges.Innermost(1, 11, 125), std::nullopt);
  EXPECT_EQ(ranges.Innermost(1, 11, 135), 9u);
  EXPECT_EQ(ranges.Depth(1, 10, 125), 2u);
  ranges.End(2, 140, 1, 10, 4);
  EXPECT_EQ(ranges.Innermost(1, 10, 140), 8u) << "an END's own time is still inside";
  EXPECT_EQ(ranges.Innermost(1, 10, 141), 7u);
  EXPECT_EQ(ranges.Depth(1, 10, 141), 1u);
  ranges.End(1, 0, 1, 10, 5);  // an END with no time closes the range at its start
  EXPECT_EQ(ranges.Innermost(1, 10, 110), std::nullopt);
  EXPECT_EQ(ranges.Innermost(1, 10, 100), 7u);
  // A START whose time cannot be placed pairs, but labels nothing.
  ranges.Start(Range(4, 0, 12, 3), 6, false);
  EXPECT_EQ(ranges.Innermost(1, 12, 0), std::nullopt);
  EXPECT_TRUE(ranges.End(4, 50, 1, 12, 7));
}

TEST(NvtxRangesTest, TheOldestOpenIdIsGivenUpBeyondTheBoundAndTheRestStayUnended) {
  NvtxRanges ranges(1000);
  for (uint32_t id = 1; id <= NvtxRanges::kMaxOpen; ++id)
    ASSERT_FALSE(ranges.Start(Range(id, 1000 + id, 10, id), id, true));
  const std::optional<NvtxRange> given_up =
      ranges.Start(Range(NvtxRanges::kMaxOpen + 1, 5000000, 10, 0), NvtxRanges::kMaxOpen + 1, true);
  ASSERT_TRUE(given_up);
  EXPECT_EQ(given_up->id, 1u);
  EXPECT_FALSE(given_up->ended);
  EXPECT_EQ(given_up->start, 1001u);
  EXPECT_FALSE(ranges.End(1, 6000000, 1, 10, 1)) << "no longer waiting";
  const auto unended = ranges.TakeUnended();
  ASSERT_EQ(unended.size(), NvtxRanges::kMaxOpen);
  EXPECT_EQ(unended.front().id, 2u);
  EXPECT_EQ(unended.back().id, NvtxRanges::kMaxOpen + 1);
  for (const NvtxRange& r : unended) ASSERT_FALSE(r.ended);
  EXPECT_TRUE(ranges.TakeUnended().empty());
}

TEST(NvtxRangesTest, AThreadForgetsLongEndedRangesAndKeepsAtMostItsBound) {
  NvtxRanges ranges(/*forget_after=*/100);
  ranges.Start(Range(1, 100, 10, 7), 1, true);
  ranges.End(1, 200, 1, 10, 2);
  ranges.Start(Range(2, 300, 10, 8), 50, true);  // 48 records after the END: remembered
  EXPECT_EQ(ranges.Innermost(1, 10, 150), 7u);
  ranges.Start(Range(3, 400, 10, 9), 103, true);  // 101 after: forgotten
  EXPECT_EQ(ranges.Innermost(1, 10, 150), std::nullopt);
  EXPECT_EQ(ranges.Innermost(1, 10, 450), 9u);

  // Open ranges without end on one thread: the list stays at its bound, the depth with it.
  NvtxRanges deep(100);
  for (uint32_t id = 1; id <= NvtxRanges::kMaxPerThread + 500; ++id)
    deep.Start(Range(id, id, 10, id), id, true);
  EXPECT_EQ(deep.Depth(1, 10, 1000000), NvtxRanges::kMaxPerThread);
  EXPECT_EQ(deep.Innermost(1, 10, 1000000), NvtxRanges::kMaxPerThread + 500);
}

// Thread 10 is the main thread, 11 another thread of process 1 (autograd's backward thread),
// 20 a thread of process 2.
TEST(NvtxRangesTest, ALaunchOnAThreadWithoutRangesTakesTheProcessRangeOnlyUnderProcessScope) {
  NvtxRanges ranges(1000);
  ranges.Start(Range(1, 100, 10, 7), 1, true);  // main pushes "bwd" at 100
  const auto thread = ranges.LabelOf(1, 11, 150, NvtxScope::kThread);
  EXPECT_EQ(thread, std::nullopt) << "Nsight Systems' projection: thread 11 has no range";
  const auto process = ranges.LabelOf(1, 11, 150, NvtxScope::kProcess);
  ASSERT_TRUE(process);
  EXPECT_EQ(process->name_id, 7u);
  EXPECT_EQ(process->scope, NvtxScope::kProcess);
  EXPECT_EQ(ranges.LabelOf(2, 11, 150, NvtxScope::kProcess), std::nullopt) << "another process";
  EXPECT_EQ(ranges.LabelOf(1, 11, 99, NvtxScope::kProcess), std::nullopt) << "before the push";
  // The launching thread's own range wins over the process's, under either scope.
  ranges.Start(Range(2, 120, 11, 9), 2, true);
  for (NvtxScope scope : {NvtxScope::kThread, NvtxScope::kProcess}) {
    const auto own = ranges.LabelOf(1, 11, 130, scope);
    ASSERT_TRUE(own);
    EXPECT_EQ(own->name_id, 9u);
    EXPECT_EQ(own->scope, NvtxScope::kThread);
  }
  ranges.End(2, 140, 1, 11, 3);
  EXPECT_EQ(ranges.LabelOf(1, 11, 141, NvtxScope::kProcess)->scope, NvtxScope::kProcess);
  // Closed before the launch: no label; the END's own time is still inside, as on a thread.
  ranges.End(1, 200, 1, 10, 4);
  EXPECT_EQ(ranges.LabelOf(1, 11, 200, NvtxScope::kProcess)->name_id, 7u);
  EXPECT_EQ(ranges.LabelOf(1, 11, 201, NvtxScope::kProcess), std::nullopt);
}

TEST(NvtxRangesTest, NestedRangesOnAnotherThreadGiveTheInnermost) {
  NvtxRanges ranges(1000);
  ranges.Start(Range(1, 100, 10, 7), 1, true);     // "step 3"
  ranges.Start(Range(2, 110, 10, 8, 1), 2, true);  // "bwd" inside it
  EXPECT_EQ(ranges.LabelOf(1, 11, 115, NvtxScope::kProcess)->name_id, 8u);
  ranges.End(2, 120, 1, 10, 3);
  EXPECT_EQ(ranges.LabelOf(1, 11, 125, NvtxScope::kProcess)->name_id, 7u) << "bwd popped";
}

TEST(NvtxRangesTest, SeveralThreadsWithOpenRangesGiveTheOneOpenedLast) {
  NvtxRanges ranges(1000);
  ranges.Start(Range(1, 100, 10, 7), 1, true);  // main: "step"
  ranges.Start(Range(2, 130, 12, 8), 2, true);  // a loader thread: "load", opened later
  ranges.Start(Range(3, 110, 13, 9), 3, true);  // a third thread, opened in between
  EXPECT_EQ(ranges.LabelOf(1, 11, 140, NvtxScope::kProcess)->name_id, 8u);
  EXPECT_EQ(ranges.LabelOf(1, 11, 120, NvtxScope::kProcess)->name_id, 9u) << "load not open yet";
  ranges.End(2, 150, 1, 12, 4);
  EXPECT_EQ(ranges.LabelOf(1, 11, 160, NvtxScope::kProcess)->name_id, 9u);
  // Two opened at the same time: the larger marker id, whatever the order threads are kept in.
  ranges.Start(Range(5, 170, 14, 20), 5, true);
  ranges.Start(Range(4, 170, 15, 21), 6, true);
  EXPECT_EQ(ranges.LabelOf(1, 11, 175, NvtxScope::kProcess)->name_id, 20u);
}

}  // namespace
}  // namespace cupmon::decoder

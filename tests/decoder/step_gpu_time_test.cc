// StepGpuTime (decoder/src/commands/step_gpu_time.h): `diff`'s GPU time in steps found in the same
// read as the rows, against the time of the rows placed one by one in steps known before them.
#include "commands/step_gpu_time.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace cupmon::decoder {
namespace {

struct Row {
  uint64_t start, duration;
  size_t type;
};

// Steps back to back from `first`, each 1000-3000 ns, their ends inside the next one's start.
std::vector<Step> MakeSteps(std::mt19937_64& rng, uint64_t first, size_t n) {
  std::vector<Step> steps(n);
  uint64_t t = first;
  for (Step& s : steps) {
    s.start = t;
    t += 1000 + rng() % 2000;
    s.end = t - 1 - rng() % 100;
  }
  return steps;
}

// Rows around the steps (some before the first, some after the last's end), in shuffled order.
std::vector<Row> MakeRows(std::mt19937_64& rng, uint64_t from, uint64_t to, size_t n) {
  std::vector<Row> rows(n);
  for (Row& r : rows)
    r = {from + rng() % (to - from), rng() % 5000, static_cast<size_t>(rng() % 3)};
  return rows;
}

StepGpuTime::Times PlacedTime(const std::vector<Step>& steps, const std::vector<Row>& rows,
                              const std::vector<bool>& in_range) {
  StepGpuTime placed = StepGpuTime::Placed(steps);
  for (const Row& r : rows) placed.Add(r.start, r.duration, r.type);
  return placed.In(in_range);
}

StepGpuTime::Times PlacedTime(const std::vector<Step>& steps, const std::vector<Row>& rows) {
  return PlacedTime(steps, rows, std::vector<bool>(steps.size(), true));
}

TEST(StepGpuTimeTest, FoundInTheSameReadEqualsPlacedRowByRow) {
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed);
    const std::vector<Step> steps = MakeSteps(rng, 1'000'000, 200);
    // About a tenth of the rows before the first step and a tenth after the last one's end.
    const uint64_t span = steps.back().end - steps.front().start;
    const std::vector<Row> rows =
        MakeRows(rng, steps.front().start - span / 8, steps.back().end + span / 8, 5000);
    StepGpuTime deferred = StepGpuTime::Deferred(1000);
    for (const Row& r : rows) deferred.Add(r.start, r.duration, r.type);
    const std::vector<bool> all(steps.size(), true);
    ASSERT_TRUE(deferred.Settle(steps, all));
    const StepGpuTime::Times want = PlacedTime(steps, rows);
    EXPECT_EQ(deferred.In(all), want);
    EXPECT_GT(want[0], 0u);
  }
}

TEST(StepGpuTimeTest, MoreRowsOutsideThanAnEdgeKeepsAskForASecondRead) {
  std::mt19937_64 rng(7);
  const std::vector<Step> steps = MakeSteps(rng, 1'000'000, 50);
  // 600 rows before the first step: an edge of 200 rows (which holds at most 399) cannot hold them
  // all; one of 700 can.
  std::vector<Row> rows = MakeRows(rng, steps.front().start, steps.back().end, 2000);
  for (size_t i = 0; i < 600; ++i) rows.push_back({1000 + i, 10, 0});
  std::shuffle(rows.begin(), rows.end(), rng);
  StepGpuTime small = StepGpuTime::Deferred(200);
  StepGpuTime enough = StepGpuTime::Deferred(700);
  for (const Row& r : rows)
    small.Add(r.start, r.duration, r.type), enough.Add(r.start, r.duration, r.type);
  const std::vector<bool> all(steps.size(), true);
  EXPECT_FALSE(small.Settle(steps, all));
  ASSERT_TRUE(enough.Settle(steps, all));
  EXPECT_EQ(enough.In(all), PlacedTime(steps, rows));
  // The same after the last step's end.
  std::vector<Row> late = MakeRows(rng, steps.front().start, steps.back().end, 2000);
  for (size_t i = 0; i < 600; ++i) late.push_back({steps.back().end + 1 + i, 10, 1});
  StepGpuTime tail = StepGpuTime::Deferred(200);
  for (const Row& r : late) tail.Add(r.start, r.duration, r.type);
  EXPECT_FALSE(tail.Settle(steps, all));
}

// A side with a time range or window keeps a run of consecutive steps, and its rows are those of
// the range: the rows a read of the range gives, placed in the run's steps one by one.
TEST(StepGpuTimeTest, ARunOfStepsFoundInTheSameReadEqualsPlacedRowByRow) {
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed);
    const std::vector<Step> steps = MakeSteps(rng, 1'000'000, 100);
    const size_t first = rng() % steps.size(), last = first + rng() % (steps.size() - first);
    std::vector<bool> run(steps.size());
    for (size_t i = first; i <= last; ++i) run[i] = true;
    // The range: from inside the step before the run (or before the first step) to inside the
    // one after it (or past the last one's end).
    const uint64_t from = first ? steps[first - 1].start + 500 : steps.front().start - 3000;
    const uint64_t to =
        last + 1 < steps.size() ? steps[last + 1].start + 500 : steps.back().end + 3000;
    const std::vector<Row> rows = MakeRows(rng, from, to, 3000);
    StepGpuTime deferred = StepGpuTime::Deferred(1000);
    for (const Row& r : rows) deferred.Add(r.start, r.duration, r.type);
    ASSERT_TRUE(deferred.Settle(steps, run));
    EXPECT_EQ(deferred.In(run), PlacedTime(steps, rows, run));
  }
}

TEST(StepGpuTimeTest, StepsThatAreNotOneRunAskForASecondRead) {
  std::mt19937_64 rng(5);
  const std::vector<Step> steps = MakeSteps(rng, 1'000'000, 4);
  const std::vector<Row> rows = MakeRows(rng, steps.front().start, steps.back().end, 100);
  StepGpuTime gap = StepGpuTime::Deferred(1000), none = StepGpuTime::Deferred(1000);
  for (const Row& r : rows)
    gap.Add(r.start, r.duration, r.type), none.Add(r.start, r.duration, r.type);
  EXPECT_FALSE(gap.Settle(steps, {true, false, true, false}));
  ASSERT_TRUE(none.Settle(steps, {false, false, false, false}));
  EXPECT_EQ(none.In({false, false, false, false}), (StepGpuTime::Times{0, 0, 0}));
}

TEST(StepGpuTimeTest, PlacedStepsAddOnlyThoseInRangeAndNoStepsHaveNoTime) {
  std::mt19937_64 rng(11);
  const std::vector<Step> steps = MakeSteps(rng, 1'000'000, 3);
  StepGpuTime placed = StepGpuTime::Placed(steps);
  placed.Add(steps[0].start, 100, 0);
  placed.Add(steps[1].start + 1, 20, 1);
  placed.Add(steps[2].start, 3, 2);
  placed.Add(steps[0].start - 1, 1000, 0);  // before the first step
  placed.Add(steps[2].end + 1, 1000, 0);    // after the last one's end
  EXPECT_EQ(placed.In({true, false, true}), (StepGpuTime::Times{100, 0, 3}));
  EXPECT_EQ(placed.In({true, true, true}), (StepGpuTime::Times{100, 20, 3}));
  StepGpuTime none = StepGpuTime::Deferred();
  none.Add(5, 5, 0);
  EXPECT_TRUE(none.Settle({}, {}));
  EXPECT_EQ(none.In({}), (StepGpuTime::Times{0, 0, 0}));
}

}  // namespace
}  // namespace cupmon::decoder

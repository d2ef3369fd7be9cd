// Tests for GrowingRing (base/include/cupmon/base/growing_ring.h): FIFO order across wrap-around and growth,
// and the capacity PushSlot asks for.
#include "cupmon/base/growing_ring.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>

namespace cupmon {
namespace {

struct Item {
  uint64_t value;
  uint32_t pad[5];
};

// Pushes and pops in an uneven rhythm, so that the ring wraps and then grows while wrapped, and
// compares every front and every element from the front with a std::deque.
TEST(GrowingRingTest, KeepsFifoOrderAcrossWrapAndGrowth) {
  GrowingRing<Item> ring;
  std::deque<uint64_t> model;
  uint64_t next = 0;
  for (int round = 0; round < 40; ++round) {
    const int pushes = 700 + 37 * round, pops = 500 + 29 * round;
    for (int i = 0; i < pushes; ++i) {
      ring.push_back(Item{next, {}});
      model.push_back(next++);
    }
    ASSERT_EQ(ring.size(), model.size());
    for (size_t i = 0; i < model.size(); i += 97) ASSERT_EQ(ring[i].value, model[i]) << i;
    for (int i = 0; i < pops && !model.empty(); ++i) {
      ASSERT_EQ(ring.front().value, model.front());
      ring.pop_front();
      model.pop_front();
    }
  }
  while (!model.empty()) {
    ASSERT_EQ(ring.front().value, model.front());
    ring.pop_front();
    model.pop_front();
  }
  EXPECT_TRUE(ring.empty());
  EXPECT_GT(next, 50000u);  // grown well past the first 1,024 slots
}

// PushSlot's minimum capacity: the first growth makes room for it at once, so that many more
// pushes never move what is held (the join ring asks for twice its horizon).
TEST(GrowingRingTest, PushSlotGrowsOnceToTheCapacityAskedFor) {
  GrowingRing<uint64_t> ring;
  ring.PushSlot(5000) = 1;
  const uint64_t* first = &ring.front();
  for (uint64_t i = 2; i <= 8192; ++i) ring.PushSlot(5000) = i;
  EXPECT_EQ(&ring.front(), first);  // 8,192 (the power of two >= 5,000): no second growth
  ring.PushSlot(5000) = 8193;
  EXPECT_NE(&ring.front(), first);
  for (uint64_t i = 1; i <= 8193; ++i) {
    ASSERT_EQ(ring.front(), i);
    ring.pop_front();
  }
}

TEST(GrowingRingTest, ClearEmptiesAndTheRingIsUsableAgain) {
  GrowingRing<uint64_t> ring;
  for (uint64_t i = 0; i < 3000; ++i) ring.push_back(i);
  ring.pop_front();
  ring.clear();
  EXPECT_TRUE(ring.empty());
  ring.push_back(42);
  EXPECT_EQ(ring.size(), 1u);
  EXPECT_EQ(ring.front(), 42u);
}

}  // namespace
}  // namespace cupmon

// Tests for CorrelationTable (decoder/src/correlation_table.cc): bounded tracking in creation
// order, ids that share an index slot, and the hand-over of an emptied table between builders.
#include "correlation_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cupmon::decoder {
namespace {

// Tracks 1,000 ids `stride` apart from `first` in a table of kLive entries, and checks that it
// remembers exactly the last kLive of them, with what was stored in each.
constexpr size_t kLive = 100;
void ExpectHoldsExactlyTheLastIdsTracked(CorrelationTable& table, uint32_t first, uint32_t stride) {
  ASSERT_EQ(table.live(), 0u);
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < 1000; ++i) {
    const uint32_t id = first + i * stride;
    ids.push_back(id);
    CorrelationEntry* e = table.Track(id);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->gpu_count, 0u) << "a new entry starts empty";
    e->gpu_count = i + 1;
    EXPECT_EQ(table.Track(id), e) << "tracking a live id again finds its entry";
    ASSERT_LE(table.live(), kLive);
  }
  EXPECT_EQ(table.live(), kLive);
  for (size_t i = 0; i < ids.size(); ++i) {
    const CorrelationEntry* e = table.Find(ids[i]);
    if (i < ids.size() - kLive) {
      EXPECT_EQ(e, nullptr) << "stride " << stride << ": id " << ids[i] << " was forgotten";
    } else {
      ASSERT_NE(e, nullptr) << "stride " << stride << ": id " << ids[i] << " is live";
      EXPECT_EQ(e->gpu_count, i + 1);
    }
  }
  table.Retire(10);
  EXPECT_EQ(table.live(), 10u);
  EXPECT_EQ(table.Find(ids[ids.size() - 11]), nullptr);
  ASSERT_NE(table.Find(ids.back()), nullptr);
  EXPECT_EQ(table.Find(ids.back())->gpu_count, ids.size());
}

// The table remembers exactly the last max_live ids tracked, whatever their spacing: ids one
// index apart (the common case), ids that all share one index slot (the overflow map), and a mix.
TEST(CorrelationTableTest, HoldsExactlyTheLastIdsTrackedAndForgetsTheOldest) {
  // The index has 1,024 slots for 101 entries: ids 1,024 apart share a slot.
  for (uint32_t stride : {1u, 1024u, 1023u, 513u, 3u << 20}) {
    CorrelationTable table(kLive);
    ExpectHoldsExactlyTheLastIdsTracked(table, 7, stride);
  }
}

// A recycled table, emptied entry by entry, holds exactly the same ids as a new one would through
// several hand-overs: the next builder's ids are the same ids, ids sharing their index slots (some
// through the overflow map), and ids at other positions of the ring.
TEST(CorrelationTableTest, ARecycledTableHoldsExactlyWhatANewOneWould) {
  auto table = CorrelationTable::Make(kLive);
  CorrelationTable* first = table.get();
  uint32_t start = 7;
  for (uint32_t stride : {1u, 1u, 1024u, 3u, 1023u, 1u, 3u << 20, 513u, 1u}) {
    SCOPED_TRACE("stride " + std::to_string(stride) + " from " + std::to_string(start));
    ExpectHoldsExactlyTheLastIdsTracked(*table, start, stride);
    CorrelationTable::Recycle(std::move(table));
    table = CorrelationTable::Make(kLive);
    ASSERT_EQ(table.get(), first);
    EXPECT_EQ(table->live(), 0u);
    start = start % 5 == 0 ? 7 : start + 1;  // the same ids again, or ids one slot along
  }
}

// A finished builder's table goes to the next builder of the same bound, emptied: nothing it held
// is found, and a new entry for an id it held starts empty.
TEST(CorrelationTableTest, ARecycledTableIsHandedOnEmptyToTheSameBound) {
  auto table = CorrelationTable::Make(64);
  CorrelationTable* first = table.get();
  for (uint32_t id = 1; id <= 500; id += 3) table->Track(id)->has_api = true;
  // One index slot (1,024 of them): all but the first go to the overflow map.
  for (uint32_t id = 1; id <= 60000; id += 8192) table->Track(id)->gpu_count = 9;
  CorrelationTable::Recycle(std::move(table));

  auto other = CorrelationTable::Make(65);  // another bound: a new table
  EXPECT_NE(other.get(), first);
  auto again = CorrelationTable::Make(64);
  EXPECT_EQ(again.get(), first);  // the one kept
  EXPECT_EQ(again->live(), 0u);
  for (uint32_t id = 1; id <= 60000; ++id) ASSERT_EQ(again->Find(id), nullptr) << id;
  CorrelationEntry* e = again->Track(8193);
  EXPECT_FALSE(e->has_api);
  EXPECT_EQ(e->gpu_count, 0u);
  EXPECT_NE(CorrelationTable::Make(64).get(), first);  // it was taken: only one is kept
}

}  // namespace
}  // namespace cupmon::decoder

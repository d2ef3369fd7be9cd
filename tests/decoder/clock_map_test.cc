// ClockMap: linear mapping between calibration samples, nearest offset outside, bad samples counted.
#include "cupmon/decoder/clock_map.h"

#include <gtest/gtest.h>

namespace cupmon::decoder {
namespace {

pb::CalibrationSample S(uint64_t cupti, int64_t wall) {
  pb::CalibrationSample s;
  s.set_cupti_ns(cupti);
  s.set_realtime_ns(wall);
  return s;
}

TEST(ClockMapTest, NoSamplesPassesThrough) {
  ClockMap m;
  EXPECT_FALSE(m.calibrated());
  EXPECT_EQ(m.ToWall(12345), 12345);
}

TEST(ClockMapTest, LinearBetweenAndOffsetOutside) {
  ClockMap m;
  m.Add(S(1000, 11000));
  m.Add(S(2000, 12100));  // wall ran 10% faster (e.g. an NTP slew)
  EXPECT_EQ(m.ToWall(1000), 11000);
  EXPECT_EQ(m.ToWall(1500), 11550);
  EXPECT_EQ(m.ToWall(500), 10500);   // offset of the first sample
  EXPECT_EQ(m.ToWall(3000), 13100);  // offset of the last sample
}

TEST(ClockMapTest, NonMonotonicSamplesAreDroppedAndCounted) {
  ClockMap m;
  m.Add(S(2000, 12000));
  m.Add(S(1000, 99999));  // goes back
  m.Add(S(2000, 12000));  // repeats
  m.Add(S(0, 5));         // zero
  EXPECT_EQ(m.samples(), 1u);
  EXPECT_EQ(m.non_monotonic(), 3u);
  EXPECT_EQ(m.ToWall(2500), 12500);
}

TEST(ClockMapTest, ValidSpanRejectsZeroAndReversed) {
  EXPECT_TRUE(ValidSpan(1, 1));
  EXPECT_FALSE(ValidSpan(0, 0));
  EXPECT_FALSE(ValidSpan(5, 0));
  EXPECT_FALSE(ValidSpan(6, 5));
}

}  // namespace
}  // namespace cupmon::decoder

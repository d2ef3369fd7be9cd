// ClockMap: linear mapping between calibration samples, nearest offset outside, bad samples counted,
// one map per CUPTI clock domain.
#include "cupmon/decoder/clock_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace cupmon::decoder {
namespace {

__extension__ typedef __int128 Int128;  // the reference interpolation, formed exactly

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
  m.Add(S(2000, 13000));  // same CUPTI time, another wall time
  m.Add(S(0, 5));         // zero
  EXPECT_EQ(m.samples(), 1u);
  EXPECT_EQ(m.non_monotonic(), 3u);
  m.Add(S(2000, 12000));  // the sample again (files restate the last samples): dropped, not counted
  EXPECT_EQ(m.samples(), 1u);
  EXPECT_EQ(m.non_monotonic(), 3u);
  EXPECT_EQ(m.ToWall(2500), 12500);
}

// A realtime-like CUPTI clock (CUPTI's default) and, after another client's timestamp callback, a
// monotonic-like one (offsets apart by decades); then back to the first domain.
constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kWall0 = 1'796'000'000 * kSec;  // 2026
constexpr int64_t kMono0 = 240 * kSec;            // uptime

TEST(ClockMapTest, TwoDomainsEachMappedWithItsOwnSamples) {
  ClockMap m;
  // Realtime domain: CUPTI == wall + 3 us.
  m.Add(S(kWall0 + 3000, kWall0));
  m.Add(S(kWall0 + 60 * kSec + 3000, kWall0 + 60 * kSec));
  // Monotonic domain from wall + 100 s: CUPTI == wall - kWall0 + kMono0.
  m.Add(S(kMono0 + 100 * kSec, kWall0 + 100 * kSec));
  m.Add(S(kMono0 + 160 * kSec, kWall0 + 160 * kSec));
  EXPECT_EQ(m.samples(), 4u);
  EXPECT_EQ(m.non_monotonic(), 0u);  // the switch is not a non-monotonic sample
  EXPECT_EQ(m.domain_changes(), 1u);
  EXPECT_EQ(m.domains(), 2u);
  // Records of both domains, inside and outside each domain's samples.
  EXPECT_EQ(m.ToWall(kWall0 + 30 * kSec + 3000), kWall0 + 30 * kSec);
  EXPECT_EQ(m.ToWall(kWall0 + 70 * kSec + 3000), kWall0 + 70 * kSec);  // after its last sample
  EXPECT_EQ(m.ToWall(kMono0 + 130 * kSec), kWall0 + 130 * kSec);
  EXPECT_EQ(m.ToWall(kMono0 + 99 * kSec), kWall0 + 99 * kSec);  // before the domain's first sample
  EXPECT_EQ(m.ToWall(kMono0 + 200 * kSec), kWall0 + 200 * kSec);
  EXPECT_EQ(m.WallDuration(kMono0 + 130 * kSec, kMono0 + 130 * kSec + 5000), 5000);

  // Back to the realtime domain: continues the first segment, counted as a change.
  m.Add(S(kWall0 + 200 * kSec + 3000, kWall0 + 200 * kSec));
  EXPECT_EQ(m.domain_changes(), 2u);
  EXPECT_EQ(m.domains(), 2u);
  EXPECT_EQ(m.ToWall(kWall0 + 150 * kSec + 3000), kWall0 + 150 * kSec);
}

TEST(ClockMapTest, NonMonotonicInsideADomainIsStillDropped) {
  ClockMap m;
  m.Add(S(kWall0, kWall0));
  m.Add(S(kMono0, kWall0 + kSec));                  // new domain
  m.Add(S(kMono0 - 1000, kWall0 + kSec - 1000));    // goes back a little inside it: dropped
  m.Add(S(kMono0 + 2 * kSec, kWall0 + 3 * kSec));
  EXPECT_EQ(m.samples(), 3u);
  EXPECT_EQ(m.non_monotonic(), 1u);
  EXPECT_EQ(m.domain_changes(), 1u);
  EXPECT_EQ(m.ToWall(kMono0 + kSec), kWall0 + 2 * kSec);
}

// Kineto's callback on x86-64 returns TSC ticks (not nanoseconds): 2.5 ticks per ns here.
TEST(ClockMapTest, TickDomainUsesItsOwnRate) {
  ClockMap m;
  m.Add(S(kWall0, kWall0));
  const uint64_t t0 = 600'000'000'000;  // ticks at the switch
  m.Add(S(t0, kWall0 + 10 * kSec));
  m.Add(S(t0 + 5 * kSec / 2, kWall0 + 11 * kSec));  // 1 s later: 2.5e9 ticks
  m.Add(S(t0 + 50 * kSec / 2, kWall0 + 20 * kSec));  // 10 s later
  EXPECT_EQ(m.domains(), 2u);
  EXPECT_EQ(m.domain_changes(), 1u);
  EXPECT_EQ(m.non_monotonic(), 0u);
  EXPECT_EQ(m.ToWall(t0 + 5 * kSec), kWall0 + 12 * kSec);             // between samples
  EXPECT_EQ(m.ToWall(t0 + 75 * kSec / 2), kWall0 + 25 * kSec);        // after the last, at its rate
  EXPECT_EQ(m.WallDuration(t0 + 5 * kSec, t0 + 5 * kSec + 2500), 1000);  // 2500 ticks = 1 us
  EXPECT_EQ(m.ToWall(kWall0 + 5 * kSec), kWall0 + 5 * kSec);          // the realtime domain
}

TEST(ClockMapTest, SingleDomainMapsAsBefore) {
  // NTP-like slew and a step inside one nanosecond domain stay one segment.
  ClockMap m;
  m.Add(S(kWall0, kWall0 + 10));
  m.Add(S(kWall0 + 60 * kSec, kWall0 + 60 * kSec + 30'000'010));  // wall slewed 30 ms
  m.Add(S(kWall0 + 120 * kSec, kWall0 + 120 * kSec - 500'000'000));  // stepped back 0.5 s
  EXPECT_EQ(m.domains(), 1u);
  EXPECT_EQ(m.domain_changes(), 0u);
  EXPECT_EQ(m.ToWall(kWall0 + 30 * kSec), kWall0 + 30 * kSec + 15'000'010);
  EXPECT_EQ(m.ToWall(kWall0 - kSec), kWall0 - kSec + 10);
  EXPECT_EQ(m.ToWall(kWall0 + 130 * kSec), kWall0 + 130 * kSec - 500'000'000);
  EXPECT_EQ(m.WallDuration(kWall0 + 30 * kSec, kWall0 + 30 * kSec + 777), 777);
}

TEST(ClockMapTest, ValidSpanRejectsZeroAndReversed) {
  EXPECT_TRUE(ValidSpan(1, 1));
  EXPECT_FALSE(ValidSpan(0, 0));
  EXPECT_FALSE(ValidSpan(5, 0));
  EXPECT_FALSE(ValidSpan(6, 5));
}


// Between two samples the map takes a 64-bit product and division when drift * since fits, and
// 128 bits when it does not: both must give the exact interpolation, truncated toward zero, on
// either side of the point where the product stops fitting (here about 10.2 s into the span).
TEST(ClockMapTest, InterpolationIsExactWhetherOrNotTheProductFits64Bits) {
  for (const int64_t drift : {int64_t{900'000'000}, int64_t{-900'000'000}, int64_t{7}}) {
    constexpr uint64_t kA = 5'000'000'000, kSpan = 100'000'000'000;  // samples 100 s apart
    constexpr int64_t kWall = 1'796'000'000'000'000'000;
    ClockMap m;
    m.Add(S(kA, kWall));
    m.Add(S(kA + kSpan, kWall + static_cast<int64_t>(kSpan) + drift));
    ASSERT_EQ(m.domains(), 1u);
    const uint64_t fits_until = static_cast<uint64_t>(INT64_MAX / (drift < 0 ? -drift : drift));
    std::vector<uint64_t> sinces = {0, 1, 999'999'999, kSpan - 1, kSpan / 2};
    for (uint64_t d : {uint64_t{0}, uint64_t{1}, uint64_t{2}})
      if (fits_until + d < kSpan && fits_until >= d) {
        sinces.push_back(fits_until - d);
        sinces.push_back(fits_until + d);
      }
    for (const uint64_t since : sinces) {
      const Int128 want =
          static_cast<Int128>(kWall) + since + static_cast<Int128>(drift) * since / Int128{kSpan};
      EXPECT_EQ(m.ToWall(kA + since), static_cast<int64_t>(want))
          << "drift " << drift << " since " << since;
    }
  }
}

// Random spans (from 1 ns to 19 h), drifts of either sign and timestamps anywhere in the pair
// must give the exact truncated quotient, also next to a multiple of the span, where a division
// done any other way than by `/` (a reciprocal, a float) would be off by one.
TEST(ClockMapTest, InterpolationIsExactForAnySpanAndDrift) {
  std::mt19937_64 rng(16);
  constexpr int64_t kWall = 1'796'000'000'000'000'000;
  size_t checked = 0;
  for (int pair = 0; pair < 400; ++pair) {
    const uint64_t span = pair < 8 ? uint64_t(pair + 1) : 1 + rng() % (uint64_t{1} << (8 + pair % 39));
    const int64_t drift = static_cast<int64_t>(rng() % 2'000'001) - 1'000'000;
    constexpr uint64_t kA = 7'000'000'000;
    ClockMap m;
    m.Add(S(kA, kWall));
    m.Add(S(kA + span, kWall + static_cast<int64_t>(span) + drift));
    ASSERT_EQ(m.domains(), 1u);
    std::vector<uint64_t> sinces = {0, span - 1, span / 2};
    for (int i = 0; i < 20; ++i) sinces.push_back(rng() % span);
    if (drift != 0) {
      // since = k * span / |drift| and its neighbours: the quotient crosses an integer there.
      const uint64_t step = span / static_cast<uint64_t>(drift < 0 ? -drift : drift);
      for (uint64_t k = 1; k < 4 && step; ++k)
        for (const uint64_t d : {uint64_t{0}, uint64_t{1}})
          if (k * step + d < span && k * step >= d) sinces.push_back(k * step - d);
    }
    for (const uint64_t since : sinces) {
      const Int128 want =
          static_cast<Int128>(kWall) + since + static_cast<Int128>(drift) * since / Int128{span};
      ASSERT_EQ(m.ToWall(kA + since), static_cast<int64_t>(want))
          << "span " << span << " drift " << drift << " since " << since;
      ++checked;
    }
  }
  EXPECT_GT(checked, 9000u);
}

// MapIn remembers the pair of samples the last timestamp fell between: timestamps in order, in
// reverse, at random and on the samples themselves must all map with the pair that holds them.
// Each pair has its own drift, so a timestamp mapped with a neighbouring pair comes out different.
TEST(ClockMapTest, EveryTimestampIsMappedWithThePairThatHoldsItInAnyOrder) {
  struct Ref {
    uint64_t cupti;
    int64_t wall;
  };
  std::vector<Ref> refs;
  ClockMap m;
  uint64_t cupti = 1'000'000'000;
  int64_t wall = 1'796'000'000'000'000'000;
  for (int i = 0; i < 40; ++i) {
    refs.push_back({cupti, wall});
    m.Add(S(cupti, wall));
    const uint64_t span = 50'000'000 + 1'000'003 * static_cast<uint64_t>(i);
    cupti += span;
    wall += static_cast<int64_t>(span) + (i % 2 ? 1 : -1) * (2'000 + 97 * i);  // drift per pair
  }
  ASSERT_EQ(m.domains(), 1u);
  ASSERT_EQ(m.samples(), refs.size());
  const auto want = [&](uint64_t t) -> int64_t {
    const Ref &first = refs.front(), &last = refs.back();
    if (t <= first.cupti) return first.wall - static_cast<int64_t>(first.cupti - t);
    if (t >= last.cupti) return last.wall + static_cast<int64_t>(t - last.cupti);
    size_t i = 0;
    while (refs[i + 1].cupti <= t) ++i;
    const Int128 since = t - refs[i].cupti, span = refs[i + 1].cupti - refs[i].cupti;
    const Int128 drift = static_cast<Int128>(refs[i + 1].wall) - refs[i].wall - span;
    return static_cast<int64_t>(refs[i].wall + since + drift * since / span);
  };
  std::vector<uint64_t> ts;
  for (size_t i = 0; i < refs.size(); ++i) {
    for (const int64_t d : {int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{20'000'000}})
      ts.push_back(static_cast<uint64_t>(static_cast<int64_t>(refs[i].cupti) + d));
  }
  ts.push_back(5);                      // before every sample
  ts.push_back(refs.back().cupti * 2);  // after every sample
  const auto check = [&](const char* order) {
    for (const uint64_t t : ts) ASSERT_EQ(m.ToWall(t), want(t)) << order << ", t " << t;
  };
  check("in order");
  std::reverse(ts.begin(), ts.end());
  check("reversed");
  std::mt19937_64 rng(7);
  std::shuffle(ts.begin(), ts.end(), rng);
  check("shuffled");
}

// A pair whose 64-bit interpolation could overflow (a drift times a span past 2^63, a wall time
// near the end of int64) is never mapped by the 64-bit fast path: each timestamp, mapped twice
// (the second time after its pair was remembered), equals the exact 128-bit interpolation.
TEST(ClockMapTest, PairsThatCouldOverflowIn64BitsMapExactly) {
  struct Case {
    uint64_t c0;
    int64_t w0;
    uint64_t c1;
    int64_t w1;
  };
  const uint64_t big = uint64_t{1} << 40;
  const Case cases[] = {
      {1'000'000'000, 1'796'000'000'000'000'000, 1'000'000'000 + big,
       1'796'000'000'000'000'000 + static_cast<int64_t>(big) + (int64_t{1} << 30)},  // drift * span > 2^63
      {1'000'000'000, 1'796'000'000'000'000'000, 1'000'000'000 + big,
       1'796'000'000'000'000'000 + static_cast<int64_t>(big) - (int64_t{1} << 30)},  // negative
      {1, INT64_MAX - 1000, 2001, INT64_MAX - 10},  // the bound on the result passes INT64_MAX
      {1, INT64_MIN + 1000, 2001, INT64_MIN + 3500},  // and INT64_MIN
      {1'000, 5'000, 1'000 + 3'000'000'000ull, 5'000 + 3'000'000'000ll + 7},  // an ordinary pair
  };
  for (const Case& c : cases) {
    ClockMap m;
    m.Add(S(c.c0, c.w0));
    m.Add(S(c.c1, c.w1));
    ASSERT_EQ(m.samples(), 2u);
    const Int128 span = c.c1 - c.c0;
    const Int128 drift = static_cast<Int128>(c.w1) - c.w0 - span;
    for (const uint64_t since : {uint64_t{0}, uint64_t{1}, uint64_t{999}, uint64_t{1000},
                                 static_cast<uint64_t>(span / 3), static_cast<uint64_t>(span - 1)}) {
      const uint64_t t = c.c0 + since;
      const Int128 exact = static_cast<Int128>(c.w0) + since + drift * since / span;
      ASSERT_GE(exact, INT64_MIN);
      ASSERT_LE(exact, INT64_MAX);
      for (int twice = 0; twice < 2; ++twice)
        ASSERT_EQ(m.ToWall(t), static_cast<int64_t>(exact)) << "t " << t << ", call " << twice;
    }
  }
}

// Calibration read from a damaged or hostile file: extreme values must clamp, never overflow (the
// ASan+UBSan build turns a signed overflow here into a failure).
TEST(ClockMapTest, AbsurdCalibrationClampsInsteadOfOverflowing) {
  ClockMap m;
  m.Add(S(1, INT64_MIN + 1));
  m.Add(S(UINT64_MAX - 1, INT64_MAX - 1));  // one domain or two: either way, no overflow
  for (uint64_t t : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 63, UINT64_MAX - 1, UINT64_MAX}) {
    const int64_t w = m.ToWall(t);
    EXPECT_GE(w, INT64_MIN);
    EXPECT_LE(w, INT64_MAX);
  }
  EXPECT_EQ(m.ToWall(1), INT64_MIN + 1);                 // a sample maps to itself
  EXPECT_EQ(m.ToWall(UINT64_MAX - 1), INT64_MAX - 1);
  EXPECT_EQ(m.WallDuration(0, UINT64_MAX), INT64_MAX);  // clamped, not wrapped negative

  ClockMap far;  // a wall clock far past what CUPTI time can reach: extrapolation clamps
  far.Add(S(1'000, INT64_MAX - 10));
  EXPECT_EQ(far.ToWall(1'000 + 5), INT64_MAX - 5);
  EXPECT_EQ(far.ToWall(UINT64_MAX), INT64_MAX);
}


// A week of samples from a CUPTI clock 50 ppm fast, one every 5 s (CUPMON_STATS_MS=5000: more
// samples than the map holds at once): every time in the week, its last hour included, maps within
// 1 us. Linear interpolation of a clock of constant rate is exact, so the only way to be off is to
// stop following the samples (a map that dropped those beyond its bound extrapolated the last
// hours with one offset: 50 ppm of a day is 4.3 ms).
TEST(ClockMapTest, AWeekOfSamplesFromAClock50PpmFastMapsWithin1us) {
  constexpr int64_t kWeekWall0 = 1'800'000'000'000'000'000;
  constexpr int64_t kWeek = int64_t{7} * 24 * 3600 * 1'000'000'000;
  constexpr int64_t kEvery = 5'000'000'000;
  auto cupti_at = [](int64_t wall) {
    const Int128 since = static_cast<Int128>(wall) - kWeekWall0;
    return static_cast<uint64_t>(wall + static_cast<int64_t>(since * 50'000 / 1'000'000'000));
  };
  ClockMap m;
  for (int64_t w = kWeekWall0; w <= kWeekWall0 + kWeek; w += kEvery) m.Add(S(cupti_at(w), w));
  EXPECT_EQ(m.domains(), 1u);
  EXPECT_EQ(m.samples(), static_cast<uint64_t>(kWeek / kEvery + 1));
  std::mt19937_64 rng(50);
  int64_t worst = 0;
  for (int i = 0; i < 200'000; ++i) {
    // Half of them in the last day.
    const int64_t wall = kWeekWall0 + static_cast<int64_t>(rng() % static_cast<uint64_t>(kWeek)) /
                                          (i % 2 ? 1 : 7) + (i % 2 ? 0 : kWeek - kWeek / 7);
    const int64_t error = m.ToWall(cupti_at(wall)) - wall;
    worst = std::max(worst, error < 0 ? -error : error);
  }
  EXPECT_LE(worst, 1000) << "ns";
}

}  // namespace
}  // namespace cupmon::decoder

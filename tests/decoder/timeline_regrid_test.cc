// TimelineRegrid (decoder/src/timeline_regrid.h): the buckets of sizes chosen after the read,
// summed from fine ones, against a TimelineBuilder of each size fed the same activities; and the
// cases where the sums may differ from that builder's, which Take refuses.
#include "timeline_regrid.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "cupmon/decoder/timeline.h"

namespace cupmon::decoder {
namespace {

constexpr int64_t kUs = 1000;
// A wall-clock origin that is not aligned to any of the sizes below.
constexpr int64_t kT0 = 1'772'366'400'000'000'000 + 123'457;

std::map<uint32_t, std::vector<TimelineBucket>> Direct(const std::vector<TimelineActivity>& in,
                                                       uint64_t size, size_t reorder_rows,
                                                       uint64_t max_rows, TimelineCounts* counts) {
  std::map<uint32_t, std::vector<TimelineBucket>> out;
  TimelineBuilder b(TimelineOptions{size, max_rows, reorder_rows},
                    [&](const TimelineBucket& r) { out[r.device].push_back(r); });
  for (const TimelineActivity& a : in) b.Add(a);
  b.Finish();
  *counts = b.counts();
  return out;
}

void ExpectSameRows(const std::vector<TimelineBucket>& want, const std::vector<TimelineBucket>& got,
                    uint64_t size, uint32_t device) {
  ASSERT_EQ(got.size(), want.size()) << "size " << size << " device " << device;
  for (size_t i = 0; i < want.size(); ++i) {
    const TimelineBucket& w = want[i];
    const TimelineBucket& g = got[i];
    SCOPED_TRACE(testing::Message() << "size " << size << " device " << device << " row " << i);
    EXPECT_EQ(g.start, w.start);
    EXPECT_EQ(g.length, w.length);
    EXPECT_EQ(g.device, w.device);
    EXPECT_EQ(g.busy_ns, w.busy_ns);
    EXPECT_EQ(g.kernel_busy_ns, w.kernel_busy_ns);
    EXPECT_EQ(g.kernels, w.kernels);
    EXPECT_EQ(g.memcpys, w.memcpys);
    EXPECT_EQ(g.memsets, w.memsets);
    EXPECT_EQ(g.memcpy_bytes, w.memcpy_bytes);
    EXPECT_EQ(g.h2d_bytes, w.h2d_bytes);
    EXPECT_EQ(g.d2h_bytes, w.d2h_bytes);
    EXPECT_EQ(g.d2d_bytes, w.d2d_bytes);
    EXPECT_EQ(g.memory_in_use, w.memory_in_use);
    EXPECT_EQ(g.memory_peak, w.memory_peak);
    EXPECT_EQ(g.allocations, w.allocations);
    EXPECT_EQ(g.releases, w.releases);
  }
}

// Kernels, copies and memsets on three devices, overlapping on several streams, starts out of
// order by up to a few activities (within the builders' reorder window), and allocations and
// releases (some of addresses never allocated).
std::vector<TimelineActivity> RandomActivities(uint32_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<TimelineActivity> out;
  int64_t t = kT0;
  std::vector<uint64_t> live;
  for (size_t i = 0; i < n; ++i) {
    t += static_cast<int64_t>(rng() % (3 * kUs));
    TimelineActivity a;
    a.device = static_cast<uint32_t>(rng() % 3);
    a.start = t - static_cast<int64_t>(rng() % (2 * kUs));  // a little out of start order
    const uint64_t pick = rng() % 20;
    if (pick < 2) {
      a.kind = TimelineActivityKind::kAllocation;
      a.end = a.start;
      a.bytes = (rng() % 64 + 1) << 20;
      a.address = 0x7000'0000 + (rng() % 32) * 0x100000;
      live.push_back(a.address);
    } else if (pick < 4) {
      a.kind = TimelineActivityKind::kRelease;
      a.end = a.start;
      a.address = live.empty() || rng() % 4 == 0 ? 0xdead'0000 : live[rng() % live.size()];
    } else {
      a.kind = pick < 14   ? TimelineActivityKind::kKernel
               : pick < 18 ? TimelineActivityKind::kMemcpy
                           : TimelineActivityKind::kMemset;
      a.end = a.start + static_cast<int64_t>(rng() % (40 * kUs));
      if (a.kind == TimelineActivityKind::kMemcpy) {
        a.bytes = rng() % 100000;
        a.direction = static_cast<CopyDirection>(rng() % 4);
      }
    }
    out.push_back(a);
  }
  return out;
}

// Sums `in` into each of `sizes` over fine buckets of `fine` ns, and compares every row and count
// with a builder of that size fed `in` (both with the default reorder window).
void ExpectEverySizeMatches(const std::vector<TimelineActivity>& in, uint64_t fine,
                            const std::vector<uint64_t>& sizes) {
  TimelineRegrid regrid(TimelineOptions{fine, 100'000'000, 1 << 16}, sizes);
  for (const TimelineActivity& a : in) regrid.Add(a);
  regrid.Finish();
  for (uint64_t size : sizes) {
    TimelineCounts want_counts;
    const auto want = Direct(in, size, 1 << 16, 100'000'000, &want_counts);
    std::optional<TimelineRegrid::Result> got = regrid.Take(size, 100'000'000);
    ASSERT_TRUE(got.has_value()) << "size " << size;
    ASSERT_EQ(got->buckets.size(), want.size());
    for (const auto& [device, rows] : want)
      ExpectSameRows(rows, got->buckets[device], size, device);
    EXPECT_EQ(got->counts.activities, want_counts.activities);
    EXPECT_EQ(got->counts.rows, want_counts.rows);
    EXPECT_EQ(got->counts.late, 0u);
    EXPECT_EQ(want_counts.late, 0u);
    EXPECT_EQ(got->counts.late_busy_ns_missed, want_counts.late_busy_ns_missed);
    EXPECT_EQ(got->counts.kernel_busy_ns_missed, want_counts.kernel_busy_ns_missed);
    EXPECT_EQ(got->counts.unknown_releases, want_counts.unknown_releases);
    EXPECT_GT(want_counts.unknown_releases, 0u);
    EXPECT_FALSE(got->counts.too_many_rows);
  }
}

TEST(TimelineRegridTest, EverySizeMatchesABuilderOfThatSize) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    ExpectEverySizeMatches(
        RandomActivities(seed, 3000), kUs,
        {1 * kUs, 2 * kUs, 5 * kUs, 10 * kUs, 20 * kUs, 50 * kUs, 100 * kUs, 200 * kUs});
  }
}

// Fine buckets of 10 us summed into 1 ms ones, over a random stream of a few seconds: the size a
// report of such a span takes.
TEST(TimelineRegridTest, CoarseSizesOverALongerSpanMatchToo) {
  ExpectEverySizeMatches(RandomActivities(99, 200000), 10 * kUs,
                         {1000 * kUs, 2000 * kUs, 5000 * kUs});
}

TEST(TimelineRegridTest, AnActivityLateForItsFineBucketIsRefused) {
  // Swept as they come: the second kernel starts in a fine bucket already emitted, but in the
  // same 10 us bucket as the first, where a builder of that size counts it.
  const std::vector<TimelineActivity> in = {
      {.device = 0, .start = kT0 + 5 * kUs, .end = kT0 + 6 * kUs},
      {.device = 0, .start = kT0 + 2 * kUs, .end = kT0 + 3 * kUs},
  };
  TimelineCounts direct;
  const auto want = Direct(in, 10 * kUs, 0, 100'000'000, &direct);
  EXPECT_EQ(direct.late, 0u);
  TimelineRegrid regrid(TimelineOptions{kUs, 100'000'000, 0}, {10 * kUs});
  for (const TimelineActivity& a : in) regrid.Add(a);
  regrid.Finish();
  EXPECT_FALSE(regrid.Take(10 * kUs, 100'000'000).has_value());
}

TEST(TimelineRegridTest, KernelTimeCutFromTheKernelsUnionIsRefused) {
  // A copy covers [0, 100) us; kernels at 50 us, then at 40 us (out of order, swept as they
  // come): the union of all activities loses nothing, the kernels' own union loses 10 us, and
  // by a different amount in fine buckets (whose sweep has moved to 50 us) than in coarse ones.
  const std::vector<TimelineActivity> in = {
      {.device = 0, .start = kT0, .end = kT0 + 100 * kUs, .kind = TimelineActivityKind::kMemcpy},
      {.device = 0, .start = kT0 + 50 * kUs, .end = kT0 + 60 * kUs},
      {.device = 0, .start = kT0 + 40 * kUs, .end = kT0 + 45 * kUs},
  };
  TimelineRegrid regrid(TimelineOptions{kUs, 100'000'000, 0}, {1000 * kUs});
  for (const TimelineActivity& a : in) regrid.Add(a);
  regrid.Finish();
  EXPECT_FALSE(regrid.Take(1000 * kUs, 100'000'000).has_value());
}

TEST(TimelineRegridTest, OtherSizesRowLimitsAndNothingToDraw) {
  const std::vector<TimelineActivity> in = RandomActivities(7, 500);
  TimelineRegrid regrid(TimelineOptions{kUs, 100'000'000, 1 << 16},
                        {10 * kUs, 25 * kUs / 10 /* not a multiple: ignored */});
  for (const TimelineActivity& a : in) regrid.Add(a);
  regrid.Finish();
  EXPECT_FALSE(regrid.Take(20 * kUs, 100'000'000).has_value());  // not a candidate
  EXPECT_FALSE(regrid.Take(2500, 100'000'000).has_value());      // not a multiple of 1 us
  EXPECT_FALSE(regrid.Take(10 * kUs, 3).has_value());            // that builder would stop
  // The fine builder's own limit stops it: nothing it gives is exact.
  TimelineRegrid small(TimelineOptions{kUs, 10, 1 << 16}, {10 * kUs});
  for (const TimelineActivity& a : in) small.Add(a);
  small.Finish();
  EXPECT_FALSE(small.Take(10 * kUs, 100'000'000).has_value());
  // No activity at all: every size's chart is empty.
  TimelineRegrid empty(TimelineOptions{kUs, 100'000'000, 1 << 16}, {10 * kUs});
  empty.Finish();
  std::optional<TimelineRegrid::Result> none = empty.Take(7 * kUs, 5);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->buckets.empty());
  EXPECT_EQ(none->counts.rows, 0u);
}

}  // namespace
}  // namespace cupmon::decoder

// TimelineBuilder and ParseBucketSize (decoder/src/timeline.cc): the union of intervals per bucket,
// intervals split across buckets, empty buckets, late arrivals, the row limit and bucket sizes.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cupmon/decoder/timeline.h"

namespace cupmon::decoder {
namespace {

constexpr int64_t kSec = 1'000'000'000;
// A bucket-aligned wall-clock origin (2026-03-01T12:00:00Z).
constexpr int64_t kT0 = 1'772'366'400 * kSec;

struct Collected {
  std::vector<TimelineBucket> rows;
  TimelineBuilder builder;
  explicit Collected(uint64_t bucket_ns, uint64_t max_rows = 100'000'000,
                     size_t reorder_rows = 1 << 16)
      : builder(TimelineOptions{bucket_ns, max_rows, reorder_rows},
                [this](const TimelineBucket& b) { rows.push_back(b); }) {}
};

TimelineActivity Kernel(uint32_t device, int64_t start, int64_t end) {
  return {.device = device, .start = start, .end = end, .kind = TimelineActivityKind::kKernel};
}

TEST(TimelineBuilderTest, OverlappingIntervalsOnTwoStreamsCountOnce) {
  Collected c(kSec);
  // Two streams of device 0: [0.1, 0.5) and [0.3, 0.7) overlap; union 0.6 s. A memcpy inside
  // the union adds nothing to busy time; a kernel at [0.8, 0.9) adds 0.1 s.
  c.builder.Add(Kernel(0, kT0 + kSec / 10, kT0 + kSec / 2));
  c.builder.Add(Kernel(0, kT0 + 3 * kSec / 10, kT0 + 7 * kSec / 10));
  c.builder.Add({.device = 0,
                 .start = kT0 + 4 * kSec / 10,
                 .end = kT0 + 6 * kSec / 10,
                 .kind = TimelineActivityKind::kMemcpy,
                 .bytes = 4096,
                 .direction = CopyDirection::kHostToDevice});
  c.builder.Add(Kernel(0, kT0 + 8 * kSec / 10, kT0 + 9 * kSec / 10));
  c.builder.Finish();
  ASSERT_EQ(c.rows.size(), 1u);
  const TimelineBucket& b = c.rows[0];
  EXPECT_EQ(b.start, kT0);
  EXPECT_EQ(b.length, static_cast<uint64_t>(kSec));
  EXPECT_EQ(b.busy_ns, 7 * static_cast<uint64_t>(kSec) / 10);
  EXPECT_EQ(b.kernel_busy_ns, 7 * static_cast<uint64_t>(kSec) / 10);
  EXPECT_EQ(b.kernels, 3u);
  EXPECT_EQ(b.memcpys, 1u);
  EXPECT_EQ(b.memcpy_bytes, 4096u);
  EXPECT_EQ(b.h2d_bytes, 4096u);
  EXPECT_EQ(b.d2h_bytes, 0u);
}

TEST(TimelineBuilderTest, KernelBusyLeavesOutCopies) {
  Collected c(kSec);
  c.builder.Add({.device = 0, .start = kT0, .end = kT0 + kSec / 4,
                 .kind = TimelineActivityKind::kMemset});
  c.builder.Add(Kernel(0, kT0 + kSec / 2, kT0 + 3 * kSec / 4));
  c.builder.Finish();
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].busy_ns, static_cast<uint64_t>(kSec) / 2);
  EXPECT_EQ(c.rows[0].kernel_busy_ns, static_cast<uint64_t>(kSec) / 4);
  EXPECT_EQ(c.rows[0].memsets, 1u);
}

TEST(TimelineBuilderTest, AnIntervalSpanningThreeBucketsIsSplitAcrossThem) {
  Collected c(kSec);
  // [0.5 s, 2.25 s): 0.5 s in bucket 0, all of bucket 1, 0.25 s in bucket 2; counted once, in 0.
  c.builder.Add(Kernel(3, kT0 + kSec / 2, kT0 + 2 * kSec + kSec / 4));
  c.builder.Finish();
  ASSERT_EQ(c.rows.size(), 3u);
  EXPECT_EQ(c.rows[0].busy_ns, static_cast<uint64_t>(kSec) / 2);
  EXPECT_EQ(c.rows[1].busy_ns, static_cast<uint64_t>(kSec));
  EXPECT_EQ(c.rows[2].busy_ns, static_cast<uint64_t>(kSec) / 4);
  EXPECT_EQ(c.rows[0].kernels, 1u);
  EXPECT_EQ(c.rows[1].kernels + c.rows[2].kernels, 0u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(c.rows[i].start, kT0 + i * kSec);
    EXPECT_EQ(c.rows[i].device, 3u);
  }
}

TEST(TimelineBuilderTest, EmptyBucketsBetweenActiveOnesAreEmittedWithZeros) {
  Collected c(kSec);
  c.builder.Add(Kernel(0, kT0 + 100, kT0 + 200));
  c.builder.Add(Kernel(1, kT0 + 300, kT0 + 400));
  c.builder.Add(Kernel(0, kT0 + 4 * kSec + 100, kT0 + 4 * kSec + 300));
  c.builder.Finish();
  // Buckets 0..4, each with a row for devices 0 and 1 (in that order).
  ASSERT_EQ(c.rows.size(), 10u);
  for (size_t i = 0; i < c.rows.size(); ++i) {
    EXPECT_EQ(c.rows[i].start, kT0 + static_cast<int64_t>(i / 2) * kSec) << i;
    EXPECT_EQ(c.rows[i].device, i % 2) << i;
  }
  for (size_t i = 2; i < 8; ++i) EXPECT_TRUE(c.rows[i].empty()) << i;
  EXPECT_EQ(c.rows[8].busy_ns, 200u);
  EXPECT_TRUE(c.rows[9].empty());
  EXPECT_EQ(c.builder.counts().rows, 10u);
}

TEST(TimelineBuilderTest, BucketsAreAlignedInUnixTime) {
  Collected c(60 * kSec);
  c.builder.Add(Kernel(0, kT0 + 90 * kSec, kT0 + 91 * kSec));
  c.builder.Finish();
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].start, kT0 + 60 * kSec);
  EXPECT_EQ(c.rows[0].start % (60 * kSec), 0);
}

TEST(TimelineBuilderTest, AnActivityAfterItsBucketWasEmittedIsCountedLateAndLeftOut) {
  Collected c(kSec, 100'000'000, /*reorder_rows=*/0);
  c.builder.Add(Kernel(0, kT0 + 100, kT0 + 200));
  c.builder.Add(Kernel(0, kT0 + kSec + 100, kT0 + kSec + 200));  // bucket 0 is written here
  c.builder.Add(Kernel(0, kT0 + 500, kT0 + 900));                 // late: bucket 0
  c.builder.Finish();
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[0].kernels, 1u);
  EXPECT_EQ(c.rows[0].busy_ns, 100u);
  EXPECT_EQ(c.builder.counts().late, 1u);
  EXPECT_EQ(c.builder.counts().activities, 3u);
}

TEST(TimelineBuilderTest, OutOfOrderInsideABucketNeverCountsAnOverlapTwice) {
  Collected c(kSec, 100'000'000, /*reorder_rows=*/0);
  c.builder.Add(Kernel(0, kT0 + 1000, kT0 + 2000));
  c.builder.Add(Kernel(0, kT0 + 5000, kT0 + 6000));  // closes [1000, 2000): sweep now at 5000
  // Starts before the sweep position: [1500, 5500) is counted only from 5000 on (already
  // covered), and 3500 ns (1500..5000) is reported as missed. Its kernel still counts.
  c.builder.Add(Kernel(0, kT0 + 1500, kT0 + 5500));
  c.builder.Finish();
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].busy_ns, 2000u);
  EXPECT_EQ(c.rows[0].kernels, 3u);
  EXPECT_EQ(c.builder.counts().late_busy_ns_missed, 3500u);
  EXPECT_EQ(c.builder.counts().late, 0u);
}

TEST(TimelineBuilderTest, TheReorderStageMakesOutOfOrderInputExact) {
  // The two inputs above, with room to reorder: exact union, nothing late or missed.
  Collected c(kSec, 100'000'000, /*reorder_rows=*/4);
  c.builder.Add(Kernel(0, kT0 + 1000, kT0 + 2000));
  c.builder.Add(Kernel(0, kT0 + 5000, kT0 + 6000));
  c.builder.Add(Kernel(0, kT0 + 1500, kT0 + 5500));
  c.builder.Add(Kernel(0, kT0 + kSec + 100, kT0 + kSec + 200));
  c.builder.Add(Kernel(0, kT0 + 500, kT0 + 900));
  c.builder.Finish();
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[0].busy_ns, 400u + 5000u);
  EXPECT_EQ(c.rows[0].kernels, 4u);
  EXPECT_EQ(c.rows[1].busy_ns, 100u);
  EXPECT_EQ(c.builder.counts().late, 0u);
  EXPECT_EQ(c.builder.counts().late_busy_ns_missed, 0u);
}

TEST(TimelineBuilderTest, PastTheReorderBoundAnActivityIsLate) {
  // One row held: the bucket-0 activity that comes two rows after a bucket-1 one is late.
  Collected c(kSec, 100'000'000, /*reorder_rows=*/1);
  c.builder.Add(Kernel(0, kT0 + 100, kT0 + 200));
  c.builder.Add(Kernel(0, kT0 + kSec + 100, kT0 + kSec + 200));
  c.builder.Add(Kernel(0, kT0 + kSec + 300, kT0 + kSec + 400));
  c.builder.Add(Kernel(0, kT0 + 500, kT0 + 900));
  c.builder.Finish();
  EXPECT_EQ(c.builder.counts().late, 1u);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[0].kernels, 1u);
  EXPECT_EQ(c.rows[1].kernels, 2u);
}

TEST(TimelineBuilderTest, AShuffledStreamMatchesABruteForceUnion) {
  // Brute force: a per-microsecond occupancy map (to the end of the last 1 ms bucket). Intervals
  // on 2 devices, nearly in start order, some overlapping, some crossing buckets of 1 ms.
  std::mt19937_64 rng(7);
  constexpr int64_t kUs = 1000, kSpan = 20'000;  // 20 ms in us
  std::vector<TimelineActivity> acts;
  for (int i = 0; i < 3000; ++i) {
    const int64_t start = static_cast<int64_t>(rng() % kSpan) * kUs;
    const int64_t len = static_cast<int64_t>(rng() % 300) * kUs;
    acts.push_back(Kernel(static_cast<uint32_t>(rng() % 2), kT0 + start, kT0 + start + len));
  }
  // Nearly sorted, as CUPTI delivers: sorted, then shuffled within runs of 50.
  std::stable_sort(acts.begin(), acts.end(),
                   [](const auto& a, const auto& b) { return a.start < b.start; });
  for (size_t i = 0; i + 50 <= acts.size(); i += 50)
    std::shuffle(acts.begin() + static_cast<long>(i), acts.begin() + static_cast<long>(i + 50),
                 rng);
  std::vector<std::vector<bool>> busy(2, std::vector<bool>(kSpan + 1000, false));
  for (const auto& a : acts)
    for (int64_t t = (a.start - kT0) / kUs; t < (a.end - kT0) / kUs; ++t) busy[a.device][t] = true;
  Collected c(kSec / 1000, 100'000'000, /*reorder_rows=*/64);
  for (const auto& a : acts) c.builder.Add(a);
  c.builder.Finish();
  ASSERT_FALSE(c.rows.empty());
  uint64_t kernels = 0;
  for (const TimelineBucket& b : c.rows) {
    uint64_t expect = 0;
    const int64_t first_us = (b.start - kT0) / kUs;
    for (int64_t t = first_us; t < first_us + 1000; ++t) expect += busy[b.device][t] ? kUs : 0;
    EXPECT_EQ(b.busy_ns, expect) << "bucket " << b.start - kT0 << " device " << b.device;
    EXPECT_LE(b.busy_ns, b.length);
    kernels += b.kernels;
  }
  EXPECT_EQ(kernels, acts.size());
  EXPECT_EQ(c.builder.counts().late, 0u);
  EXPECT_EQ(c.builder.counts().late_busy_ns_missed, 0u);
}

TEST(TimelineBuilderTest, AGapThatWouldPassTheRowLimitStopsBeforeWritingIt) {
  Collected c(kSec, /*max_rows=*/100);
  c.builder.Add(Kernel(0, kT0, kT0 + 10));
  c.builder.Add(Kernel(0, kT0 + 1000 * kSec, kT0 + 1000 * kSec + 10));  // 1000 buckets later
  c.builder.Add(Kernel(0, kT0 + 1001 * kSec, kT0 + 1001 * kSec + 10));  // ignored once stopped
  c.builder.Finish();
  EXPECT_TRUE(c.builder.counts().too_many_rows);
  EXPECT_EQ(c.builder.counts().too_many_rows_at, kT0 + 1000 * kSec);
  EXPECT_TRUE(c.rows.empty());
}

TEST(TimelineBuilderTest, ALongIntervalThatWouldPassTheRowLimitStopsAtFinish) {
  Collected c(kSec, /*max_rows=*/100);
  c.builder.Add(Kernel(0, kT0, kT0 + 500 * kSec));
  c.builder.Finish();
  EXPECT_TRUE(c.builder.counts().too_many_rows);
  EXPECT_TRUE(c.rows.empty());
  Collected fits(kSec, /*max_rows=*/100);
  fits.builder.Add(Kernel(0, kT0, kT0 + 100 * kSec));
  fits.builder.Finish();
  EXPECT_FALSE(fits.builder.counts().too_many_rows);
  EXPECT_EQ(fits.rows.size(), 100u);
}

TEST(TimelineBuilderTest, TimesFarOutOfRangeAreCountedAndLeftOut) {
  Collected c(kSec);
  c.builder.Add(Kernel(0, kT0, kT0 + 10));
  c.builder.Add(Kernel(0, INT64_MAX - 5, INT64_MAX));  // no overflow in the bucket arithmetic
  c.builder.Add(Kernel(0, INT64_MIN, INT64_MIN + 5));
  c.builder.Add(Kernel(0, kT0 + 20, INT64_MAX));
  c.builder.Finish();
  EXPECT_EQ(c.builder.counts().out_of_range, 3u);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].kernels, 1u);
  EXPECT_EQ(c.rows[0].busy_ns, 10u);
}

TimelineActivity Memory(TimelineActivityKind kind, uint32_t device, int64_t at,
                        uint64_t address, uint64_t bytes = 0) {
  return {.device = device, .start = at, .end = at, .kind = kind, .bytes = bytes,
          .address = address};
}

TEST(TimelineBuilderTest, BytesInUseCarryAcrossBucketsAndReleasesSubtractTheAllocation) {
  Collected c(kSec);
  constexpr auto kAlloc = TimelineActivityKind::kAllocation;
  constexpr auto kFree = TimelineActivityKind::kRelease;
  // Bucket 0: +100 and +50 on device 0, the 100 released; bucket 1 empty; bucket 2: the address
  // 0xA reallocated with 30 (the 50 is still live), a release with the wrong size subtracts the
  // allocation's 30, an unknown release; an allocation and its release in one nanosecond.
  c.builder.Add(Memory(kAlloc, 0, kT0 + 1, 0xA, 100));
  c.builder.Add(Memory(kAlloc, 0, kT0 + 2, 0xB, 50));
  c.builder.Add(Memory(kFree, 0, kT0 + 3, 0xA));
  c.builder.Add(Memory(kAlloc, 0, kT0 + 2 * kSec + 1, 0xA, 30));
  c.builder.Add(Memory(kFree, 0, kT0 + 2 * kSec + 2, 0xA, 999));
  c.builder.Add(Memory(kFree, 0, kT0 + 2 * kSec + 3, 0xDEAD));
  c.builder.Add(Memory(kAlloc, 0, kT0 + 2 * kSec + 4, 0xC, 1000));
  c.builder.Add(Memory(kFree, 0, kT0 + 2 * kSec + 4, 0xC));
  c.builder.Finish();
  ASSERT_EQ(c.rows.size(), 3u);
  EXPECT_EQ(c.rows[0].memory_in_use, 50u);
  EXPECT_EQ(c.rows[0].memory_peak, 150u);
  EXPECT_EQ(c.rows[0].allocations, 2u);
  EXPECT_EQ(c.rows[0].releases, 1u);
  EXPECT_EQ(c.rows[0].busy_ns, 0u);  // instants take no busy time
  EXPECT_EQ(c.rows[1].memory_in_use, 50u);
  EXPECT_EQ(c.rows[1].memory_peak, 50u);
  EXPECT_EQ(c.rows[1].allocations, 0u);
  EXPECT_EQ(c.rows[2].memory_in_use, 50u);
  EXPECT_EQ(c.rows[2].memory_peak, 1050u);
  EXPECT_EQ(c.rows[2].allocations, 2u);
  EXPECT_EQ(c.rows[2].releases, 3u);
  EXPECT_EQ(c.builder.counts().unknown_releases, 1u);
}

TEST(TimelineBuilderTest, AReleaseOnAnotherDeviceSubtractsFromTheAllocationsDevice) {
  Collected c(kSec);
  // Out of start order too: the reorder stage sweeps the allocation first.
  c.builder.Add(Memory(TimelineActivityKind::kRelease, 1, kT0 + 20, 0xA));
  c.builder.Add(Memory(TimelineActivityKind::kAllocation, 0, kT0 + 10, 0xA, 64));
  c.builder.Add(Kernel(1, kT0 + 30, kT0 + 40));
  c.builder.Finish();
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[0].device, 0u);
  EXPECT_EQ(c.rows[0].memory_in_use, 0u);
  EXPECT_EQ(c.rows[0].memory_peak, 64u);
  EXPECT_EQ(c.rows[1].device, 1u);
  EXPECT_EQ(c.rows[1].memory_in_use, 0u);
  EXPECT_EQ(c.rows[1].memory_peak, 0u);
  EXPECT_EQ(c.rows[1].releases, 1u);
  EXPECT_EQ(c.builder.counts().unknown_releases, 0u);
}

TEST(TimelineBuilderTest, NoActivityNoRows) {
  Collected c(kSec);
  c.builder.Finish();
  EXPECT_TRUE(c.rows.empty());
}

TEST(ParseBucketSizeTest, AcceptsNumbersWithUnits) {
  EXPECT_EQ(*ParseBucketSize("100ms"), 100'000'000u);
  EXPECT_EQ(*ParseBucketSize("1s"), 1'000'000'000u);
  EXPECT_EQ(*ParseBucketSize("10s"), 10'000'000'000u);
  EXPECT_EQ(*ParseBucketSize("1m"), 60'000'000'000u);
  EXPECT_EQ(*ParseBucketSize("1.5m"), 90'000'000'000u);
  EXPECT_EQ(*ParseBucketSize("1h"), 3'600'000'000'000u);
  EXPECT_EQ(*ParseBucketSize("250us"), 250'000u);
  EXPECT_EQ(*ParseBucketSize("5000ns"), 5000u);
}

TEST(ParseBucketSizeTest, RefusesZeroNegativesGarbageAndAbsurdSizes) {
  const struct {
    const char* text;
    const char* says;
  } cases[] = {
      {"0s", "is zero"},         {"0", "has no unit"},       {"-1s", "has a sign"},
      {"+1s", "has a sign"},     {"abc", "is not a number"}, {"1 s", "unknown unit ' s'"},
      {"1sec", "unknown unit"},  {"", "is empty"},           {"10", "has no unit"},
      {"100ns", "below 1us"},    {"400d", "unknown unit"},   {"9000h", "longer than 366 days"},
      {"nans", "is not a number"}, {"infs", "is not a number"}, {"0x10s", "is not a number"},
  };
  for (const auto& c : cases) {
    const auto r = ParseBucketSize(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos)
        << c.text << ": " << r.error().message;
  }
}

}  // namespace
}  // namespace cupmon::decoder

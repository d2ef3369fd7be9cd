// StepSums (monitor/src/step_sums.cc): work, collective time and host gap per step, exact on
// hand-made records, and the bound on the intervals it holds.
#include "monitor/src/step_sums.h"

#include <cupti.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "monitor/testing/kernel10_facts.h"

namespace cupmon {
namespace {

constexpr uint64_t kGemm = 0x7f0000001000ull;       // name pointers, as CUPTI's records carry
constexpr uint64_t kAllReduce = 0x7f0000002000ull;

SessionFacts Facts() {
  SessionFacts f = testing::Kernel10Facts();
  f.sizes.Set(CUPTI_ACTIVITY_KIND_MEMCPY, sizeof(CUpti_ActivityMemcpy6));
  f.memcpy = {offsetof(CUpti_ActivityMemcpy6, start), offsetof(CUpti_ActivityMemcpy6, end),
              offsetof(CUpti_ActivityMemcpy6, deviceId), offsetof(CUpti_ActivityMemcpy6, streamId)};
  return f;
}

class Records {
 public:
  Records& Kernel(uint64_t name, uint64_t start, uint64_t end) {
    CUpti_ActivityKernel10 k{};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = start;
    k.end = end;
    k.streamId = 7;
    k.name = reinterpret_cast<const char*>(name);
    Append(&k, sizeof(k));
    return *this;
  }
  Records& Copy(uint64_t start, uint64_t end) {
    CUpti_ActivityMemcpy6 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.start = start;
    m.end = end;
    m.streamId = 9;
    Append(&m, sizeof(m));
    return *this;
  }
  void To(StepSums& sums) {
    sums.Add(bytes_.data(), bytes_.size());
    bytes_.clear();
  }

 private:
  void Append(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t> bytes_;
};

std::vector<pb::StringEntry> Names() {
  std::vector<pb::StringEntry> out(2);
  out[0].set_pointer(kGemm);
  out[0].set_text("_Z4gemmPfS_");
  out[1].set_pointer(kAllReduce);
  out[1].set_text("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  return out;
}

TEST(StepSumsTest, CollectiveNamesAreNcclKernels) {
  EXPECT_TRUE(IsCollectiveKernelName("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  EXPECT_TRUE(IsCollectiveKernelName("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"));
  EXPECT_TRUE(IsCollectiveKernelName("void ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_FALSE(IsCollectiveKernelName("my_ncclDevKernel_lookalike"));
  EXPECT_FALSE(IsCollectiveKernelName("_Z4gemmPfS_"));
}

// Steps [1000, 2000), [2000, 3000), [3000, 4000), delivered in arrival order unlike start order,
// each figure worked out by hand in the comments.
TEST(StepSumsTest, FiguresFollowTheDefinitionToTheNanosecond) {
  const SessionFacts facts = Facts();
  StepSums sums(facts);
  sums.NoteStrings(Names());
  Records r;
  sums.OnBoundary(1, 1000);   // intervals are held from the first boundary on
  r.Kernel(kGemm, 500, 900);  // before the first step: only bounds step 1's host gap
  // Step 1: work [1000, 1400) (two gemms and a copy, overlapping), collectives [1600, 1900).
  r.Kernel(kAllReduce, 1700, 1900).Kernel(kGemm, 1000, 1200).Kernel(kGemm, 1100, 1300);
  r.Copy(1250, 1400).Kernel(kAllReduce, 1600, 1800);
  // Step 2: no collective; a gemm runs on past the step's end, to 3200.
  r.Kernel(kGemm, 2500, 2600).Kernel(kGemm, 2700, 3200);
  // Step 3: a collective that starts before step 2's last activity ended.
  r.Kernel(kGemm, 3000, 3100).Kernel(kAllReduce, 3050, 3500);
  r.To(sums);
  sums.OnBoundary(2, 2000);
  EXPECT_TRUE(sums.finished().empty());  // step 1 waits for s(3)
  sums.OnBoundary(3, 3000);
  sums.OnBoundary(4, 4000);
  sums.OnBoundary(5, 5000);
  ASSERT_EQ(sums.finished().size(), 3u);
  const StepFigures& s1 = sums.finished()[0];
  const StepFigures& s2 = sums.finished()[1];
  const StepFigures& s3 = sums.finished()[2];
  EXPECT_EQ(s1.number, 1u);
  EXPECT_EQ(s1.step_ns, 1000u);
  EXPECT_EQ(s1.work_ns, 400u);
  EXPECT_EQ(s1.collective_ns, 300u);
  // [900, 1600) less [1000, 1400): the idle before the step's first kernel and before its
  // first collective.
  EXPECT_EQ(s1.host_gap_ns, 300u);
  EXPECT_EQ(s2.work_ns, 600u);
  EXPECT_EQ(s2.collective_ns, 0u);
  // No collective: [1900, min(3200, 3000)) less [2500, 2600) and [2700, 3000).
  EXPECT_EQ(s2.host_gap_ns, 700u);
  EXPECT_EQ(s3.work_ns, 100u);
  EXPECT_EQ(s3.collective_ns, 450u);
  EXPECT_EQ(s3.host_gap_ns, 0u);  // its collective began while step 2's gemm still ran
  EXPECT_EQ(sums.totals().steps, 3u);
  EXPECT_EQ(sums.totals().step_ns, 3000u);
  EXPECT_EQ(sums.totals().work_ns, 1100u);
  EXPECT_EQ(sums.totals().collective_ns, 750u);
  EXPECT_EQ(sums.totals().host_gap_ns, 1000u);
  EXPECT_EQ(sums.intervals_dropped(), 0u);
  EXPECT_EQ(sums.held(), 0u);

  // An activity of a step already summed is counted as dropped, and its end still bounds the
  // next host gap: step 4's window starts at 4900, not at 3500.
  sums.ClearFinished();
  r.Kernel(kGemm, 3900, 4900).Kernel(kAllReduce, 4950, 5000).Kernel(kGemm, 5000, 5100);
  r.To(sums);
  EXPECT_EQ(sums.intervals_dropped(), 1u);
  sums.OnBoundary(6, 6000);
  ASSERT_EQ(sums.finished().size(), 1u);
  EXPECT_EQ(sums.finished()[0].number, 4u);
  EXPECT_EQ(sums.finished()[0].host_gap_ns, 50u);  // [4900, 4950)
  EXPECT_EQ(sums.finished()[0].collective_ns, 50u);
}

// More intervals than the cap in one step: the earliest half is dropped and counted, that step is
// not published, and the next ones are, exactly.
TEST(StepSumsTest, HeldIntervalsAreCappedAndACutStepIsNotPublished) {
  const SessionFacts facts = Facts();
  StepSums sums(facts);
  sums.NoteStrings(Names());
  Records r;
  constexpr uint64_t kStep = 100'000'000;
  sums.OnBoundary(1, kStep);
  for (uint64_t i = 0; i <= StepSums::kMaxHeld; ++i) r.Kernel(kGemm, kStep + i * 10, kStep + i * 10 + 5);
  for (uint64_t s = 2; s <= 4; ++s) {
    r.Kernel(kGemm, s * kStep, s * kStep + 1000);
    r.Kernel(kAllReduce, s * kStep + 3000, s * kStep + 4000);
  }
  r.To(sums);
  EXPECT_EQ(sums.intervals_dropped(), StepSums::kMaxHeld / 2);
  EXPECT_LE(sums.held(), StepSums::kMaxHeld);
  for (uint64_t s = 2; s <= 5; ++s) sums.OnBoundary(s, s * kStep);
  EXPECT_EQ(sums.steps_cut(), 1u);
  ASSERT_EQ(sums.finished().size(), 2u);
  EXPECT_EQ(sums.finished()[0].number, 2u);
  EXPECT_EQ(sums.finished()[0].work_ns, 1000u);
  EXPECT_EQ(sums.finished()[0].collective_ns, 1000u);
  // From step 1's last kernel's end (a kept one) to step 2's collective, less step 2's gemm.
  const uint64_t last_end = kStep + StepSums::kMaxHeld * 10 + 5;
  EXPECT_EQ(sums.finished()[0].host_gap_ns, (2 * kStep + 3000 - last_end) - 1000);
  // [step 2's collective end, step 3's collective start) less step 3's gemm.
  EXPECT_EQ(sums.finished()[1].host_gap_ns, (3 * kStep + 3000 - (2 * kStep + 4000)) - 1000);
  EXPECT_EQ(sums.totals().steps, 2u);
}

// Before the first boundary (the watch still learning, or no pattern at all) nothing is held, and
// the steps that began before the last activity seen then are not published.
TEST(StepSumsTest, NothingIsHeldBeforeTheFirstBoundary) {
  const SessionFacts facts = Facts();
  StepSums sums(facts);
  Records r;
  for (uint64_t i = 0; i < 1000; ++i) r.Kernel(kGemm, 1000 + i * 100, 1050 + i * 100);
  r.To(sums);
  EXPECT_EQ(sums.held(), 0u);
  // Steps of 10,000 ns from 1000 on: the last unheld activity started at 100,900, in step 10.
  for (uint64_t s = 1; s <= 12; ++s) sums.OnBoundary(s, 1000 + (s - 1) * 10'000);
  EXPECT_TRUE(sums.finished().empty());
  r.Kernel(kGemm, 111'000, 111'500).Kernel(kGemm, 121'000, 121'500);  // steps 12 and 13
  r.To(sums);
  sums.OnBoundary(13, 121'000);
  sums.OnBoundary(14, 131'000);
  ASSERT_EQ(sums.finished().size(), 2u);  // steps 11 and 12
  EXPECT_EQ(sums.finished()[0].number, 11u);
  EXPECT_EQ(sums.finished()[0].work_ns, 0u);
  EXPECT_EQ(sums.finished()[1].work_ns, 500u);
  // No collective: [100,950 (the last unheld end), 111,500) less its own kernel.
  EXPECT_EQ(sums.finished()[1].host_gap_ns, 10'050u);
  EXPECT_EQ(sums.steps_cut(), 0u);
  EXPECT_EQ(sums.intervals_dropped(), 0u);
}

}  // namespace
}  // namespace cupmon

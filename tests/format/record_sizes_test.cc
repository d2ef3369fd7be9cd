// Tests the kind->size table and WalkRecords; checks Cupti13() against the toolkit's structs.
#include "cupmon/format/record_sizes.h"

#include <gtest/gtest.h>

#include <vector>

#include "cupmon/format/chunk.h"
#include "test_data.h"

#if defined(CUPMON_HAVE_CUDA_HEADERS)
#include <cupti_activity.h>
#endif

namespace cupmon {
namespace {

#if defined(CUPMON_HAVE_CUDA_HEADERS)
TEST(RecordSizesTest, Cupti13MatchesToolkitStructs) {
  const RecordSizeTable t = RecordSizeTable::Cupti13();
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_MEMCPY), sizeof(CUpti_ActivityMemcpy6));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_MEMSET), sizeof(CUpti_ActivityMemset4));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_KERNEL), sizeof(CUpti_ActivityKernel10));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), sizeof(CUpti_ActivityKernel10));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_DRIVER), sizeof(CUpti_ActivityAPI));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_RUNTIME), sizeof(CUpti_ActivityAPI));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_NAME), sizeof(CUpti_ActivityName));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_MARKER), sizeof(CUpti_ActivityMarker2));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_OVERHEAD), sizeof(CUpti_ActivityOverhead3));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_MEMCPY2), sizeof(CUpti_ActivityMemcpyPtoP4));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_CUDA_EVENT), sizeof(CUpti_ActivityCudaEvent2));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION), sizeof(CUpti_ActivitySynchronization2));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION),
            sizeof(CUpti_ActivityExternalCorrelation));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_MEMORY2), sizeof(CUpti_ActivityMemory4));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_MEMORY_POOL), sizeof(CUpti_ActivityMemoryPool3));
  EXPECT_EQ(t.Size(CUPTI_ACTIVITY_KIND_GRAPH_TRACE), sizeof(CUpti_ActivityGraphTrace2));
}
#endif

TEST(RecordSizesTest, Cupti13FiguresFromTheNotes) {
  const RecordSizeTable t = RecordSizeTable::Cupti13();
  EXPECT_EQ(t.Size(10), 216u);
  EXPECT_EQ(t.Size(1), 96u);
  EXPECT_EQ(t.Size(2), 88u);
  EXPECT_EQ(t.Size(5), 40u);
  EXPECT_EQ(t.Size(0), 0u);
  EXPECT_EQ(t.Size(RecordSizeTable::kMaxKind), 0u);
  EXPECT_EQ(t.Size(0xFFFFFFFFu), 0u);
  EXPECT_FALSE(t.Empty());
  EXPECT_TRUE(RecordSizeTable().Empty());
}

TEST(RecordSizesTest, SetIgnoresOutOfRangeKinds) {
  RecordSizeTable t;
  t.Set(RecordSizeTable::kMaxKind, 8);
  t.Set(1000, 8);
  EXPECT_TRUE(t.Empty());
}

// The real files walk to their last byte with the 13.0 table; counts match data/README.md.
TEST(RecordSizesTest, RealFilesWalkExactly) {
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  const std::vector<uint8_t> on = testing::LoadRealRecords(testing::kAlwaysOnFile);
  ASSERT_EQ(on.size(), 13'070'400u);
  size_t kernels = 0, memcpys = 0, memsets = 0;
  WalkResult r = WalkRecords(on, sizes, [&](uint32_t kind, std::span<const uint8_t> rec) {
    EXPECT_EQ(rec.size(), sizes.Size(kind));
    kernels += kind == 10;
    memcpys += kind == 1;
    memsets += kind == 2;
  });
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.bytes_walked, on.size());
  EXPECT_EQ(r.records, 61'200u);
  EXPECT_EQ(kernels, 60'000u);
  EXPECT_EQ(memcpys, 600u);
  EXPECT_EQ(memsets, 600u);

  const std::vector<uint8_t> win = testing::LoadRealRecords(testing::kWindowFile);
  ASSERT_EQ(win.size(), 4'791'568u);
  r = WalkRecords(win, sizes, [](uint32_t, std::span<const uint8_t>) {});
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.records, 16000u + 16403u + 16120u + 160u + 160u + 81u + 12u);
}

TEST(RecordSizesTest, WalkStopsAtUnknownKindAndOverrun) {
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  std::vector<uint8_t> buf(40 + 24, 0);
  PutLe32(buf.data(), 5);
  PutLe32(buf.data() + 40, 77);
  WalkResult r = WalkRecords(buf, sizes, [](uint32_t, std::span<const uint8_t>) {});
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.records, 1u);
  EXPECT_EQ(r.bytes_walked, 40u);
  EXPECT_EQ(r.stopped_kind, 77u);
  PutLe32(buf.data() + 40, 10);  // a kernel record needs 216 bytes, only 24 remain
  r = WalkRecords(buf, sizes, [](uint32_t, std::span<const uint8_t>) {});
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.stopped_kind, 10u);
  // Fewer than 4 trailing bytes: not complete either.
  buf.resize(42);
  r = WalkRecords(buf, sizes, [](uint32_t, std::span<const uint8_t>) {});
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.bytes_walked, 40u);
}

}  // namespace
}  // namespace cupmon

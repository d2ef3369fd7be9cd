// Tests for NameTable (decoder/src/name_table.cc): restated and replaced string entries, the kernel
// name cache, placeholders for pointers with no entry, NVTX names and annotation labels.
#include "name_table.h"

#include <gtest/gtest.h>

#include <string>

namespace cupmon::decoder {
namespace {

pb::StringTable Entries(std::initializer_list<std::pair<uint64_t, std::string>> entries) {
  pb::StringTable t;
  for (const auto& [pointer, text] : entries) {
    pb::StringEntry* e = t.add_entries();
    e->set_pointer(pointer);
    e->set_text(text);
  }
  return t;
}

// Files restate every earlier entry: a restatement adds nothing, and a new text for a pointer is
// current from then on while the older entry keeps its index (records read before still name it).
TEST(NameTableTest, RestatedEntriesAddNothingAndTheLatestEntryPerPointerWins) {
  NameTable names(/*mangled=*/false);
  names.OnStrings(Entries({{0x10, "_Z4gemmv"}, {0x20, "plain_kernel"}}));
  const int32_t gemm = names.KernelStringIndex(0x10);
  ASSERT_GE(gemm, 0);
  EXPECT_EQ(names.KernelStringIndex(0x10), gemm) << "a cached answer is the same";
  names.OnStrings(Entries({{0x10, "_Z4gemmv"}, {0x20, "plain_kernel"}}));
  EXPECT_EQ(names.KernelStringIndex(0x10), gemm) << "a restatement is not a new entry";

  // The pointer is reused (a module unloaded, another loaded): the cached index must not survive.
  names.OnStrings(Entries({{0x10, "_Z7softmaxv"}}));
  const int32_t softmax = names.KernelStringIndex(0x10);
  ASSERT_GE(softmax, 0);
  EXPECT_NE(softmax, gemm);
  EXPECT_EQ(names.String(static_cast<size_t>(gemm)), "_Z4gemmv");
  EXPECT_EQ(names.NameOf(names.KernelNameId(gemm, 0x10)), "gemm()");
  EXPECT_EQ(names.NameOf(names.KernelNameId(softmax, 0x10)), "softmax()");
  EXPECT_EQ(names.KernelStringIndex(0x30), -1);
  EXPECT_TRUE(names.HasString(0x20));
  EXPECT_FALSE(names.HasString(0x30));
}

// One id per distinct display text, whichever path asked for it; ids index NameOf.
TEST(NameTableTest, EachDisplayTextHasOneId) {
  NameTable names(/*mangled=*/false);
  names.OnStrings(Entries({{0x10, "_Z4gemmv"}, {0x11, "_Z4gemmv"}}));
  const uint32_t a = names.KernelNameId(names.KernelStringIndex(0x10), 0x10);
  const uint32_t b = names.KernelNameId(names.KernelStringIndex(0x11), 0x11);
  EXPECT_EQ(a, b) << "two entries with one text share the name";
  EXPECT_EQ(names.NameOf(names.MemcpyNameId(1)), "[CUDA memcpy HtoD]");
  EXPECT_EQ(names.NameOf(names.MemcpyNameId(200)), "[CUDA memcpy Unknown]");
  EXPECT_EQ(names.NameOf(names.MemsetNameId()), "[CUDA memset]");
  EXPECT_EQ(names.NameOf(names.SyncNameId()), "[CUDA synchronization]");
  EXPECT_EQ(names.NameOf(names.ApiNameId(kKindRuntime, 211)), "cudaLaunchKernel");
  EXPECT_EQ(names.ApiNameId(kKindRuntime, 211), names.ApiNameId(kKindRuntime, 211));
  // Past the dense table: its own map, the same id each time.
  const uint32_t far = names.ApiNameId(kKindDriver, 100000);
  EXPECT_EQ(names.NameOf(far), "cbid#100000");
  EXPECT_EQ(names.ApiNameId(kKindDriver, 100000), far);
  EXPECT_EQ(names.ApiNameId(kKindRuntime, 100000), far) << "the same text, so the same id";
  EXPECT_EQ(names.size(), 7u);
}

TEST(NameTableTest, MangledTableKeepsKernelNamesAsWritten) {
  NameTable names(/*mangled=*/true);
  names.OnStrings(Entries({{0x10, "_Z4gemmv"}}));
  EXPECT_EQ(names.NameOf(names.KernelNameId(names.KernelStringIndex(0x10), 0x10)), "_Z4gemmv");
}

TEST(NameTableTest, PointersWithNoEntryGetPlaceholdersNamingThem) {
  NameTable names(/*mangled=*/false);
  const uint32_t k = names.KernelNameId(-1, 0xabc);
  EXPECT_EQ(names.NameOf(k), "<unresolved kernel name 0xabc>");
  EXPECT_EQ(names.KernelNameId(-1, 0xabc), k);
  EXPECT_EQ(names.NameOf(names.MarkerStringId(0xdef, false)), "<unresolved range name 0xdef>");
  EXPECT_EQ(names.NameOf(names.MarkerStringId(0xdef, true)), "<unresolved domain 0xdef>");
  EXPECT_EQ(names.NameOf(names.MarkerStringId(0, false)), "(unnamed)");
  EXPECT_EQ(names.NameOf(names.MarkerStringId(0, true)), "");
  EXPECT_EQ(names.Annotation(42), "external#42");
}

// A range name read before its entry arrives is a placeholder; once the entry is read, the
// marker cache is dropped and the text is found.
TEST(NameTableTest, MarkerNamesAndAnnotationsFollowTheEntries) {
  NameTable names(/*mangled=*/false);
  EXPECT_EQ(names.NameOf(names.MarkerStringId(0x50, false)), "<unresolved range name 0x50>");
  names.OnStrings(Entries({{0x50, "forward"}, {7, "step 7"}}));
  EXPECT_EQ(names.NameOf(names.MarkerStringId(0x50, false)), "forward");
  EXPECT_EQ(names.NameOf(names.MarkerStringId(0x50, true)), "forward");
  EXPECT_EQ(names.Annotation(7), "step 7");
}

}  // namespace
}  // namespace cupmon::decoder

// Tests for the huge-page mappings and ByteBuffer (base/src/huge_pages.cc): alignment, the advice,
// reuse of released mappings, and growth without zeroing.
#include "cupmon/base/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace cupmon {
namespace {

// A ByteBuffer grows without zeroing: its new bytes keep what the memory held (here, what the
// buffer held before it shrank), which is the point of decoding into one.
TEST(HugePagesTest, ByteBufferGrowsWithoutZeroing) {
  ByteBuffer b(4096, 0xAB);
  b.resize(16);
  b.resize(4096);
  const std::vector<uint8_t> stale(4096, 0xAB);
  EXPECT_EQ(std::memcmp(b.data(), stale.data(), stale.size()), 0);
  std::vector<uint8_t> v(4096, 0xAB);
  v.resize(16);
  v.resize(4096);
  EXPECT_EQ(v[100], 0);  // the standard allocator's resize zeroes
}

// The mapping of /proc/self/smaps that holds `p`: its "VmFlags:" line ("" when not found).
std::string VmFlagsOf(const void* p) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return "";
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  std::string flags;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line, "%lx-%lx ", &begin, &end) == 2) {  // a mapping's first line
      inside = at >= begin && at < end;
    } else if (inside && std::strncmp(line, "VmFlags:", 8) == 0) {
      flags = line;
      break;
    }
  }
  std::fclose(f);
  return flags;
}

// A ByteBuffer of 2 MiB or more lives in a mapping of whole huge pages (MapHugeBytes): it starts
// on a 2 MiB boundary, the kernel has the huge-page advice ("hg" in smaps' VmFlags), and growing,
// shrinking and freeing it through the vector keep the bytes, as with any allocator.
TEST(HugePagesTest, LargeByteBuffersAreHugePageMappings) {
  if (!CUPMON_HUGE_MAPPINGS) GTEST_SKIP() << "built with AddressSanitizer: buffers stay on its heap";
  ByteBuffer small(size_t{64} << 10);
  ByteBuffer b(size_t{3} << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (size_t{2} << 20), 0u);
  if (FILE* thp = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
    std::fclose(thp);  // a kernel with THP: the advice shows in the mapping's flags
    EXPECT_NE(VmFlagsOf(b.data()).find(" hg"), std::string::npos) << VmFlagsOf(b.data());
    EXPECT_EQ(VmFlagsOf(small.data()).find(" hg"), std::string::npos) << VmFlagsOf(small.data());
  }
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 7);
  b.resize(size_t{9} << 20);  // reallocates into a larger mapping
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (size_t{2} << 20), 0u);
  size_t wrong = 0;
  for (size_t i = 0; i < (size_t{3} << 20); ++i) wrong += b[i] != static_cast<uint8_t>(i * 7);
  EXPECT_EQ(wrong, 0u);
  b.back() = 1;  // the last byte of the mapping's whole pages is writable
  b.resize(1000);
  b.shrink_to_fit();  // back to the standard allocator
  for (size_t i = 0; i < b.size(); ++i) wrong += b[i] != static_cast<uint8_t>(i * 7);
  EXPECT_EQ(wrong, 0u);
  EXPECT_THROW(MapHugeBytes(SIZE_MAX - 4096), std::bad_alloc);
}

// Whether some mapping of this process covers `p`.
bool Mapped(const void* p) {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return false;
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool found = false;
  char line[512];
  while (!found && std::fgets(line, sizeof line, f)) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line, "%lx-%lx ", &begin, &end) == 2) found = at >= begin && at < end;
  }
  std::fclose(f);
  return found;
}

// A released huge mapping is kept for the next one asked for (its pages stay faulted in): the
// smallest kept mapping that fits, trimmed to the whole pages asked for. One larger than what the
// cache may hold is unmapped at once.
TEST(HugePagesTest, ReleasedHugeMappingsAreReusedTrimmedAndBounded) {
  constexpr size_t kMiB = size_t{1} << 20;
  // Lengths that no other test maps, so that the mappings this test releases are the ones that fit.
  void* a = MapHugeBytes(46 * kMiB);
  static_cast<uint8_t*>(a)[46 * kMiB - 1] = 7;
  UnmapHugeBytes(a, 46 * kMiB);
  EXPECT_TRUE(Mapped(a));
  void* b = MapHugeBytes(46 * kMiB - 4096);  // the same whole huge pages
  EXPECT_EQ(b, a);
  EXPECT_EQ(static_cast<uint8_t*>(b)[46 * kMiB - 1], 7);  // the same page, not a fresh one
  UnmapHugeBytes(b, 46 * kMiB - 4096);
  void* c = MapHugeBytes(40 * kMiB + 1);  // 42 MiB of whole pages, from the kept 46
  EXPECT_EQ(c, a);
  EXPECT_TRUE(Mapped(static_cast<uint8_t*>(c) + 42 * kMiB - 1));
  EXPECT_FALSE(Mapped(static_cast<uint8_t*>(c) + 42 * kMiB));  // the excess is unmapped
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % (2 * kMiB), 0u);
  UnmapHugeBytes(c, 40 * kMiB + 1);
  void* d = MapHugeBytes(600 * kMiB);  // above the cache's bound of 512 MiB
  EXPECT_NE(d, a);
  UnmapHugeBytes(d, 600 * kMiB);
  EXPECT_FALSE(Mapped(d));
  EXPECT_TRUE(Mapped(a));  // still kept
}

// A zero-filled mapping is never a kept one, even when one of its size was just released with
// bytes written in it; once released it is kept like any other.
TEST(HugePagesTest, AZeroedHugeMappingIsFreshAndIsKeptOnceReleased) {
  constexpr size_t kMiB = size_t{1} << 20;
  // A length that no other test maps.
  void* a = MapHugeBytes(38 * kMiB);
  std::memset(a, 0xAB, 38 * kMiB);
  UnmapHugeBytes(a, 38 * kMiB);
  ASSERT_TRUE(Mapped(a));  // kept, its bytes 0xAB
  auto* z = static_cast<uint8_t*>(MapZeroedHugeBytes(38 * kMiB));
  EXPECT_NE(static_cast<void*>(z), a);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(z) % (2 * kMiB), 0u);
  size_t nonzero = 0;
  for (size_t i = 0; i < 38 * kMiB; i += 4096) nonzero += z[i] != 0 || z[i + 4095] != 0;
  EXPECT_EQ(nonzero, 0u);
  z[0] = 5;
  UnmapHugeBytes(z, 38 * kMiB);
  EXPECT_TRUE(Mapped(z));  // kept too
  void* b = MapHugeBytes(38 * kMiB);
  void* c = MapHugeBytes(38 * kMiB);
  EXPECT_TRUE((b == a && c == z) || (b == z && c == a));  // both kept mappings are handed out
  UnmapHugeBytes(b, 38 * kMiB);
  UnmapHugeBytes(c, 38 * kMiB);
}

}  // namespace
}  // namespace cupmon

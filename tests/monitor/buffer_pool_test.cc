// Tests for BufferPool: bounded, exhaustion counted, buffers reused.
#include "cupmon/monitor/buffer_pool.h"

#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace cupmon {
namespace {

TEST(BufferPoolTest, ExhaustionReturnsNullAndIsCounted) {
  auto pool = BufferPool::Create(4096, 3);
  ASSERT_TRUE(pool);
  BufferPool& p = **pool;
  std::set<uint8_t*> got;
  for (int i = 0; i < 3; ++i) got.insert(p.Acquire());
  EXPECT_EQ(got.size(), 3u);
  EXPECT_FALSE(got.contains(nullptr));
  EXPECT_EQ(p.Acquire(), nullptr);
  EXPECT_EQ(p.exhausted(), 1u);
  EXPECT_EQ(p.in_use(), 3u);
  uint8_t* b = *got.begin();
  p.Release(b);
  EXPECT_EQ(p.Acquire(), b);  // the only free slot
  EXPECT_FALSE(p.Owns(b + 1));
  EXPECT_FALSE(p.Owns(nullptr));
}

TEST(BufferPoolTest, ConcurrentAcquireNeverHandsOutABufferTwice) {
  auto pool = BufferPool::Create(4096, 8);
  ASSERT_TRUE(pool);
  BufferPool& p = **pool;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        uint8_t* b = p.Acquire();
        if (!b) continue;
        // Stamp the buffer: another holder would overwrite the stamp.
        b[0] = static_cast<uint8_t>(t);
        for (int k = 0; k < 10; ++k)
          if (b[0] != t) ++errors;
        p.Release(b);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(p.in_use(), 0u);
}

TEST(BufferPoolTest, ReleaseMemoryOnlyWhenNothingIsHandedOutAndBuffersReadAsZeros) {
  auto pool = BufferPool::Create(64 << 10, 4);
  ASSERT_TRUE(pool) << pool.error().message;
  uint8_t* b = (*pool)->Acquire();
  ASSERT_NE(b, nullptr);
  std::memset(b, 0xab, 64 << 10);
  EXPECT_FALSE((*pool)->ReleaseMemory());  // a buffer is out: nothing is given back
  EXPECT_EQ(b[100], 0xab);
  (*pool)->Release(b);
  EXPECT_TRUE((*pool)->ReleaseMemory());
  uint8_t* again = (*pool)->Acquire();
  ASSERT_NE(again, nullptr);
  for (size_t i = 0; i < (64u << 10); i += 4096) ASSERT_EQ(again[i], 0) << i;  // pages were dropped
}

}  // namespace
}  // namespace cupmon

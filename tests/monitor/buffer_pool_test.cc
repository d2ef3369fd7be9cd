// Tests for BufferPool: bounded, exhaustion counted, buffers reused.
#include "cupmon/monitor/buffer_pool.h"

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

}  // namespace
}  // namespace cupmon

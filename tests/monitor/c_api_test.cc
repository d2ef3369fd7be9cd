// Tests of the C API through libcupmon.so. Portable: on a machine without a GPU cupmon_start
// must fail cleanly with a message; with a GPU it starts, refuses a second start, and stops.
#include "cupmon/cupmon.h"

#include <unistd.h>

#include <cstddef>

#include <string>

#include <gtest/gtest.h>

namespace {

TEST(CApiTest, ConfigInitFillsDefaults) {
  cupmon_config c;
  cupmon_config_init(&c);
  EXPECT_EQ(c.struct_size, sizeof(cupmon_config));
  EXPECT_EQ(c.buffer_bytes, 4ull << 20);
  EXPECT_EQ(c.pool_bytes, 64ull << 20);
  EXPECT_EQ(c.flush_ms, 1000u);
  EXPECT_EQ(c.output_dir, nullptr);
}

TEST(CApiTest, CallsBeforeStartFailWithAMessage) {
  EXPECT_EQ(cupmon_stop(), -1);
  EXPECT_NE(std::string(cupmon_last_error()), "");
  EXPECT_EQ(cupmon_flush(), -1);
  cupmon_config c{};  // not initialised
  EXPECT_EQ(cupmon_start(&c), -1);
  EXPECT_NE(std::string(cupmon_last_error()).find("cupmon_config_init"), std::string::npos);
}

TEST(CApiTest, SizedStatsRefuseBadArgumentsAndANeverStartedMonitor) {
  // The layout callers of any version rely on: `filled` first, then cupmon_stats unchanged.
  static_assert(offsetof(cupmon_stats_sized, filled) == 0);
  static_assert(offsetof(cupmon_stats_sized, base) == 8);
  EXPECT_EQ(cupmon_get_stats_sized(nullptr, sizeof(cupmon_stats_sized)), -1);
  EXPECT_NE(std::string(cupmon_last_error()).find("null"), std::string::npos);
  cupmon_stats_sized s{};
  s.filled = 12345;
  EXPECT_EQ(cupmon_get_stats_sized(&s, 4), -1);
  EXPECT_NE(std::string(cupmon_last_error()).find("below 8"), std::string::npos);
  EXPECT_EQ(s.filled, 12345u) << "nothing is written on error";
  // This test binary starts no monitor before this test (gtest runs tests in declaration order).
  EXPECT_EQ(cupmon_get_stats_sized(&s, sizeof(s)), -1);
  EXPECT_NE(std::string(cupmon_last_error()).find("never started"), std::string::npos);
}

TEST(CApiTest, StartEitherRunsOrExplainsWhyNot) {
  cupmon_config c;
  cupmon_config_init(&c);
  const std::string dir = std::string("/tmp/cupmon-c-api-test-") + std::to_string(getpid());
  c.output_dir = dir.c_str();
  if (cupmon_start(&c) != 0) {
    // No GPU here (CUPTI error 999) or no libcupti: one clear reason, and the process goes on.
    EXPECT_NE(std::string(cupmon_last_error()), "");
    GTEST_SKIP() << "cupmon_start failed as expected without a GPU: " << cupmon_last_error();
  }
  EXPECT_EQ(cupmon_start(&c), -1);
  EXPECT_NE(std::string(cupmon_last_error()).find("already running"), std::string::npos);
  cupmon_stats s;
  EXPECT_EQ(cupmon_get_stats(&s), 0);
  EXPECT_EQ(s.running, 1u);
  EXPECT_EQ(cupmon_flush(), 0);
  EXPECT_EQ(cupmon_stop(), 0);
  EXPECT_EQ(cupmon_get_stats(&s), 0);
  EXPECT_EQ(s.running, 0u);
  cupmon_stats_sized sized{};
  EXPECT_EQ(cupmon_get_stats_sized(&sized, sizeof(sized)), 0);
  EXPECT_EQ(sized.filled, sizeof(sized));
  EXPECT_EQ(sized.base.records, s.records);
  EXPECT_EQ(sized.base.running, 0u);
  EXPECT_EQ(sized.lost_records, 0u) << "nothing was lost on a healthy disk";
  // An older caller that knows only `filled` and the base struct gets exactly that much.
  struct Older {
    uint64_t filled;
    cupmon_stats base;
    uint64_t guard;
  } older{};
  older.guard = 0xfeedfacecafebeefull;
  EXPECT_EQ(cupmon_get_stats_sized(reinterpret_cast<cupmon_stats_sized*>(&older),
                                   offsetof(Older, guard)),
            0);
  EXPECT_EQ(older.filled, offsetof(Older, guard));
  EXPECT_EQ(older.base.records, s.records);
  EXPECT_EQ(older.guard, 0xfeedfacecafebeefull) << "written past the caller's size";
}

}  // namespace

// Tests for configuration parsing: CUPMON_* variables, sizes, kinds, normalisation.
#include "cupmon/monitor/config.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

namespace cupmon {
namespace {

std::map<std::string, std::string>* g_env;
const char* FakeGetenv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

TEST(ConfigTest, SizesAcceptSuffixes) {
  EXPECT_EQ(*ParseSize("4M"), 4ull << 20);
  EXPECT_EQ(*ParseSize("512K"), 512ull << 10);
  EXPECT_EQ(*ParseSize("2G"), 2ull << 30);
  EXPECT_EQ(*ParseSize("8MiB"), 8ull << 20);
  EXPECT_EQ(*ParseSize("123"), 123u);
  EXPECT_FALSE(ParseSize("12Q"));
  EXPECT_FALSE(ParseSize("M"));
  EXPECT_FALSE(ParseSize(""));
  EXPECT_FALSE(ParseSize("99999999999999999999G"));
}

TEST(ConfigTest, GoodEnvironmentIsApplied) {
  std::map<std::string, std::string> env = {
      {"CUPMON_OUTPUT_DIR", "/data/x"}, {"CUPMON_KINDS", "concurrent_kernel, memcpy"},
      {"CUPMON_BUFFER_SIZE", "8M"},     {"CUPMON_POOL_SIZE", "128M"},
      {"CUPMON_FLUSH_MS", "250"},       {"CUPMON_FILE_SIZE", "16M"},
      {"CUPMON_RETENTION_BYTES", "1G"}, {"CUPMON_RETENTION_FILES", "7"},
      {"CUPMON_ZSTD_LEVEL", "3"},       {"CUPMON_ENCODING", "zstd"},
      {"CUPMON_ZERO_BUFFERS", "1"},     {"CUPMON_REBIND_IMPORTS", "0"}};
  g_env = &env;
  MonitorConfig c;
  std::vector<std::string> warnings;
  ApplyEnvironment(&c, &warnings, FakeGetenv);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(c.output_dir, "/data/x");
  EXPECT_EQ(c.kinds, (std::vector<uint32_t>{10, 1}));
  EXPECT_EQ(c.buffer_bytes, 8ull << 20);
  EXPECT_EQ(c.pool_bytes, 128ull << 20);
  EXPECT_EQ(c.flush_ms, 250u);
  EXPECT_EQ(c.file_bytes, 16ull << 20);
  EXPECT_EQ(c.retention_bytes, 1ull << 30);
  EXPECT_EQ(c.retention_files, 7u);
  EXPECT_EQ(c.zstd_level, 3);
  EXPECT_EQ(c.encoding, Encoding::kZstd);
  EXPECT_TRUE(c.zero_buffers);
  EXPECT_FALSE(c.rebind_imports);
}

TEST(ConfigTest, BadValuesNameTheVariableAndKeepTheDefault) {
  std::map<std::string, std::string> env = {
      {"CUPMON_BUFFER_SIZE", "12Q"}, {"CUPMON_FLUSH_MS", "-5"},     {"CUPMON_ZSTD_LEVEL", "99"},
      {"CUPMON_ENCODING", "lz4"},    {"CUPMON_KINDS", "concurrent_kernel,bogus"},
      {"CUPMON_ZERO_BUFFERS", "maybe"}, {"CUPMON_REBIND_IMPORTS", "sometimes"}};
  g_env = &env;
  MonitorConfig c;
  const MonitorConfig d;
  std::vector<std::string> warnings;
  ApplyEnvironment(&c, &warnings, FakeGetenv);
  ASSERT_EQ(warnings.size(), 7u);
  for (const char* var : {"CUPMON_BUFFER_SIZE", "CUPMON_FLUSH_MS", "CUPMON_ZSTD_LEVEL",
                          "CUPMON_ENCODING", "CUPMON_KINDS", "CUPMON_ZERO_BUFFERS",
                          "CUPMON_REBIND_IMPORTS"}) {
    bool named = false;
    for (const auto& w : warnings) named |= w.find(var) != std::string::npos;
    EXPECT_TRUE(named) << var;
  }
  EXPECT_EQ(c.buffer_bytes, d.buffer_bytes);
  EXPECT_EQ(c.flush_ms, d.flush_ms);
  EXPECT_EQ(c.zstd_level, d.zstd_level);
  EXPECT_EQ(c.encoding, d.encoding);
  EXPECT_EQ(c.kinds, (std::vector<uint32_t>{10}));  // the good kind is kept
  EXPECT_FALSE(c.zero_buffers);
  EXPECT_TRUE(c.rebind_imports);
}

TEST(ConfigTest, NoKnownKindKeepsTheDefaultKinds) {
  std::map<std::string, std::string> env = {{"CUPMON_KINDS", "bogus,,nope"}};
  g_env = &env;
  MonitorConfig c;
  std::vector<std::string> warnings;
  ApplyEnvironment(&c, &warnings, FakeGetenv);
  EXPECT_EQ(c.kinds, MonitorConfig().kinds);
  EXPECT_EQ(warnings.size(), 3u);
}

TEST(ConfigTest, CuptiAttributesAreParsed) {
  std::map<std::string, std::string> env = {{"CUPMON_CUPTI_PER_THREAD_BUFFERS", "0"},
                                            {"CUPMON_CUPTI_DEVICE_BUFFER_SIZE", "32M"},
                                            {"CUPMON_CUPTI_DEVICE_BUFFER_PREALLOCATE", "16"},
                                            {"CUPMON_CUPTI_DEVICE_BUFFER_POOL_LIMIT", "500"}};
  g_env = &env;
  MonitorConfig c;
  EXPECT_FALSE(c.cupti_attributes.Any());  // by default every attribute is CUPTI's
  std::vector<std::string> warnings;
  ApplyEnvironment(&c, &warnings, FakeGetenv);
  NormalizeConfig(&c, &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(c.cupti_attributes.per_thread_buffers, false);
  EXPECT_EQ(c.cupti_attributes.device_buffer_bytes, 32ull << 20);
  EXPECT_EQ(c.cupti_attributes.device_buffer_preallocate, 16u);
  EXPECT_EQ(c.cupti_attributes.device_buffer_pool_limit, 500u);
  env = {{"CUPMON_CUPTI_PER_THREAD_BUFFERS", "on"}};
  MonitorConfig d;
  ApplyCuptiAttributeEnvironment(&d, &warnings, FakeGetenv);
  EXPECT_EQ(d.cupti_attributes.per_thread_buffers, true);
  EXPECT_FALSE(d.cupti_attributes.device_buffer_bytes.has_value());
}

TEST(ConfigTest, BadCuptiAttributesNameTheVariableAndKeepCuptisDefault) {
  std::map<std::string, std::string> env = {{"CUPMON_CUPTI_PER_THREAD_BUFFERS", "2"},
                                            {"CUPMON_CUPTI_DEVICE_BUFFER_SIZE", "4K"},
                                            {"CUPMON_CUPTI_DEVICE_BUFFER_PREALLOCATE", "-1"},
                                            {"CUPMON_CUPTI_DEVICE_BUFFER_POOL_LIMIT", "0"}};
  g_env = &env;
  MonitorConfig c;
  std::vector<std::string> warnings;
  ApplyEnvironment(&c, &warnings, FakeGetenv);
  ASSERT_EQ(warnings.size(), 4u);
  for (const char* var : {"CUPMON_CUPTI_PER_THREAD_BUFFERS", "CUPMON_CUPTI_DEVICE_BUFFER_SIZE",
                          "CUPMON_CUPTI_DEVICE_BUFFER_PREALLOCATE",
                          "CUPMON_CUPTI_DEVICE_BUFFER_POOL_LIMIT"}) {
    bool named = false;
    for (const auto& w : warnings) named |= w.find(var) != std::string::npos;
    EXPECT_TRUE(named) << var;
  }
  EXPECT_FALSE(c.cupti_attributes.Any());
  env = {{"CUPMON_CUPTI_DEVICE_BUFFER_SIZE", "2G"}, {"CUPMON_CUPTI_DEVICE_BUFFER_POOL_LIMIT", "5000"}};
  warnings.clear();
  ApplyEnvironment(&c, &warnings, FakeGetenv);
  EXPECT_EQ(warnings.size(), 2u);
  EXPECT_FALSE(c.cupti_attributes.Any());
}

TEST(ConfigTest, PreallocationAtOrAboveThePoolLimitIsDropped) {
  MonitorConfig c;
  c.cupti_attributes.device_buffer_preallocate = 8;
  c.cupti_attributes.device_buffer_pool_limit = 8;
  std::vector<std::string> warnings;
  NormalizeConfig(&c, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("pool limit 8"), std::string::npos) << warnings[0];
  EXPECT_FALSE(c.cupti_attributes.device_buffer_preallocate.has_value());
  EXPECT_EQ(c.cupti_attributes.device_buffer_pool_limit, 8u);
  // Without a limit set, CUPTI's 250 is the bound.
  MonitorConfig d;
  d.cupti_attributes.device_buffer_preallocate = 250;
  warnings.clear();
  NormalizeConfig(&d, &warnings);
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_FALSE(d.cupti_attributes.device_buffer_preallocate.has_value());
  MonitorConfig e;
  e.cupti_attributes.device_buffer_preallocate = 249;
  warnings.clear();
  NormalizeConfig(&e, &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(e.cupti_attributes.device_buffer_preallocate, 249u);
}

TEST(ConfigTest, NormalizeFixesImpossibleSizes) {
  MonitorConfig c;
  c.buffer_bytes = 100;  // below 64K
  c.pool_bytes = 1;
  std::vector<std::string> warnings;
  NormalizeConfig(&c, &warnings);
  EXPECT_EQ(c.buffer_bytes, MonitorConfig().buffer_bytes);
  EXPECT_EQ(c.pool_bytes, 2 * c.buffer_bytes);
  EXPECT_EQ(warnings.size(), 2u);
  EXPECT_FALSE(c.output_dir.empty());
}

}  // namespace
}  // namespace cupmon

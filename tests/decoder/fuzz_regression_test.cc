// Replays the fuzzer's seed corpus and every input it found that crashed (tests/fuzz/corpus/,
// tests/decoder/fuzz_crashes/) through the fuzzer's own entry, in the normal build.
#include <gtest/gtest.h>

#include <filesystem>

#include "decoder_fuzz_entry.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file()) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FuzzRegressionTest, SeedCorpusDecodes) {
  const auto files = FilesIn(std::string(CUPMON_SOURCE_DIR) + "/tests/fuzz/corpus");
  ASSERT_GE(files.size(), 3u);
  uint64_t rows = 0;
  for (const auto& f : files) {
    const auto bytes = testing::ReadAll(f);
    rows += fuzz::DecodeFuzzInput(bytes.data(), bytes.size());
  }
  EXPECT_GT(rows, 0u);  // the real-format seeds decode to rows
}

TEST(FuzzRegressionTest, CrashInputsNoLongerCrash) {
  for (const auto& f : FilesIn(std::string(CUPMON_SOURCE_DIR) + "/tests/decoder/fuzz_crashes")) {
    SCOPED_TRACE(f);
    const auto bytes = testing::ReadAll(f);
    fuzz::DecodeFuzzInput(bytes.data(), bytes.size());
  }
}

}  // namespace
}  // namespace cupmon::decoder

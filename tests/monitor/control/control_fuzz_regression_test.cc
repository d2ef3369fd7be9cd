// Replays the control fuzzer's seed corpus (tests/fuzz/control_corpus/) and every input it stopped
// on (tests/monitor/control/fuzz_crashes/) through the fuzzer's own entry, in the normal build, and
// checks what the seeds are known to produce.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "control_fuzz_entry.h"

namespace cupmon::control {
namespace {

std::map<std::string, std::string> FilesIn(const std::string& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    out[e.path().filename().string()] =
        std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  return out;
}

fuzz::ControlFuzzResult Replay(const std::string& bytes) {
  return fuzz::RunControlFuzzInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

TEST(ControlFuzzRegressionTest, SeedCorpusGivesTheExpectedReplies) {
  const auto seeds = FilesIn(std::string(CUPMON_SOURCE_DIR) + "/tests/fuzz/control_corpus");
  ASSERT_GE(seeds.size(), 20u);
  // No request may make libprotobuf write to stderr (the application's, in the monitor).
  auto* previous = google::protobuf::SetLogHandler(fuzz::CountProtobufLogs);
  const uint64_t logged_before = fuzz::ProtobufLogMessages().load();
  for (const auto& [name, bytes] : seeds) {
    SCOPED_TRACE(name);
    (void)Replay(bytes);  // every seed, including any a fuzzing run added
  }
  EXPECT_EQ(fuzz::ProtobufLogMessages().load(), logged_before);
  google::protobuf::SetLogHandler(previous);
  // A few seeds whose outcome is known: valid requests are served, bad ones refused and, where the
  // framing is broken, the connection ends.
  const auto expect = [&](const char* name, uint64_t ok, uint64_t errors, bool closed) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(seeds.contains(name));
    const fuzz::ControlFuzzResult r = Replay(seeds.at(name));
    EXPECT_EQ(r.ok_replies, ok);
    EXPECT_EQ(r.error_replies, errors);
    EXPECT_EQ(r.closed, closed);
  };
  expect("status", 1, 0, false);
  expect("pipelined", 6, 0, false);
  expect("target-refuses", 0, 4, false);
  expect("target-throws", 0, 3, false);
  expect("stopped-plane", 0, 2, false);
  expect("duration-huge", 0, 1, false);
  expect("at-int64-min", 0, 1, false);
  expect("at-int64-max", 0, 1, false);
  expect("unknown-kind", 0, 1, false);
  expect("garbage", 0, 1, true);
  expect("unknown-request-type", 0, 1, true);
  expect("empty-body", 0, 1, true);
  expect("oversized-prefix", 0, 1, true);
  expect("oversized-small-limit", 0, 1, true);
  expect("kinds-invalid-utf8", 0, 1, true);       // malformed, without protobuf's log line
  expect("kinds-valid-utf8-unknown", 0, 1, false);  // valid UTF-8: an unknown kind, no close
  expect("truncated", 0, 0, false);
  EXPECT_EQ(Replay(seeds.at("open-window")).windows_opened, 1u);
  EXPECT_EQ(Replay(seeds.at("duration-huge")).windows_opened, 0u);
}

// Inputs the fuzzer stopped on. Undefined behaviour (a signed overflow) only shows in the sanitizer
// build (CUPMON_SANITIZE); the normal build checks that the run completes.
TEST(ControlFuzzRegressionTest, CrashInputsNoLongerCrash) {
  for (const auto& [name, bytes] :
       FilesIn(std::string(CUPMON_SOURCE_DIR) + "/tests/monitor/control/fuzz_crashes")) {
    SCOPED_TRACE(name);
    (void)Replay(bytes);
  }
}

}  // namespace
}  // namespace cupmon::control

// Replays the fuzzers' corpora and every input they found that crashed (tests/fuzz/corpus/,
// tests/fuzz/record_corpus/, tests/fuzz/torch_dump_corpus/, tests/decoder/fuzz_crashes/) through
// the fuzzers' own entries, in the normal build.
#include <gtest/gtest.h>

#include <filesystem>

#include "decoder_fuzz_entry.h"
#include "recording_builder.h"
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

// The sum of what `entry` returns over the files of tests/fuzz/<corpus> (at least `at_least`).
uint64_t SumOverCorpus(const std::string& corpus, size_t at_least,
                       uint64_t (*entry)(const uint8_t*, size_t)) {
  const auto files = FilesIn(std::string(CUPMON_SOURCE_DIR) + "/tests/fuzz/" + corpus);
  EXPECT_GE(files.size(), at_least) << corpus;
  uint64_t sum = 0;
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    const auto bytes = testing::ReadAll(f);
    sum += entry(bytes.data(), bytes.size());
  }
  return sum;
}

TEST(FuzzRegressionTest, SeedCorpusDecodes) {
  // The real-format seeds decode to rows.
  EXPECT_GT(SumOverCorpus("corpus", 3, fuzz::DecodeFuzzInput), 0u);
}

TEST(FuzzRegressionTest, RecordSeedCorpusDecodes) {
  EXPECT_GT(SumOverCorpus("record_corpus", 4, fuzz::DecodeRawBufferFuzzInput), 0u);
}

// The step finder over the same seeds: the kernels, memcpys and memsets in them are read.
TEST(FuzzRegressionTest, StepsOverRecordSeedCorpus) {
  EXPECT_GT(SumOverCorpus("record_corpus", 4, fuzz::DecodeStepsFuzzInput), 0u);
}

TEST(FuzzRegressionTest, TorchDumpSeedCorpusDecodes) {
  EXPECT_GT(SumOverCorpus("torch_dump_corpus", 5, fuzz::DecodeTorchDumpFuzzInput), 0u);
}

// Inputs the fuzzers stopped on, replayed through the entry that found them: files named
// "record-*" are cupmon_record_fuzz inputs, "steps-*" cupmon_steps_fuzz inputs, the others
// cupmon_decoder_fuzz inputs. Undefined behaviour (e.g. a signed overflow) only shows in the
// sanitizer build (CUPMON_SANITIZE).
TEST(FuzzRegressionTest, CrashInputsNoLongerCrash) {
  for (const auto& f : FilesIn(std::string(CUPMON_SOURCE_DIR) + "/tests/decoder/fuzz_crashes")) {
    SCOPED_TRACE(f);
    const auto bytes = testing::ReadAll(f);
    const std::string name = std::filesystem::path(f).filename().string();
    if (name.starts_with("record-"))
      fuzz::DecodeRawBufferFuzzInput(bytes.data(), bytes.size());
    else if (name.starts_with("steps-"))
      fuzz::DecodeStepsFuzzInput(bytes.data(), bytes.size());
    else
      fuzz::DecodeFuzzInput(bytes.data(), bytes.size());
  }
}

// Found by cupmon_record_fuzz: a record whose end (or start) is near or past 2^63 ns, with a
// calibration sample, overflowed ClockMap's int64 extrapolation (clock_map.cc, MapIn) into a huge
// negative wall time, and the relative-time filter's difference after it (undefined behaviour;
// UBSan stops there). Such times (>= 2^62 ns, after 2116) are unknown times; and whatever the
// mapping does, a timed row must not end before it starts on the wall clock.
class CollectingSink : public RowSink {
 public:
  void OnRow(const Row& row) override { rows.push_back(row); }
  std::vector<Row> rows;
};

TEST(FuzzRegressionTest, TimesPastInt64DoNotWrapTheWallClock) {
  CollectingSink sink;
  TraceBuilder builder(TraceFilter{}, &sink);
  pb::RecordingHeader header;
  header.set_cupti_api_version(130001);
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  for (uint32_t k = 0; k < RecordSizeTable::kMaxKind; ++k) {
    if (!sizes.Size(k)) continue;
    auto* rs = header.add_record_sizes();
    rs->set_kind(k);
    rs->set_size(sizes.Size(k));
  }
  const std::string path = "t";
  builder.OnHeader(header, ChunkOrigin{&path, 0, 0});
  pb::Calibration calibration;
  auto* sample = calibration.add_samples();
  sample->set_cupti_ns(1000);
  sample->set_realtime_ns(2000);
  builder.OnCalibration(calibration);
  constexpr uint64_t kPast63 = (uint64_t{1} << 63) + 8;
  testing::BufferBuilder b;
  constexpr uint64_t kNearLimit = (uint64_t{1} << 62) - 10;  // the last times still placed
  b.Runtime(2000, kPast63, 1, 211)
      .Kernel(3000, UINT64_MAX, 1, 0x10)
      .Kernel(kPast63, kPast63 + 5, 2, 0x10)
      .Kernel(uint64_t{1} << 62, (uint64_t{1} << 62) + 5, 3, 0x10)
      .Kernel(kNearLimit, kNearLimit + 5, 4, 0x10);
  builder.OnRawBuffer(RawBufferPrefix{}, b.bytes(), ChunkOrigin{&path, 0, 0});
  builder.Finish();
  ASSERT_EQ(sink.rows.size(), 5u);
  EXPECT_EQ(builder.counts().unknown_timestamps, 4u);
  for (const Row& r : sink.rows) {
    SCOPED_TRACE(r.start);
    if (!r.valid_time) continue;
    EXPECT_GE(r.wall_end, r.wall_start);
    if (r.api.found && r.api.valid_time) {
      EXPECT_GE(r.api.wall_end, r.api.wall_start);
    }
  }
  EXPECT_TRUE(sink.rows.back().valid_time);  // 1 ns CUPTI = 1 ns wall, offset +1000
  EXPECT_EQ(sink.rows.back().wall_start, static_cast<int64_t>(kNearLimit) + 1000);
}

}  // namespace
}  // namespace cupmon::decoder

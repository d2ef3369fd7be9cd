// One damaged byte costs at most the chunk that holds it: every bit flip in the preamble region of
// a real recording, random flips over its whole files, and every byte of a freshly written
// single-file recording are decoded through the public reader and trace builder, and the kernels
// lost are checked against the kernels of the chunk holding the byte (from the chunk layout).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>

#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/trace_builder.h"
#include "cupmon/format/chunk_scanner.h"
#include "cupmon/format/raw_codec.h"
#include "cupmon/format/record_sizes.h"
#include "../sanitized.h"
#include "recording_builder.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {

namespace fs = std::filesystem;
using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

class KernelCountingSink : public RowSink {
 public:
  void OnRow(const Row& row) override { kernels += row.type == RowType::kKernel; }
  bool NeedsWallTimes() const override { return false; }
  uint64_t kernels = 0;
};

// Kernel rows the decoder shows for every recording in `dir`, as cupmon-decode would read it.
uint64_t KernelsShown(const std::string& dir) {
  auto listing = ListRecordings(dir);
  if (!listing) return 0;
  uint64_t kernels = 0;
  for (const Recording& r : listing->recordings) {
    KernelCountingSink sink;
    // A short join horizon: it changes which rows are joined, never how many rows are emitted
    // (one per GPU record), and the default's tables cost more to set up than a small decode.
    TraceBuilder builder(TraceFilter{}, &sink, /*horizon=*/256);
    ReadIntegrity integrity;
    ReadRecording(r, builder, &integrity);
    builder.Finish();
    kernels += sink.kernels;
  }
  return kernels;
}

// For each chunk of an undamaged file: [offset, end) and the kernel records it holds.
struct ChunkSpan {
  uint64_t begin = 0, end = 0;
  uint8_t type = 0;
  uint64_t kernels = 0;
};

std::vector<ChunkSpan> ChunkLayout(const std::vector<uint8_t>& bytes) {
  std::vector<ChunkSpan> out;
  ChunkScanner scanner(bytes);
  std::vector<Damage> damage;
  RawBufferDecoder codec;
  std::vector<uint8_t> scratch;
  RecordSizeTable sizes;
  while (auto c = scanner.Next(&damage)) {
    ChunkSpan s{c->offset, c->offset + kChunkHeaderSize + c->payload.size(), c->header.type, 0};
    if (c->header.type == static_cast<uint8_t>(ChunkType::kMetadata)) {
      pb::RecordingHeader h;
      if (codec.Decode(c->header.encoding, c->payload, c->header.uncompressed_length, &scratch) &&
          h.ParseFromArray(scratch.data(), static_cast<int>(scratch.size())))
        for (const auto& rs : h.record_sizes()) sizes.Set(rs.kind(), rs.size());
    } else if (c->header.type == static_cast<uint8_t>(ChunkType::kRawBuffer)) {
      EXPECT_TRUE(codec.Decode(c->header.encoding, c->payload.subspan(kRawBufferPrefixSize),
                               c->header.uncompressed_length, &scratch));
      WalkRecords(scratch, sizes, [&](uint32_t kind, std::span<const uint8_t>) {
        s.kernels += kind == 3 || kind == 10;
      });
    }
    out.push_back(s);
  }
  EXPECT_TRUE(damage.empty());
  return out;
}

const ChunkSpan& ChunkAt(const std::vector<ChunkSpan>& layout, uint64_t offset) {
  for (const ChunkSpan& s : layout)
    if (offset >= s.begin && offset < s.end) return s;
  ADD_FAILURE() << "offset " << offset << " is in no chunk";
  return layout.front();
}

// A copy of a recording directory in which one file's bytes can be damaged and restored.
// `keep_bytes` > 0 cuts each copied file after the first chunk that reaches that offset, as a
// crash would (the bytes kept are the real ones): decoding then takes milliseconds, not tens.
class DamageBench {
 public:
  explicit DamageBench(const std::string& source, uint64_t keep_bytes = 0) {
    for (const auto& e : fs::directory_iterator(source))
      if (e.path().extension() == ".cupmon") {
        const std::string to = dir_.path() + "/" + e.path().filename().string();
        fs::copy_file(e.path(), to);
        files_.push_back(to);
      }
    std::sort(files_.begin(), files_.end());
    for (const auto& f : files_) {
      bytes_.push_back(ReadAll(f));
      if (keep_bytes) {
        for (const ChunkSpan& s : ChunkLayout(bytes_.back()))
          if (s.end >= keep_bytes) {
            bytes_.back().resize(s.end);
            break;
          }
        WriteAll(f, bytes_.back());
      }
      layouts_.push_back(ChunkLayout(bytes_.back()));
    }
    clean_kernels_ = KernelsShown(dir_.path());
  }
  // Flips bit `bit` of byte `offset` of file `file`, decodes, restores the file; returns the
  // kernels lost and the kernels of the chunk holding the byte (the most that may be lost).
  std::pair<uint64_t, uint64_t> Flip(size_t file, uint64_t offset, int bit) {
    std::vector<uint8_t> damaged = bytes_[file];
    damaged[offset] ^= static_cast<uint8_t>(1u << bit);
    WriteAll(files_[file], damaged);
    const uint64_t shown = KernelsShown(dir_.path());
    WriteAll(files_[file], bytes_[file]);
    const uint64_t lost = shown <= clean_kernels_ ? clean_kernels_ - shown : 0;
    EXPECT_LE(shown, clean_kernels_) << "more kernels than the clean recording";
    return {lost, ChunkAt(layouts_[file], offset).kernels};
  }
  size_t files() const { return files_.size(); }
  uint64_t size(size_t file) const { return bytes_[file].size(); }
  uint64_t clean_kernels() const { return clean_kernels_; }
  const std::vector<ChunkSpan>& layout(size_t file) const { return layouts_[file]; }

 private:
  TempDir dir_;
  std::vector<std::string> files_;
  std::vector<std::vector<uint8_t>> bytes_;
  std::vector<std::vector<ChunkSpan>> layouts_;
  uint64_t clean_kernels_ = 0;
};

const std::string kSample = std::string(CUPMON_SOURCE_DIR) + "/tests/data/sample";

// The real H200 sample (format 1.0, two files): its first file's preamble is one metadata chunk,
// stats and calibration (665 bytes). Before the reader took a damaged file's header from the
// recording's other file, a flip there cost that whole file (124,936 of 166,558 kernels).
// The files are cut after 8 KiB (whole chunks) so that 2048 decodes stay quick; with
// CUPMON_BYTE_DAMAGE_FULL=1 the whole files are used (minutes).
TEST(ByteDamageTest, EveryBitFlipInTheFirst2048BytesCostsAtMostItsChunk) {
  const bool full = std::getenv("CUPMON_BYTE_DAMAGE_FULL") != nullptr;
  DamageBench bench(kSample, full ? 0 : 8192);
  ASSERT_EQ(bench.files(), 2u);
  if (full) {
    ASSERT_EQ(bench.clean_kernels(), 166558u);
  }
  ASSERT_GT(bench.clean_kernels(), 0u);
  // The preamble must lie inside the range tried, or this test says nothing about it.
  const auto& layout = bench.layout(0);
  ASSERT_EQ(layout[0].type, static_cast<uint8_t>(ChunkType::kMetadata));
  uint64_t preamble_end = 0;
  for (const ChunkSpan& s : layout) {
    if (s.type == static_cast<uint8_t>(ChunkType::kRawBuffer)) break;
    preamble_end = s.end;
  }
  const uint64_t n = std::max<uint64_t>(2048, preamble_end);
  ASSERT_LE(n, bench.size(0));
  uint64_t worst = 0, worst_at = 0, with_loss = 0;
  // Sanitizer builds decode some twenty times slower: every 7th offset there (each chunk of the
  // preamble still gets several flips, and the bit moves with the offset).
  const uint64_t step = testing::kSanitized ? 7 : 1;
  for (uint64_t off = 0; off < n; off += step) {
    const auto [lost, allowed] = bench.Flip(0, off, static_cast<int>(off % 8));
    EXPECT_LE(lost, allowed) << "flip at offset " << off;
    if (lost) ++with_loss;
    if (lost > worst) worst = lost, worst_at = off;
  }
  std::printf("byte damage: %llu offsets of file 0 (preamble ends at %llu, %llu kernels in all): "
              "%llu lose kernels, worst %llu kernels at offset %llu\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(preamble_end),
              static_cast<unsigned long long>(bench.clean_kernels()),
              static_cast<unsigned long long>(with_loss), static_cast<unsigned long long>(worst),
              static_cast<unsigned long long>(worst_at));
}

// The rest of the real sample, both files: seeded random offsets and bits.
TEST(ByteDamageTest, RandomBitFlipsOverTheWholeRecordingCostAtMostTheirChunk) {
  DamageBench bench(kSample);
  std::mt19937_64 rng(20261130);
  uint64_t worst = 0;
  const int flips = testing::kSanitized ? 40 : 150;  // sanitizer builds: slower decodes
  for (int i = 0; i < flips; ++i) {
    const size_t file = rng() % bench.files();
    const uint64_t off = rng() % bench.size(file);
    const int bit = static_cast<int>(rng() % 8);
    const auto [lost, allowed] = bench.Flip(file, off, bit);
    EXPECT_LE(lost, allowed) << "file " << file << " offset " << off << " bit " << bit;
    worst = std::max(worst, lost);
  }
  std::printf("byte damage: %d random flips, worst %llu kernels lost\n", flips,
              static_cast<unsigned long long>(worst));
}

// A recording of one file, as written now (format 1.1): with no other file to take a header
// from, its second metadata copy is what keeps a flip in the first from costing the file.
TEST(ByteDamageTest, EveryByteOfASingleFileRecordingCostsAtMostItsChunk) {
  TempDir source;
  testing::WriteSampleRecording(source.path());
  DamageBench bench(source.path());
  ASSERT_EQ(bench.files(), 1u);
  ASSERT_GT(bench.clean_kernels(), 0u);
  int metadata_chunks = 0;
  for (const ChunkSpan& s : bench.layout(0))
    metadata_chunks += s.type == static_cast<uint8_t>(ChunkType::kMetadata);
  EXPECT_EQ(metadata_chunks, 2);
  // Sanitizer builds: every 5th offset (the metadata copies and chunk headers still get flips).
  const uint64_t step = testing::kSanitized ? 5 : 1;
  for (uint64_t off = 0; off < bench.size(0); off += step) {
    for (int bit : {0, 5}) {
      const auto [lost, allowed] = bench.Flip(0, off, bit);
      EXPECT_LE(lost, allowed) << "flip at offset " << off << " bit " << bit;
    }
  }
}

// Kernels whose names were in a damaged string-table chunk are still shown, unnamed and counted.
TEST(ByteDamageTest, DamagedStringTableLeavesKernelsShownWithUnresolvedNames) {
  TempDir dir;
  for (const auto& e : fs::directory_iterator(kSample))
    if (e.path().extension() == ".cupmon")
      fs::copy_file(e.path(), dir.path() + "/" + e.path().filename().string());
  const std::string first = dir.path() + "/cupmon-20261130T101403-vm-2098-000000.cupmon";
  auto bytes = ReadAll(first);
  const auto layout = ChunkLayout(bytes);
  auto strings = std::find_if(layout.begin(), layout.end(), [](const ChunkSpan& s) {
    return s.type == static_cast<uint8_t>(ChunkType::kStringTable);
  });
  ASSERT_NE(strings, layout.end());
  bytes[strings->begin + kChunkHeaderSize + 7] ^= 0x08;
  WriteAll(first, bytes);
  auto listing = ListRecordings(dir.path());
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->recordings.size(), 1u);
  KernelCountingSink sink;
  TraceBuilder builder(TraceFilter{}, &sink);
  ReadIntegrity integrity;
  ReadRecording(listing->recordings[0], builder, &integrity);
  builder.Finish();
  EXPECT_EQ(sink.kernels, 166558u);
  EXPECT_EQ(integrity.damaged_ranges, 1u);
  EXPECT_GT(builder.counts().unresolved_names, 0u);  // shown as "<unresolved kernel name 0x...>"
}

}  // namespace
}  // namespace cupmon::decoder

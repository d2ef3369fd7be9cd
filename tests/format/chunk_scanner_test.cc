// Tests ChunkScanner (format/src/chunk_scanner.cc): validation, resync after damage, versions.
#include "cupmon/format/chunk_scanner.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "cupmon/format/crc32c.h"

namespace cupmon {
namespace {

// Appends one framed chunk with a payload of `n` bytes derived from `seq`.
void AppendChunk(std::vector<uint8_t>* file, uint64_t seq, size_t n, uint8_t major = kFormatMajor,
                 uint8_t type = static_cast<uint8_t>(ChunkType::kStats)) {
  std::vector<uint8_t> payload(n);
  for (size_t i = 0; i < n; ++i) payload[i] = static_cast<uint8_t>(seq * 31 + i);
  ChunkHeader h;
  h.major = major;
  h.type = type;
  h.encoding = static_cast<uint8_t>(Encoding::kStored);
  h.sequence = seq;
  h.payload_length = static_cast<uint32_t>(n);
  h.uncompressed_length = static_cast<uint32_t>(n);
  h.payload_crc = Crc32c(payload.data(), n);
  const size_t at = file->size();
  file->resize(at + kChunkHeaderSize);
  EncodeChunkHeader(h, file->data() + at);
  file->insert(file->end(), payload.begin(), payload.end());
}

// Ten chunks of varying sizes; offsets[i] is where chunk i starts.
std::vector<uint8_t> TenChunks(std::vector<uint64_t>* offsets) {
  std::vector<uint8_t> file;
  for (uint64_t i = 0; i < 10; ++i) {
    offsets->push_back(file.size());
    AppendChunk(&file, i, 100 + 37 * i);
  }
  return file;
}

struct Result {
  std::vector<ScannedChunk> chunks;
  std::vector<Damage> damage;
  uint8_t future_major = 0;
};
Result ScanAll(std::span<const uint8_t> bytes) {
  Result r;
  ChunkScanner s(bytes);
  while (auto c = s.Next(&r.damage)) r.chunks.push_back(*c);
  r.future_major = s.future_major();
  return r;
}

TEST(ChunkScannerTest, CleanFile) {
  std::vector<uint64_t> offsets;
  const auto file = TenChunks(&offsets);
  const Result r = ScanAll(file);
  ASSERT_EQ(r.chunks.size(), 10u);
  EXPECT_TRUE(r.damage.empty());
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(r.chunks[i].header.sequence, i);
    EXPECT_EQ(r.chunks[i].offset, offsets[i]);
    EXPECT_EQ(r.chunks[i].payload.size(), 100 + 37 * i);
  }
}

TEST(ChunkScannerTest, ZeroLengthFile) {
  const Result r = ScanAll({});
  EXPECT_TRUE(r.chunks.empty());
  EXPECT_TRUE(r.damage.empty());
}

TEST(ChunkScannerTest, TruncatedTailIsReported) {
  std::vector<uint64_t> offsets;
  const auto file = TenChunks(&offsets);
  // Cut inside the last payload, then inside the last header.
  for (uint64_t cut : {file.size() - 10, offsets[9] + 20}) {
    const Result r = ScanAll(std::span<const uint8_t>(file).first(cut));
    ASSERT_EQ(r.chunks.size(), 9u) << "cut " << cut;
    ASSERT_EQ(r.damage.size(), 1u);
    EXPECT_EQ(r.damage[0].kind, Damage::Kind::kTruncatedTail);
    EXPECT_EQ(r.damage[0].offset, offsets[9]);
    EXPECT_EQ(r.damage[0].skipped_bytes, cut - offsets[9]);
    EXPECT_FALSE(r.damage[0].what.empty());
  }
}

TEST(ChunkScannerTest, FlippedByteInTheMiddle) {
  std::vector<uint64_t> offsets;
  auto file = TenChunks(&offsets);
  for (uint64_t at : {offsets[4] + 2 /* magic */, offsets[4] + 9 /* header */,
                      offsets[4] + 40 /* payload */}) {
    auto damaged = file;
    damaged[at] ^= 0x40;
    const Result r = ScanAll(damaged);
    ASSERT_EQ(r.chunks.size(), 9u) << "flip at " << at;
    ASSERT_EQ(r.damage.size(), 1u);
    EXPECT_EQ(r.damage[0].kind, Damage::Kind::kCorrupt);
    EXPECT_EQ(r.damage[0].offset, offsets[4]);
    EXPECT_EQ(r.damage[0].skipped_bytes, offsets[5] - offsets[4]);
    // The chunks after the damage are all found, at their real offsets.
    for (size_t i = 4; i < 9; ++i) EXPECT_EQ(r.chunks[i].offset, offsets[i + 1]);
    EXPECT_EQ(r.chunks.back().header.sequence, 9u);
  }
}

TEST(ChunkScannerTest, GarbageFileAndGarbageAroundChunks) {
  std::mt19937 rng(1);
  std::vector<uint8_t> garbage(10000);
  for (auto& b : garbage) b = static_cast<uint8_t>(rng());
  Result r = ScanAll(garbage);
  EXPECT_TRUE(r.chunks.empty());
  ASSERT_EQ(r.damage.size(), 1u);
  EXPECT_EQ(r.damage[0].offset, 0u);
  EXPECT_EQ(r.damage[0].skipped_bytes, garbage.size());

  // Garbage before, between and after good chunks, including fake magic.
  std::vector<uint8_t> file(garbage.begin(), garbage.begin() + 77);
  file.insert(file.end(), {'C', 'P', 'M', 'N', 1, 0});
  AppendChunk(&file, 1, 50);
  file.insert(file.end(), garbage.begin(), garbage.begin() + 33);
  AppendChunk(&file, 2, 60);
  file.insert(file.end(), {'C', 'P', 'M', 'N'});
  r = ScanAll(file);
  ASSERT_EQ(r.chunks.size(), 2u);
  EXPECT_EQ(r.chunks[0].offset, 83u);
  ASSERT_EQ(r.damage.size(), 3u);
  EXPECT_EQ(r.damage[0].offset, 0u);
  EXPECT_EQ(r.damage[0].skipped_bytes, 83u);
  EXPECT_EQ(r.damage[2].kind, Damage::Kind::kTruncatedTail);
  EXPECT_EQ(r.damage[2].skipped_bytes, 4u);
}

TEST(ChunkScannerTest, RandomDamageNeverCrashesAndKeepsGoodChunks) {
  std::vector<uint64_t> offsets;
  const auto file = TenChunks(&offsets);
  std::mt19937 rng(7);
  for (int i = 0; i < 500; ++i) {
    auto damaged = file;
    const size_t at = rng() % damaged.size();
    damaged[at] = static_cast<uint8_t>(damaged[at] ^ (1 + rng() % 255));
    const Result r = ScanAll(damaged);
    ASSERT_EQ(r.damage.size(), 1u) << "flip at " << at;
    EXPECT_EQ(r.chunks.size(), 9u);  // only the chunk holding the byte is lost
  }
}

TEST(ChunkScannerTest, FutureMajorVersionStops) {
  std::vector<uint8_t> file;
  AppendChunk(&file, 0, 40, kFormatMajor + 1);
  AppendChunk(&file, 1, 40);
  Result r = ScanAll(file);
  EXPECT_TRUE(r.chunks.empty());
  EXPECT_EQ(r.future_major, kFormatMajor + 1);

  // A future chunk after good ones: the good ones come first, then the scanner stops.
  file.clear();
  AppendChunk(&file, 0, 40);
  AppendChunk(&file, 1, 40, 9);
  AppendChunk(&file, 2, 40);
  r = ScanAll(file);
  EXPECT_EQ(r.chunks.size(), 1u);
  EXPECT_EQ(r.future_major, 9);
}

TEST(ChunkScannerTest, NewerMinorVersionAndUnknownTypeAreReturned) {
  std::vector<uint8_t> file;
  AppendChunk(&file, 0, 40);
  file[5] = kFormatMinor + 3;  // minor byte; refresh the header checksum
  PutLe32(file.data() + 28, Crc32c(file.data(), 28));
  AppendChunk(&file, 1, 40, kFormatMajor, 200);
  const Result r = ScanAll(file);
  ASSERT_EQ(r.chunks.size(), 2u);
  EXPECT_EQ(r.chunks[0].header.minor, kFormatMinor + 3);
  EXPECT_EQ(r.chunks[1].header.type, 200);
  EXPECT_TRUE(r.damage.empty());
}

TEST(ChunkScannerTest, OversizedLengthIsDamageNotAnAllocation) {
  std::vector<uint8_t> file;
  AppendChunk(&file, 0, 40);
  PutLe32(file.data() + 16, kMaxChunkPayload + 1);
  PutLe32(file.data() + 28, Crc32c(file.data(), 28));
  AppendChunk(&file, 1, 40);
  const Result r = ScanAll(file);
  ASSERT_EQ(r.chunks.size(), 1u);
  EXPECT_EQ(r.chunks[0].header.sequence, 1u);
  ASSERT_EQ(r.damage.size(), 1u);
  EXPECT_NE(r.damage[0].what.find("exceeds"), std::string::npos);
}

}  // namespace
}  // namespace cupmon

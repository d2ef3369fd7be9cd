// Tests the chunk header and raw-buffer prefix encodings (format/src/chunk.cc).
#include "cupmon/format/chunk.h"

#include <gtest/gtest.h>

#include <array>

#include "cupmon/format/crc32c.h"

namespace cupmon {
namespace {

ChunkHeader SampleHeader() {
  ChunkHeader h;
  h.type = static_cast<uint8_t>(ChunkType::kRawBuffer);
  h.encoding = static_cast<uint8_t>(Encoding::kColumnsDeltaZstd);
  h.sequence = 0x0102030405060708ull;
  h.payload_length = 0x11223344u;
  h.uncompressed_length = 0x55667788u;
  h.payload_crc = 0x99AABBCCu;
  return h;
}

TEST(ChunkTest, HeaderRoundTrip) {
  std::array<uint8_t, kChunkHeaderSize> bytes{};
  const ChunkHeader h = SampleHeader();
  EncodeChunkHeader(h, bytes.data());
  ChunkHeader back;
  ASSERT_EQ(DecodeChunkHeader(bytes.data(), &back), HeaderStatus::kOk);
  EXPECT_EQ(back.major, kFormatMajor);
  EXPECT_EQ(back.minor, kFormatMinor);
  EXPECT_EQ(back.type, h.type);
  EXPECT_EQ(back.encoding, h.encoding);
  EXPECT_EQ(back.sequence, h.sequence);
  EXPECT_EQ(back.payload_length, h.payload_length);
  EXPECT_EQ(back.uncompressed_length, h.uncompressed_length);
  EXPECT_EQ(back.payload_crc, h.payload_crc);
}

// The byte layout documented in docs/FORMAT.md, little-endian on every host.
TEST(ChunkTest, HeaderByteLayout) {
  std::array<uint8_t, kChunkHeaderSize> b{};
  EncodeChunkHeader(SampleHeader(), b.data());
  EXPECT_EQ(b[0], 'C');
  EXPECT_EQ(b[1], 'P');
  EXPECT_EQ(b[2], 'M');
  EXPECT_EQ(b[3], 'N');
  EXPECT_EQ(b[4], kFormatMajor);
  EXPECT_EQ(b[5], kFormatMinor);
  EXPECT_EQ(b[6], 2);  // raw buffer
  EXPECT_EQ(b[7], 3);  // columns+delta+zstd
  EXPECT_EQ(b[8], 0x08);
  EXPECT_EQ(b[15], 0x01);
  EXPECT_EQ(b[16], 0x44);
  EXPECT_EQ(b[19], 0x11);
  EXPECT_EQ(b[20], 0x88);
  EXPECT_EQ(b[24], 0xCC);
  EXPECT_EQ(GetLe32(b.data() + 28), Crc32c(b.data(), 28));
}

TEST(ChunkTest, BadMagicIsDetected) {
  std::array<uint8_t, kChunkHeaderSize> b{};
  EncodeChunkHeader(SampleHeader(), b.data());
  b[1] = 'X';
  ChunkHeader h;
  EXPECT_EQ(DecodeChunkHeader(b.data(), &h), HeaderStatus::kBadMagic);
}

TEST(ChunkTest, EveryFlippedHeaderByteIsDetected) {
  for (size_t i = 0; i < kChunkHeaderSize; ++i) {
    std::array<uint8_t, kChunkHeaderSize> b{};
    EncodeChunkHeader(SampleHeader(), b.data());
    b[i] ^= 0x10;
    ChunkHeader h;
    const HeaderStatus s = DecodeChunkHeader(b.data(), &h);
    if (i < 4) {
      EXPECT_EQ(s, HeaderStatus::kBadMagic) << "byte " << i;
    } else {
      EXPECT_EQ(s, HeaderStatus::kBadHeaderCrc) << "byte " << i;
    }
  }
}

TEST(ChunkTest, RawBufferPrefixRoundTrip) {
  std::array<uint8_t, kRawBufferPrefixSize> b{};
  const RawBufferPrefix p{7, 13, RawBufferPrefix::kUnknownCount, 0x80000001u};
  EncodeRawBufferPrefix(p, b.data());
  EXPECT_EQ(GetLe32(b.data()), 7u);
  EXPECT_EQ(GetLe32(b.data() + 4), 13u);
  const RawBufferPrefix back = DecodeRawBufferPrefix(b.data());
  EXPECT_EQ(back.context_id, 7u);
  EXPECT_EQ(back.stream_id, 13u);
  EXPECT_EQ(back.record_count, RawBufferPrefix::kUnknownCount);
  EXPECT_EQ(back.flags, 0x80000001u);
}

TEST(ChunkTest, NamesForKnownAndUnknownValues) {
  EXPECT_STREQ(ChunkTypeName(2), "raw-buffer");
  EXPECT_STREQ(ChunkTypeName(200), "unknown");
  EXPECT_STREQ(EncodingName(3), "columns+delta+zstd");
  EXPECT_STREQ(EncodingName(99), "unknown");
}

TEST(ChunkTest, LittleEndianHelpers) {
  uint8_t b[8];
  PutLe64(b, 0x1122334455667788ull);
  EXPECT_EQ(b[0], 0x88);
  EXPECT_EQ(GetLe64(b), 0x1122334455667788ull);
  PutLe32(b, 0xA1B2C3D4u);
  EXPECT_EQ(b[0], 0xD4);
  EXPECT_EQ(GetLe32(b), 0xA1B2C3D4u);
}

}  // namespace
}  // namespace cupmon

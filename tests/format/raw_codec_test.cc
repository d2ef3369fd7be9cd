// Tests the raw-buffer encodings (format/src/raw_codec.cc) on the real H200 CUPTI 13.0 records.
#include "cupmon/format/raw_codec.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "test_data.h"

namespace cupmon {
namespace {

constexpr Encoding kAllEncodings[] = {Encoding::kStored, Encoding::kZstd, Encoding::kColumnsZstd,
                                      Encoding::kColumnsDeltaZstd};

class RealDataTest : public ::testing::TestWithParam<const char*> {};

// Every encoding gives back exactly the bytes CUPTI wrote, buffer by buffer.
TEST_P(RealDataTest, EveryEncodingRoundTripsByteExact) {
  const std::vector<uint8_t> all = testing::LoadRealRecords(GetParam());
  ASSERT_FALSE(all.empty()) << "cannot load " << GetParam();
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  const auto buffers = testing::SplitIntoBuffers(all, sizes);
  size_t covered = 0;
  for (auto b : buffers) covered += b.size();
  ASSERT_EQ(covered, all.size()) << "the 13.0 size table must walk the whole file";

  RawBufferEncoder encoder(1);
  RawBufferDecoder decoder;
  for (Encoding e : kAllEncodings) {
    size_t encoded_total = 0;
    for (auto raw : buffers) {
      std::vector<uint8_t> encoded, decoded;
      auto used = encoder.Encode(raw, sizes, e, &encoded);
      ASSERT_TRUE(used.has_value()) << used.error().message;
      ASSERT_EQ(*used, e);
      auto r = decoder.Decode(static_cast<uint8_t>(*used), encoded,
                              static_cast<uint32_t>(raw.size()), &decoded);
      ASSERT_TRUE(r.has_value()) << EncodingName(static_cast<uint8_t>(e)) << ": "
                                 << r.error().message;
      ASSERT_EQ(decoded.size(), raw.size());
      ASSERT_EQ(std::memcmp(decoded.data(), raw.data(), raw.size()), 0)
          << EncodingName(static_cast<uint8_t>(e));
      encoded_total += encoded.size();
    }
    std::printf("%s %s: %zu -> %zu bytes (%.1fx)\n", GetParam(),
                EncodingName(static_cast<uint8_t>(e)), all.size(), encoded_total,
                static_cast<double>(all.size()) / static_cast<double>(encoded_total));
  }
}

INSTANTIATE_TEST_SUITE_P(H200, RealDataTest,
                         ::testing::Values(testing::kAlwaysOnFile, testing::kWindowFile));

// The compression target: >= 40x on the real always-on records with the default encoding.
TEST(RawCodecTest, ColumnsDeltaCompressesAlwaysOnAtLeast40x) {
  const std::vector<uint8_t> all = testing::LoadRealRecords(testing::kAlwaysOnFile);
  ASSERT_FALSE(all.empty());
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  RawBufferEncoder encoder(1);
  size_t encoded_total = 0;
  for (auto raw : testing::SplitIntoBuffers(all, sizes)) {
    std::vector<uint8_t> encoded;
    ASSERT_EQ(encoder.Encode(raw, sizes, Encoding::kColumnsDeltaZstd, &encoded).value(),
              Encoding::kColumnsDeltaZstd);
    encoded_total += encoded.size();
  }
  EXPECT_GE(static_cast<double>(all.size()) / static_cast<double>(encoded_total), 40.0);
}

// Records of many kinds, interleaved, of sizes that are and are not multiples of 8 words.
std::vector<uint8_t> SyntheticMixed(const RecordSizeTable& sizes, size_t n, uint32_t seed) {
  static constexpr uint32_t kKinds[] = {10, 1, 2, 4, 5, 17, 38, 39, 11, 12, 49, 50, 51};
  std::mt19937 rng(seed);
  std::vector<uint8_t> out;
  uint64_t t = 1'700'000'000'000'000'000ull;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t kind = kKinds[rng() % std::size(kKinds)];
    const size_t at = out.size();
    out.resize(at + sizes.Size(kind));
    for (size_t b = 4; b < sizes.Size(kind); ++b) out[at + b] = static_cast<uint8_t>(rng() & 0x0F);
    PutLe32(out.data() + at, kind);
    t += rng() % 5000;
    PutLe64(out.data() + at + 16, t);
  }
  return out;
}

TEST(RawCodecTest, ColumnarTransformInverseOnSyntheticMix) {
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const std::vector<uint8_t> raw = SyntheticMixed(sizes, seed * 37, seed);
    for (bool delta : {false, true}) {
      std::vector<uint8_t> cols, back;
      ASSERT_TRUE(ColumnarTransform(raw, sizes, delta, &cols));
      ASSERT_EQ(cols.size() >= raw.size(), true);
      ASSERT_TRUE(ColumnarInverse(cols, delta, &back).has_value());
      ASSERT_EQ(back, raw) << "seed " << seed << " delta " << delta;
    }
  }
}

// The partial inverse writes exactly the selected words (and the bytes after a record's last whole
// word), each equal to the full inverse's, and leaves every other byte as it was.
TEST(RawCodecTest, PartialInverseWritesOnlyTheSelectedWords) {
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    // Large enough for whole tiles and slices of every common kind, plus a remainder.
    const std::vector<uint8_t> raw = SyntheticMixed(sizes, 500 * seed + 3, seed);
    std::mt19937_64 rng(seed);
    ColumnSelection keep;
    for (uint32_t k = 0; k < RecordSizeTable::kMaxKind; ++k)
      if (sizes.Size(k)) keep.kinds[k] = ColumnSelection::Kind{sizes.Size(k), rng() | 1};
    for (bool delta : {false, true}) {
      std::vector<uint8_t> cols;
      ASSERT_TRUE(ColumnarTransform(raw, sizes, delta, &cols));
      std::vector<uint8_t> back(raw.size(), 0xAB);
      ASSERT_TRUE(ColumnarInverse(cols, delta, &back, &keep).has_value());
      ASSERT_EQ(back.size(), raw.size());
      size_t off = 0, written = 0, left = 0;
      while (off < raw.size()) {
        const uint32_t kind = RecordKindAt(raw.data() + off);
        const uint32_t size = sizes.Size(kind);
        for (uint32_t b = 0; b < size; ++b) {
          const bool kept = b >= size / 8 * 8 || (keep.kinds[kind].words >> (b / 8) & 1);
          if (kept) {
            ASSERT_EQ(back[off + b], raw[off + b]) << "kind " << kind << " byte " << b;
            ++written;
          } else {
            ASSERT_EQ(back[off + b], 0xAB) << "kind " << kind << " byte " << b;
            ++left;
          }
        }
        off += size;
      }
      EXPECT_GT(written, 0u);
      EXPECT_GT(left, 0u);
    }
  }
}

// Packed, each record is its selected words in ascending order, then its bytes after the last
// whole word, records back to back in stream order; a group the selection does not cover gives
// the whole buffer and says so.
TEST(RawCodecTest, PackedInverseWritesTheSelectedWordsBackToBack) {
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    const std::vector<uint8_t> raw = SyntheticMixed(sizes, 500 * seed + 3, seed);
    std::mt19937_64 rng(seed);
    ColumnSelection keep;
    keep.pack = true;
    for (uint32_t k = 0; k < RecordSizeTable::kMaxKind; ++k)
      if (sizes.Size(k)) keep.kinds[k] = ColumnSelection::Kind{sizes.Size(k), rng() | 1};
    std::vector<uint8_t> expected;  // packed by hand
    for (size_t off = 0; off < raw.size();) {
      const uint32_t kind = RecordKindAt(raw.data() + off), size = sizes.Size(kind);
      ASSERT_GT(size, 0u);
      const size_t at = expected.size();
      for (uint32_t w = 0; w < size / 8; ++w)
        if (WordSelected(keep.kinds[kind].words, w))
          expected.insert(expected.end(), raw.begin() + off + 8 * w, raw.begin() + off + 8 * w + 8);
      expected.insert(expected.end(), raw.begin() + off + size / 8 * 8, raw.begin() + off + size);
      ASSERT_EQ(expected.size() - at, PackedSize(size, keep.kinds[kind].words));
      off += size;
    }
    for (bool delta : {false, true}) {
      std::vector<uint8_t> cols;
      ASSERT_TRUE(ColumnarTransform(raw, sizes, delta, &cols));
      ByteBuffer back(raw.size(), 0xAB);
      bool packed = false;
      ASSERT_TRUE(ColumnarInverse(cols, delta, &back, &keep, &packed).has_value());
      EXPECT_TRUE(packed);
      ASSERT_EQ(back.size(), expected.size()) << "seed " << seed;
      EXPECT_EQ(std::memcmp(back.data(), expected.data(), expected.size()), 0) << "seed " << seed;
      EXPECT_LT(back.size(), raw.size());
      // Through the decoder, which checks the unpacked length against the header's.
      RawBufferEncoder encoder(1);
      RawBufferDecoder decoder;
      std::vector<uint8_t> encoded;
      const Encoding e = delta ? Encoding::kColumnsDeltaZstd : Encoding::kColumnsZstd;
      ASSERT_TRUE(encoder.Encode(raw, sizes, e, &encoded).has_value());
      ByteBuffer decoded;
      packed = false;
      ASSERT_TRUE(decoder.Decode(static_cast<uint8_t>(e), encoded, static_cast<uint32_t>(raw.size()),
                                 &decoded, &keep, &packed).has_value());
      EXPECT_TRUE(packed);
      ASSERT_EQ(decoded.size(), expected.size());
      EXPECT_EQ(std::memcmp(decoded.data(), expected.data(), expected.size()), 0);
      EXPECT_FALSE(decoder.Decode(static_cast<uint8_t>(e), encoded,
                                  static_cast<uint32_t>(raw.size() - 8), &decoded, &keep, &packed)
                       .has_value());
      // A kind missing from the selection: the whole buffer, not packed.
      ColumnSelection missing = keep;
      missing.kinds[5] = {};
      ASSERT_TRUE(ColumnarInverse(cols, delta, &back, &missing, &packed).has_value());
      EXPECT_FALSE(packed);
      ASSERT_EQ(back.size(), raw.size());
      EXPECT_EQ(std::memcmp(back.data(), raw.data(), raw.size()), 0);
    }
  }
  // Sizes and offsets within packed records, tail bytes included.
  EXPECT_EQ(PackedSize(20, 0b101), 12u);  // a 20-byte record has words 0 and 1 only
  EXPECT_EQ(PackedSize(20, 0b011), 20u);
  EXPECT_EQ(PackedSize(20, 0b001), 12u);
  EXPECT_EQ(PackedOffset(3, 20, 0b001), 3u);
  EXPECT_EQ(PackedOffset(17, 20, 0b001), 9u);   // tail byte 1
  EXPECT_EQ(PackedOffset(17, 20, 0b011), 17u);
  EXPECT_EQ(PackedSize(216, 0), 0u);
  EXPECT_EQ(PackedOffset(8 * 70 + 3, 8 * 72, 1), 8 * (1 + 6) + 3u);  // words 64-71 always kept
}

// A group the selection does not list, or lists with another record size, gets the full inverse.
TEST(RawCodecTest, PartialInverseFallsBackToTheWholeBuffer) {
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  const std::vector<uint8_t> raw = SyntheticMixed(sizes, 3000, 7);
  std::vector<uint8_t> cols;
  ASSERT_TRUE(ColumnarTransform(raw, sizes, true, &cols));
  ColumnSelection word0;
  for (uint32_t k = 0; k < RecordSizeTable::kMaxKind; ++k)
    if (sizes.Size(k)) word0.kinds[k] = ColumnSelection::Kind{sizes.Size(k), 1};
  {
    ColumnSelection missing = word0;
    missing.kinds[5] = {};  // runtime API records are in the buffer
    std::vector<uint8_t> back(raw.size(), 0xAB);
    ASSERT_TRUE(ColumnarInverse(cols, true, &back, &missing).has_value());
    EXPECT_EQ(back, raw);
  }
  {
    ColumnSelection other_size = word0;
    other_size.kinds[10].size += 8;  // kernels
    std::vector<uint8_t> back(raw.size(), 0xAB);
    ASSERT_TRUE(ColumnarInverse(cols, true, &back, &other_size).has_value());
    EXPECT_EQ(back, raw);
  }
  {
    std::vector<uint8_t> back(raw.size(), 0xAB);
    ASSERT_TRUE(ColumnarInverse(cols, true, &back, &word0).has_value());
    EXPECT_NE(back, raw);  // the selection applied: most bytes left as they were
    // Through the decoder: same rule.
    RawBufferEncoder encoder(1);
    RawBufferDecoder decoder;
    std::vector<uint8_t> encoded, decoded(raw.size(), 0xAB);
    ASSERT_TRUE(encoder.Encode(raw, sizes, Encoding::kColumnsDeltaZstd, &encoded).has_value());
    ASSERT_TRUE(decoder.Decode(static_cast<uint8_t>(Encoding::kColumnsDeltaZstd), encoded,
                               static_cast<uint32_t>(raw.size()), &decoded, &word0)
                    .has_value());
    EXPECT_EQ(decoded, back);
  }
}

// Decoding into a reused ByteBuffer (stale bytes, buffers of different sizes one after the other)
// gives the bytes CUPTI wrote in every encoding, and with a selection the selected words of the
// std::vector overload's result.
TEST(RawCodecTest, DecodingIntoAReusedByteBufferGivesTheSameBytes) {
  const std::vector<uint8_t> all = testing::LoadRealRecords(testing::kAlwaysOnFile);
  ASSERT_FALSE(all.empty());
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  auto buffers = testing::SplitIntoBuffers(all, sizes);
  const std::vector<uint8_t> mixed = SyntheticMixed(sizes, 4000, 3);
  buffers.insert(buffers.begin() + 1, std::span<const uint8_t>(mixed));  // a smaller one between
  ColumnSelection keep;
  for (uint32_t k = 0; k < RecordSizeTable::kMaxKind; ++k)
    if (sizes.Size(k)) keep.kinds[k] = ColumnSelection::Kind{sizes.Size(k), 0x5};  // words 0, 2
  RawBufferEncoder encoder(1);
  RawBufferDecoder decoder;
  ByteBuffer reused(size_t{1} << 20, 0xCD);
  size_t compared = 0;
  for (Encoding e : kAllEncodings) {
    for (auto raw : buffers) {
      std::vector<uint8_t> encoded;
      auto used = encoder.Encode(raw, sizes, e, &encoded);
      ASSERT_TRUE(used.has_value());
      const auto id = static_cast<uint8_t>(*used);
      const auto n = static_cast<uint32_t>(raw.size());
      ASSERT_TRUE(decoder.Decode(id, encoded, n, &reused).has_value()) << EncodingName(id);
      ASSERT_EQ(reused.size(), raw.size());
      ASSERT_EQ(std::memcmp(reused.data(), raw.data(), raw.size()), 0) << EncodingName(id);
      std::vector<uint8_t> partial_vec;
      ASSERT_TRUE(decoder.Decode(id, encoded, n, &partial_vec, &keep).has_value());
      reused.resize(reused.size() / 3);  // stale bytes again for the partial decode
      ASSERT_TRUE(decoder.Decode(id, encoded, n, &reused, &keep).has_value()) << EncodingName(id);
      ASSERT_EQ(reused.size(), raw.size());
      for (size_t off = 0; off < raw.size();) {
        const uint32_t size = sizes.Size(RecordKindAt(raw.data() + off));
        for (size_t w : {size_t{0}, size_t{2}}) {
          if (8 * w + 8 > size) continue;
          ASSERT_EQ(std::memcmp(reused.data() + off + 8 * w, raw.data() + off + 8 * w, 8), 0);
          ASSERT_EQ(std::memcmp(partial_vec.data() + off + 8 * w, raw.data() + off + 8 * w, 8), 0);
          ++compared;
        }
        off += size;
      }
    }
  }
  EXPECT_GT(compared, 1000u);
}

// Pins the column layout: group table, run table, then one column per byte position of a group.
TEST(RawCodecTest, ColumnLayoutIsAsDocumented) {
  RecordSizeTable sizes;
  sizes.Set(7, 16);
  sizes.Set(9, 8);
  std::vector<uint8_t> raw(16 + 8 + 16);
  PutLe32(raw.data(), 7);
  PutLe64(raw.data() + 8, 100);
  PutLe32(raw.data() + 16, 9);
  PutLe32(raw.data() + 20, 0xAABBCCDD);
  PutLe32(raw.data() + 24, 7);
  PutLe64(raw.data() + 32, 350);
  std::vector<uint8_t> cols;
  ASSERT_TRUE(ColumnarTransform(raw, sizes, /*delta=*/true, &cols));
  // Group table: 2 groups, (kind 7, size 16, count 2), (kind 9, size 8, count 1).
  ASSERT_EQ(cols.size(), 4 + 24 + 4 + 24 + raw.size());
  EXPECT_EQ(GetLe32(cols.data()), 2u);
  EXPECT_EQ(GetLe32(cols.data() + 4), 7u);
  EXPECT_EQ(GetLe32(cols.data() + 8), 16u);
  EXPECT_EQ(GetLe32(cols.data() + 12), 2u);
  EXPECT_EQ(GetLe32(cols.data() + 16), 9u);
  EXPECT_EQ(GetLe32(cols.data() + 20), 8u);
  EXPECT_EQ(GetLe32(cols.data() + 24), 1u);
  // Run table: 3 runs (group 0 x1, group 1 x1, group 0 x1).
  EXPECT_EQ(GetLe32(cols.data() + 28), 3u);
  EXPECT_EQ(GetLe32(cols.data() + 32), 0u);
  EXPECT_EQ(GetLe32(cols.data() + 36), 1u);
  EXPECT_EQ(GetLe32(cols.data() + 40), 1u);
  EXPECT_EQ(GetLe32(cols.data() + 48), 0u);
  const uint8_t* c = cols.data() + 56;
  // Group 0's 16 columns of 2 bytes: byte 0 column = kind (7, then delta 0).
  EXPECT_EQ(c[0], 7);
  EXPECT_EQ(c[1], 0);
  // Byte 8 column: 100, then delta 250.
  EXPECT_EQ(c[16], 100);
  EXPECT_EQ(c[17], 250);
  // Group 1 follows group 0's 32 bytes: kind 9 then 0xDD.. in byte order.
  EXPECT_EQ(c[32], 9);
  EXPECT_EQ(c[36], 0xDD);
}

TEST(RawCodecTest, UnknownKindFallsBackToZstd) {
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  std::vector<uint8_t> raw = SyntheticMixed(sizes, 50, 3);
  const size_t at = raw.size();
  raw.resize(at + 64);
  PutLe32(raw.data() + at, 99);  // not in the table
  RawBufferEncoder encoder(1);
  RawBufferDecoder decoder;
  for (Encoding e : {Encoding::kColumnsZstd, Encoding::kColumnsDeltaZstd}) {
    std::vector<uint8_t> encoded, decoded;
    auto used = encoder.Encode(raw, sizes, e, &encoded);
    ASSERT_TRUE(used.has_value());
    EXPECT_EQ(*used, Encoding::kZstd);
    ASSERT_TRUE(decoder.Decode(static_cast<uint8_t>(*used), encoded,
                               static_cast<uint32_t>(raw.size()), &decoded));
    EXPECT_EQ(decoded, raw);
  }
  std::vector<uint8_t> cols;
  EXPECT_FALSE(ColumnarTransform(raw, sizes, false, &cols));
  // A record that runs past the end also cannot be walked.
  raw.resize(at + 8);
  PutLe32(raw.data() + at, 10);
  EXPECT_FALSE(ColumnarTransform(raw, sizes, true, &cols));
}

TEST(RawCodecTest, EmptyBufferRoundTrips) {
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  RawBufferEncoder encoder(1);
  RawBufferDecoder decoder;
  for (Encoding e : kAllEncodings) {
    std::vector<uint8_t> encoded, decoded{1, 2, 3};
    auto used = encoder.Encode({}, sizes, e, &encoded);
    ASSERT_TRUE(used.has_value());
    ASSERT_TRUE(decoder.Decode(static_cast<uint8_t>(*used), encoded, 0, &decoded));
    EXPECT_TRUE(decoded.empty());
  }
}

// Corrupted column headers are refused with an error, never a crash or a partial result.
TEST(RawCodecTest, ColumnarInverseRejectsCorruptHeaders) {
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  const std::vector<uint8_t> raw = SyntheticMixed(sizes, 200, 9);
  std::vector<uint8_t> cols, out;
  ASSERT_TRUE(ColumnarTransform(raw, sizes, true, &cols));
  const uint32_t n_groups = GetLe32(cols.data());
  const size_t header = 4 + 12 * n_groups + 4 + 8 * GetLe32(cols.data() + 4 + 12 * n_groups);

  auto expect_bad = [&](std::vector<uint8_t> bad, const char* what) {
    auto r = ColumnarInverse(bad, true, &out);
    EXPECT_FALSE(r.has_value()) << what;
    if (!r) {
      EXPECT_NE(r.error().message.find("bad column header"), std::string::npos);
    }
  };
  expect_bad({}, "empty");
  expect_bad({1, 0}, "short");
  {
    auto b = cols;
    PutLe32(b.data(), 65);
    expect_bad(b, "too many groups");
  }
  {
    auto b = cols;
    PutLe32(b.data() + 8, 0);
    expect_bad(b, "zero record size");
  }
  {
    auto b = cols;
    PutLe32(b.data() + 8, 0xFFFFFFFF);
    expect_bad(b, "huge record size");
  }
  {
    auto b = cols;
    PutLe32(b.data() + 12, 0xFFFFFFFF);
    expect_bad(b, "huge record count");
  }
  {
    auto b = cols;
    PutLe32(b.data() + 4 + 12 * n_groups, 0xFFFFFFFF);
    expect_bad(b, "huge run count");
  }
  {
    auto b = cols;
    PutLe32(b.data() + 4 + 12 * n_groups + 4, n_groups);
    expect_bad(b, "run names a missing group");
  }
  {
    auto b = cols;
    PutLe32(b.data() + 4 + 12 * n_groups + 8, 0xFFFFFFF0);
    expect_bad(b, "run longer than its group");
  }
  {
    auto b = cols;
    b.pop_back();
    expect_bad(b, "column bytes short");
  }
  {
    auto b = std::vector<uint8_t>(cols.begin(), cols.begin() + static_cast<ptrdiff_t>(header - 3));
    expect_bad(b, "cut inside the run table");
  }
  // Random damage anywhere in the header: either an error or some output, never a crash.
  std::mt19937 rng(5);
  for (int i = 0; i < 2000; ++i) {
    auto b = cols;
    b[rng() % header] = static_cast<uint8_t>(rng());
    (void)ColumnarInverse(b, (i & 1) != 0, &out);
  }
}

TEST(RawCodecTest, DecoderRejectsWrongLengthsAndGarbage) {
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  const std::vector<uint8_t> raw = SyntheticMixed(sizes, 300, 11);
  const auto n = static_cast<uint32_t>(raw.size());
  RawBufferEncoder encoder(1);
  RawBufferDecoder decoder;
  std::vector<uint8_t> out;
  for (Encoding e : kAllEncodings) {
    std::vector<uint8_t> encoded;
    ASSERT_TRUE(encoder.Encode(raw, sizes, e, &encoded).has_value());
    const auto id = static_cast<uint8_t>(e);
    EXPECT_FALSE(decoder.Decode(id, encoded, n + 1, &out).has_value()) << EncodingName(id);
    EXPECT_FALSE(decoder.Decode(id, encoded, n - 8, &out).has_value()) << EncodingName(id);
    if (e != Encoding::kStored) {
      std::vector<uint8_t> cut(encoded.begin(), encoded.end() - 5);
      EXPECT_FALSE(decoder.Decode(id, cut, n, &out).has_value()) << EncodingName(id);
      std::vector<uint8_t> garbage(encoded.size(), 0xA5);
      EXPECT_FALSE(decoder.Decode(id, garbage, n, &out).has_value()) << EncodingName(id);
    }
    EXPECT_FALSE(decoder.Decode(id, {}, n, &out).has_value()) << EncodingName(id);
  }
  std::vector<uint8_t> encoded;
  ASSERT_TRUE(encoder.Encode(raw, sizes, Encoding::kZstd, &encoded).has_value());
  auto r = decoder.Decode(77, encoded, n, &out);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("unknown encoding"), std::string::npos);
  // A valid zstd frame of non-columnar bytes under a columnar encoding id.
  r = decoder.Decode(static_cast<uint8_t>(Encoding::kColumnsDeltaZstd), encoded, n, &out);
  EXPECT_FALSE(r.has_value());
}

}  // namespace
}  // namespace cupmon

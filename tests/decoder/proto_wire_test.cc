// The Perfetto export's wire-format writer (decoder/src/export/perfetto/proto_wire.h) against
// bytes worked out by hand from the protobuf encoding rules; runs without Perfetto's schema (the
// schema-based check of the whole export is tests/decoder/perfetto_export_test.py).
#include "export/perfetto/proto_wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cupmon::decoder::proto_wire {
namespace {

std::vector<uint8_t> Bytes(const Writer& w) { return {w.data(), w.data() + w.size()}; }

TEST(ProtoWireTest, VarintsAtTheirBoundaries) {
  Writer w;
  w.Varint(1, 0);
  w.Varint(1, 127);
  w.Varint(1, 128);
  w.Varint(16, 1);  // tag 16 << 3 = 128 takes two bytes
  EXPECT_EQ(Bytes(w),
            (std::vector<uint8_t>{0x08, 0x00, 0x08, 0x7F, 0x08, 0x80, 0x01, 0x80, 0x01, 0x01}));
  w.Clear();
  w.Varint(1, UINT64_MAX);
  EXPECT_EQ(Bytes(w), (std::vector<uint8_t>{0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                            0xFF, 0x01}));
  w.Clear();
  w.Int64(1, -1);  // int64: two's complement, ten bytes
  EXPECT_EQ(Bytes(w), (std::vector<uint8_t>{0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                            0xFF, 0x01}));
}

TEST(ProtoWireTest, Fixed64IsLittleEndianAfterItsTag) {
  Writer w;
  w.Fixed64(47, 0x0102030405060708ull);  // TrackEvent.flow_ids: tag (47 << 3) | 1 = 377
  EXPECT_EQ(Bytes(w),
            (std::vector<uint8_t>{0xF9, 0x02, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01}));
}

TEST(ProtoWireTest, LengthDelimited) {
  Writer w;
  w.Bytes(2, "ab");
  w.Bytes(2, "");
  EXPECT_EQ(Bytes(w), (std::vector<uint8_t>{0x12, 0x02, 'a', 'b', 0x12, 0x00}));
}

// A nested body's length byte is widened in place when the body needs more than one.
TEST(ProtoWireTest, NestedLengthsWidenInPlace) {
  // Bodies around the one-, two- and three-byte length boundaries (127/128, 16383/16384).
  for (size_t body : {0u, 125u, 126u, 127u, 128u, 16381u, 16382u, 16383u, 16384u, 70000u}) {
    Writer w;
    const size_t at = w.BeginNested(1);
    if (body > 0) {
      // One bytes field fills the body: 1 (tag) + varint(n) + n bytes.
      size_t n = body - 2;
      if (n >= 128) n = body - 3;
      if (n >= 16384) n = body - 4;
      w.Bytes(2, std::string(n, 'x'));
    }
    const size_t inner = w.size() - at - 1;
    ASSERT_EQ(inner, body) << "test setup";
    w.EndNested(at);
    std::vector<uint8_t> want = {0x0A};
    for (size_t v = body;; v >>= 7) {
      if (v < 0x80) {
        want.push_back(static_cast<uint8_t>(v));
        break;
      }
      want.push_back(static_cast<uint8_t>(v | 0x80));
    }
    const std::vector<uint8_t> got = Bytes(w);
    ASSERT_EQ(got.size(), want.size() + body) << body;
    EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.begin() + static_cast<long>(want.size())), want)
        << body;
    if (body) {
      EXPECT_EQ(got.back(), 'x');
    }
  }
}

TEST(ProtoWireTest, OuterLengthCountsTheWidenedInnerLength) {
  Writer w;
  const size_t outer = w.BeginNested(1);
  const size_t inner = w.BeginNested(2);
  w.Bytes(3, std::string(200, 'x'));  // 1A C8 01 + 200 bytes = 203
  w.EndNested(inner);                 // 12 CB 01: the inner length takes two bytes
  w.Varint(4, 5);                     // 20 05
  w.EndNested(outer);                 // 2 + 2 + 203... = 208 = 0xD0: D0 01
  std::vector<uint8_t> got = Bytes(w);
  ASSERT_EQ(got.size(), 3u + 3u + 3u + 200u + 2u);
  EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.begin() + 9),
            (std::vector<uint8_t>{0x0A, 0xD0, 0x01, 0x12, 0xCB, 0x01, 0x1A, 0xC8, 0x01}));
  EXPECT_EQ(got[got.size() - 2], 0x20);
  EXPECT_EQ(got.back(), 0x05);
}

}  // namespace
}  // namespace cupmon::decoder::proto_wire

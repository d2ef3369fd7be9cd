// Tests CRC-32C against published vectors and checks the hardware and software paths agree.
#include "cupmon/format/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace cupmon {
namespace {

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32cSoftware("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  // RFC 3720 (iSCSI) B.4: 32 bytes of zeros, and 32 bytes of 0xFF.
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF);
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62A8AB43u);
}

TEST(Crc32cTest, IncrementalEqualsOneShot) {
  const char* text = "123456789";
  const uint32_t first = Crc32c(text, 4);
  EXPECT_EQ(Crc32c(text + 4, 5, first), 0xE3069283u);
  EXPECT_EQ(Crc32cSoftware(text + 4, 5, Crc32cSoftware(text, 4)), 0xE3069283u);
}

TEST(Crc32cTest, HardwareAndSoftwareAgreeOnEveryLengthAndAlignment) {
  std::mt19937 rng(42);
  std::vector<uint8_t> data(4096 + 16);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t align = 0; align < 8; ++align) {
    for (size_t len = 0; len < 300; ++len) {
      ASSERT_EQ(Crc32c(data.data() + align, len), Crc32cSoftware(data.data() + align, len))
          << "align " << align << " len " << len;
    }
  }
  EXPECT_EQ(Crc32c(data.data(), 4096), Crc32cSoftware(data.data(), 4096));
}

TEST(Crc32cTest, DetectsAFlippedBit) {
  std::vector<uint8_t> data(1000, 0x5A);
  const uint32_t before = Crc32c(data.data(), data.size());
  data[500] ^= 0x01;
  EXPECT_NE(Crc32c(data.data(), data.size()), before);
}

}  // namespace
}  // namespace cupmon

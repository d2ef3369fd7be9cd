// Software CRC-32C, slicing by 8; SSE4.2 hardware instruction when the CPU has it.
#include "cupmon/format/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace cupmon {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected Castagnoli

struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    }
  }
};
constexpr Tables kTables;

uint32_t SoftwareCrc(const unsigned char* p, size_t n, uint32_t crc) noexcept {
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    word ^= crc;
    crc = kTables.t[7][word & 0xFF] ^ kTables.t[6][(word >> 8) & 0xFF] ^
          kTables.t[5][(word >> 16) & 0xFF] ^ kTables.t[4][(word >> 24) & 0xFF] ^
          kTables.t[3][(word >> 32) & 0xFF] ^ kTables.t[2][(word >> 40) & 0xFF] ^
          kTables.t[1][(word >> 48) & 0xFF] ^ kTables.t[0][word >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ kTables.t[0][(crc ^ *p++) & 0xFF];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t HardwareCrc(const unsigned char* p, size_t n,
                                                       uint32_t crc) noexcept {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

bool HaveSse42() noexcept {
  static const bool have = __builtin_cpu_supports("sse4.2");
  return have;
}
#endif

}  // namespace

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  if (HaveSse42()) return ~HardwareCrc(p, size, crc);
#endif
  return ~SoftwareCrc(p, size, crc);
}

uint32_t Crc32cSoftware(const void* data, size_t size, uint32_t crc) noexcept {
  return ~SoftwareCrc(static_cast<const unsigned char*>(data), size, ~crc);
}

}  // namespace cupmon

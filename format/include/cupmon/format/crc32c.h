// CRC-32C (Castagnoli), the checksum of chunk headers and payloads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cupmon {

// Returns the CRC-32C of `data`, continuing from `crc` (0 for a fresh checksum).
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0) noexcept;
// The portable table-driven implementation Crc32c falls back to without SSE4.2; exposed so tests
// can check that both paths agree.
uint32_t Crc32cSoftware(const void* data, size_t size, uint32_t crc = 0) noexcept;

}  // namespace cupmon

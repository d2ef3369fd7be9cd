// Test helper: loads the real CUPTI 13.0 buffers in tests/data and splits them into buffers.
#pragma once

#include <zstd.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "cupmon/format/record_sizes.h"

namespace cupmon::testing {

inline constexpr const char* kAlwaysOnFile = "h200-cupti13-alwayson.raw.zst";
inline constexpr const char* kWindowFile = "h200-cupti13-window.raw.zst";

// Reads and zstd-decompresses tests/data/<name>; empty on any failure (tests assert non-empty).
inline std::vector<uint8_t> LoadRealRecords(const std::string& name) {
  std::ifstream in(std::string(CUPMON_TEST_DATA_DIR) + "/" + name, std::ios::binary);
  const std::vector<char> packed((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
  const unsigned long long size = ZSTD_getFrameContentSize(packed.data(), packed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) return {};
  std::vector<uint8_t> out(size);
  const size_t n = ZSTD_decompress(out.data(), out.size(), packed.data(), packed.size());
  if (ZSTD_isError(n) || n != size) return {};
  return out;
}

// Splits `all` into record-aligned buffers of at most `max_bytes`, as CUPTI would hand them over.
inline std::vector<std::span<const uint8_t>> SplitIntoBuffers(std::span<const uint8_t> all,
                                                              const RecordSizeTable& sizes,
                                                              size_t max_bytes = 4u << 20) {
  std::vector<std::span<const uint8_t>> out;
  size_t start = 0, off = 0;
  while (off + 4 <= all.size()) {
    const uint32_t size = sizes.Size(RecordKindAt(all.data() + off));
    if (size == 0 || size > all.size() - off) break;
    if (off + size - start > max_bytes) {
      out.push_back(all.subspan(start, off - start));
      start = off;
    }
    off += size;
  }
  if (off > start) out.push_back(all.subspan(start, off - start));
  return out;
}

}  // namespace cupmon::testing

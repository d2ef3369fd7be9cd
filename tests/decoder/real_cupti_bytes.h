// The real CUPTI 13.0 buffers of tests/data/h200-cupti13-*.raw.zst (see ../shared/data/README.md):
// unpacking, and cutting them into buffers at record boundaries, for the tests that wrap them.
#pragma once

#include <zstd.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cupmon/format/record_sizes.h"
#include "test_util.h"

namespace cupmon::testing {

inline std::string RealCuptiPath(const std::string& name) {
  return std::string(CUPMON_SOURCE_DIR) + "/tests/data/" + name;
}

// The unpacked bytes; empty when the file is missing or not one complete zstd frame.
inline std::vector<uint8_t> Unzstd(const std::string& path) {
  const auto packed = ReadAll(path);
  const unsigned long long size = ZSTD_getFrameContentSize(packed.data(), packed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) return {};
  std::vector<uint8_t> out(static_cast<size_t>(size));
  const size_t n = ZSTD_decompress(out.data(), out.size(), packed.data(), packed.size());
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

// Splits the concatenated dump at record boundaries (CUPTI 13.0 sizes) into buffers of at least
// `target` bytes (the last may be smaller); the spans point into `raw`. Empty when the 13.0 size
// table does not walk `raw` to its last byte.
inline std::vector<std::span<const uint8_t>> SplitAtRecords(const std::vector<uint8_t>& raw,
                                                            size_t target = 1u << 20) {
  std::vector<std::span<const uint8_t>> out;
  const std::span<const uint8_t> all(raw);
  size_t begin = 0, off = 0;
  const auto walk = WalkRecords(all, RecordSizeTable::Cupti13(), [&](uint32_t, std::span<const uint8_t> rec) {
    off += rec.size();
    if (off - begin >= target) {
      out.push_back(all.subspan(begin, off - begin));
      begin = off;
    }
  });
  if (!walk.complete) return {};
  if (off > begin) out.push_back(all.subspan(begin, off - begin));
  return out;
}

}  // namespace cupmon::testing

// LoadUnaligned: a field of a CUPTI activity record, read at a byte offset found by
// cupmon/format/record_sizes.h (records sit at any alignment inside the raw buffers).
#pragma once

#include <cstdint>
#include <cstring>

namespace cupmon {

template <typename T>
T LoadUnaligned(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace cupmon

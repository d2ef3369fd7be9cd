// Hex: a pointer or id as the decoder's messages and placeholders print it ("0x7f3a...").
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace cupmon::decoder {

inline std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace cupmon::decoder

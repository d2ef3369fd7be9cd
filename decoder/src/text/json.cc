// JSON string bodies (see json.h).
#include "text/json.h"

#include <cstdint>

namespace cupmon::decoder {
namespace {

// At s[i], a byte of 0x80 or above: the length of the well-formed UTF-8 sequence that starts
// there (2 to 4), or 0 when none does; then *bad is the length of the ill-formed part to replace
// by one U+FFFD: the lead byte and the continuation bytes that were valid before the sequence
// broke off (Unicode's "maximal subpart", which Python's and the WHATWG decoders replace so).
size_t Utf8SequenceAt(std::string_view s, size_t i, size_t* bad) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t lead = byte(i);
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xbf;  // the second byte's range (Unicode's table 3-7)
  if (lead >= 0xc2 && lead <= 0xdf) {
    n = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    n = 3;
    if (lead == 0xe0) lo = 0xa0;  // no overlong forms
    if (lead == 0xed) hi = 0x9f;  // no surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    n = 4;
    if (lead == 0xf0) lo = 0x90;  // no overlong forms
    if (lead == 0xf4) hi = 0x8f;  // nothing above U+10FFFF
  } else {
    *bad = 1;  // a continuation byte, C0, C1 or F5..FF
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    const size_t at = i + k;
    const uint8_t min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xbf;
    if (at >= s.size() || byte(at) < min || byte(at) > max) {
      *bad = k;
      return 0;
    }
  }
  return n;
}

}  // namespace

size_t JsonPlainPrefixFrom(std::string_view s, size_t i) {
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == '"' || c == '\\') return i;
      ++i;
      continue;
    }
    size_t bad = 0;
    const size_t n = Utf8SequenceAt(s, i, &bad);
    if (n == 0) return i;
    i += n;
  }
  return i;
}

std::string JsonEscape(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t bad = 0;
      const size_t n = Utf8SequenceAt(s, i, &bad);
      if (n) {
        out.append(s.data() + i, n);
        i += n;
      } else {
        out += "\xef\xbf\xbd";  // U+FFFD REPLACEMENT CHARACTER
        i += bad;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  return out;
}

}  // namespace cupmon::decoder

// JSON string bodies: the escaping every JSON output of the decoder uses (the exports, the
// summary and info documents, steps, timeline and diff), and the test that lets a writer copy a
// string as it is. Private to the decoder (decoder/src).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cupmon::decoder {

// `s` as a JSON string body (without the quotes): quotes, backslashes and control characters
// escaped, every other byte as it is.
std::string JsonEscape(std::string_view s);

// The length of the longest prefix of `s` that is a JSON string body as it is (no quote,
// backslash or control character): JsonEscape changes nothing there.
inline size_t JsonPlainPrefix(std::string_view s) {
  size_t i = 0;
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == '"' || c == '\\') break;
  }
  return i;
}

// True when JsonEscape(s) == s.
inline bool IsPlainJson(std::string_view s) { return JsonPlainPrefix(s) == s.size(); }

}  // namespace cupmon::decoder

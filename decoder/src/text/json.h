// JSON string bodies: the escaping every JSON output of the decoder uses (the exports, the
// summary and info documents, steps, timeline and diff), and the test that lets a writer copy a
// string as it is. Private to the decoder (decoder/src).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cupmon::decoder {

// `s` as a JSON string body (without the quotes): quotes, backslashes and control characters
// escaped. The decoder's strings (kernel names, NVTX labels, paths) are bytes, and JSON text is
// UTF-8: well-formed UTF-8 is copied as it is, and each ill-formed part (a byte that starts no
// sequence, or the start of a sequence that breaks off) becomes U+FFFD, as a UTF-8 decoder that
// replaces errors reads it (Python's, a browser's), so that every JSON reader takes the document.
std::string JsonEscape(std::string_view s);

// JsonPlainPrefix from `i` on, where s[i] is a byte of 0x80 or above.
size_t JsonPlainPrefixFrom(std::string_view s, size_t i);

// The length of the longest prefix of `s` that is a JSON string body as it is (no quote,
// backslash or control character, and well-formed UTF-8): JsonEscape changes nothing there.
// Inline for ASCII, nearly every name.
inline size_t JsonPlainPrefix(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) return JsonPlainPrefixFrom(s, i);
    if (c < 0x20 || c == '"' || c == '\\') return i;
  }
  return s.size();
}

// True when JsonEscape(s) == s.
inline bool IsPlainJson(std::string_view s) { return JsonPlainPrefix(s) == s.size(); }

}  // namespace cupmon::decoder

// JSON string bodies (decoder/src/text/json.h): what JsonEscape writes, and that IsPlainJson
// answers true exactly where it changes nothing.
#include "text/json.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <string_view>

#include "text/out_buf.h"

namespace cupmon::decoder {
namespace {

TEST(JsonTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonEscape(R"(a"b\c)"), R"(a\"b\\c)");
  EXPECT_EQ(JsonEscape("l1\nl2\tx\ry"), R"(l1\nl2\tx\ry)");
  EXPECT_EQ(JsonEscape(std::string("\x01\x1f", 2)), R"(\u0001\u001f)");
  EXPECT_EQ(JsonEscape(std::string_view("a\0b", 3)), R"(a\u0000b)");
  EXPECT_EQ(JsonEscape(""), "");
}

TEST(JsonTest, PlainPrefixEndsWhereEscapingBegins) {
  EXPECT_EQ(JsonPlainPrefix("void k<int>(float*)"), 19u);
  EXPECT_EQ(JsonPlainPrefix(R"(ab"c)"), 2u);
  EXPECT_EQ(JsonPlainPrefix("ab\\c"), 2u);
  EXPECT_EQ(JsonPlainPrefix("ab\nc"), 2u);
  for (std::string_view s : {"", "plain", "q\"", "b\\", "c\x01", "tab\t"})
    EXPECT_EQ(IsPlainJson(s), JsonEscape(s) == s) << s;
}

// Kernel names, NVTX labels and paths are bytes, and JSON text is UTF-8 (RFC 8259, section 8.1):
// Python's json and HTA refuse a document with other bytes. Each ill-formed part becomes one
// U+FFFD, as Python's bytes.decode("utf-8", "replace") reads it.
TEST(JsonTest, IllFormedUtf8BecomesTheReplacementCharacter) {
  const std::string r = "\xef\xbf\xbd";
  // Well-formed UTF-8 stays as it is: two, three and four bytes.
  const std::string good = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  EXPECT_EQ(JsonEscape(good), good);
  EXPECT_TRUE(IsPlainJson(good));
  // A Latin-1 byte, a lone continuation byte, an overlong lead, a byte that is never UTF-8.
  EXPECT_EQ(JsonEscape("caf\xe9"), "caf" + r);
  EXPECT_EQ(JsonEscape("\x80x"), r + "x");
  EXPECT_EQ(JsonEscape("\xc0\xaf"), r + r);
  EXPECT_EQ(JsonEscape("a\xff"), "a" + r);
  // A sequence that breaks off is one U+FFFD; what follows is read anew.
  EXPECT_EQ(JsonEscape("\xe2\x82" "a"), r + "a");
  EXPECT_EQ(JsonEscape("\xe2\x82"), r);
  EXPECT_EQ(JsonEscape("\xf0\x9f\x98\""), r + "\\\"");
  // Surrogates, overlong forms and code points above U+10FFFF are ill-formed.
  EXPECT_EQ(JsonEscape("\xed\xa0\x80"), r + r + r);
  EXPECT_EQ(JsonEscape("\xe0\x80\x80"), r + r + r);
  EXPECT_EQ(JsonEscape("\xf4\x90\x80\x80"), r + r + r + r);
  for (std::string_view s : {"caf\xe9", "\x80", "\xe2\x82", "\xed\xa0\x80", "ok\xc3"}) {
    EXPECT_FALSE(IsPlainJson(s)) << s;
    EXPECT_LT(JsonPlainPrefix(s), s.size()) << s;
  }
  EXPECT_EQ(JsonPlainPrefix("ok\xc3\xa9\xff"), 4u);
}

// The exports' writers go through OutBuf::Json (and IsPlainJson for names they copy as they are).
TEST(JsonTest, TheExportBufferWritesIllFormedUtf8AsTheReplacementCharacter) {
  std::ostringstream out;
  {
    OutBuf buf(out);
    buf.Json("void k\xff<int>()");
  }
  EXPECT_EQ(out.str(), "void k\xef\xbf\xbd<int>()");
}

}  // namespace
}  // namespace cupmon::decoder

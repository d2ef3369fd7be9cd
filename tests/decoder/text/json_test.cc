// JSON string bodies (decoder/src/text/json.h): what JsonEscape writes, and that IsPlainJson
// answers true exactly where it changes nothing.
#include "text/json.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

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

}  // namespace
}  // namespace cupmon::decoder

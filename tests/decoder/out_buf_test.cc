// The exports' output buffer (decoder/src/text/out_buf.h): its integer formatting against
// std::to_chars, and what reaches the stream.
#include "text/out_buf.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace cupmon::decoder {
namespace {

std::string ToChars(uint64_t v) {
  char buf[24];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

std::string Formatted(uint64_t v) {
  char buf[24];
  return std::string(buf, FormatUint(buf, v));
}

// Every power of ten and its neighbours (each branch of FormatUint starts or ends there), and
// the extremes.
std::vector<uint64_t> Boundaries() {
  std::vector<uint64_t> v = {0, std::numeric_limits<uint32_t>::max(),
                             std::numeric_limits<uint64_t>::max(),
                             std::numeric_limits<uint64_t>::max() - 1};
  uint64_t p = 1;
  for (int i = 0; i < 20; ++i, p *= 10) {
    v.push_back(p - 1);
    v.push_back(p);
    v.push_back(p + 1);
    v.push_back(2 * p - 1);
    v.push_back(p * 9 + (p - 1));  // 99..9 of the next length
  }
  return v;
}

TEST(OutBufTest, FormatUintWritesWhatToCharsWritesAtEveryBoundary) {
  for (uint64_t v : Boundaries()) EXPECT_EQ(Formatted(v), ToChars(v)) << v;
}

// Every value of the two shortest branches (up to eight digits), where the digit counts are
// decided.
TEST(OutBufTest, FormatUintWritesWhatToCharsWritesForEveryValueBelowTenToTheEight) {
  char got[24], want[24];
  for (uint32_t v = 0; v < 100'000'000; ++v) {
    const char* end = FormatUint(got, v);
    const char* want_end = std::to_chars(want, want + sizeof want, v).ptr;
    if (std::string_view(got, static_cast<size_t>(end - got)) !=
        std::string_view(want, static_cast<size_t>(want_end - want)))
      FAIL() << v << ": " << std::string_view(got, static_cast<size_t>(end - got));
  }
}

TEST(OutBufTest, FormatUintWritesWhatToCharsWritesForValuesOfEveryLength) {
  std::mt19937_64 rng(16);
  for (int bits = 1; bits <= 64; ++bits) {
    const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    for (int i = 0; i < 2000; ++i) {
      const uint64_t v = rng() & mask;
      ASSERT_EQ(Formatted(v), ToChars(v)) << v;
    }
  }
}

std::string ToChars(int64_t v) {
  char buf[24];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// LeadingDigits keeps the digits above the last eight of the value before: each value is
// checked after values that share them, after ones that do not, and after ones of another
// length, negative or short.
TEST(OutBufTest, LeadingDigitsWriteWhatToCharsWritesWhateverCameBefore) {
  LeadingDigits digits;
  char buf[32];
  const auto put = [&](int64_t v) {
    return std::string(buf, static_cast<size_t>(digits.Put(buf, v) - buf));
  };
  std::vector<int64_t> values = {0, -1, 1, std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max()};
  for (uint64_t b : Boundaries())
    if (b <= uint64_t{std::numeric_limits<int64_t>::max()}) {
      values.push_back(static_cast<int64_t>(b));
      values.push_back(-static_cast<int64_t>(b));
    }
  std::mt19937_64 rng(19);
  const int64_t wall = 1'767'225'600'000'002'000;
  for (int i = 0; i < 20'000; ++i) {
    values.push_back(wall + static_cast<int64_t>(rng() % 1'000'000'000));  // shared leading part
    values.push_back(static_cast<int64_t>(rng() >> (rng() % 64)));         // any length
  }
  for (int64_t v : values) ASSERT_EQ(put(v), ToChars(v)) << v;
  // Each value again after every other kind of value before it.
  for (size_t i = 0; i + 1 < values.size(); i += 97) {
    for (size_t j = 0; j < values.size(); j += 211) {
      put(values[j]);
      ASSERT_EQ(put(values[i]), ToChars(values[i])) << values[i] << " after " << values[j];
    }
  }
}

TEST(OutBufTest, StreamsIntegersOfEveryTypeAsToCharsDoes) {
  std::ostringstream out;
  std::string expected;
  {
    OutBuf buf(out);
    const int64_t wall = 1'796'040'477'098'678'387;
    buf << int64_t{-1} << ',' << std::numeric_limits<int64_t>::min() << ','
        << std::numeric_limits<int64_t>::max() << ',' << wall << ',' << uint32_t{4'294'967'295u}
        << ',' << int32_t{-2'147'483'647 - 1} << ',' << uint16_t{65'535} << ',' << uint8_t{7}
        << ',' << int{0};
    buf.Reserve(64);
    buf.PutUint(12'345'678'901'234'567'890u);
    buf.Put(',');
    buf.PutMicros(-1);
    buf.Put(',');
    buf.PutMicros(1'250);
  }  // the destructor flushes
  expected = "-1,-9223372036854775808,9223372036854775807,1796040477098678387,4294967295,"
             "-2147483648,65535,7,012345678901234567890,-0.001,1.250";
  EXPECT_EQ(out.str(), expected);
}

}  // namespace
}  // namespace cupmon::decoder

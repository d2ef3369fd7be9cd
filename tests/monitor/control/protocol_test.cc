// Tests for the control-socket framing, peer policy and request validation (protocol.h).
#include "cupmon/control/protocol.h"

#include <gtest/gtest.h>

#include "cupmon.pb.h"

namespace cupmon::control {
namespace {

TEST(ProtocolTest, FrameIsLittleEndianLengthThenMessage) {
  pb::ControlRequest request;
  request.mutable_open_window()->set_duration_ms(300);  // > 255 so two length bytes matter
  request.mutable_open_window()->add_kinds(std::string(300, 'x'));
  const std::string frame = EncodeFrame(request);
  ASSERT_GT(frame.size(), kLengthPrefixBytes);
  unsigned char prefix[kLengthPrefixBytes];
  std::memcpy(prefix, frame.data(), kLengthPrefixBytes);
  const uint32_t length = DecodeLengthPrefix(prefix);
  EXPECT_EQ(length, frame.size() - kLengthPrefixBytes);
  EXPECT_EQ(prefix[0], length & 0xFF);
  EXPECT_EQ(prefix[1], (length >> 8) & 0xFF);
  pb::ControlRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(frame.substr(kLengthPrefixBytes)));
  EXPECT_EQ(parsed.open_window().duration_ms(), 300u);
}

TEST(ProtocolTest, DecodeLengthPrefixHighByte) {
  const unsigned char prefix[kLengthPrefixBytes] = {0x01, 0x02, 0x03, 0x84};
  EXPECT_EQ(DecodeLengthPrefix(prefix), 0x84030201u);
}

TEST(ProtocolTest, PeerAllowedOnlyForSameUidOrRoot) {
  EXPECT_TRUE(PeerAllowed(1000, 1000));
  EXPECT_TRUE(PeerAllowed(0, 1000));
  EXPECT_TRUE(PeerAllowed(0, 0));
  EXPECT_FALSE(PeerAllowed(1001, 1000));
  EXPECT_FALSE(PeerAllowed(65534, 0));
  EXPECT_FALSE(PeerAllowed(1000, 0));
}

TEST(ProtocolTest, KindsAreCaseInsensitiveAndDeduplicated) {
  auto kinds = NormalizeWindowKinds({"runtime", "Synchronization", "RUNTIME", "cuda_event"});
  ASSERT_TRUE(kinds.has_value()) << kinds.error().message;
  EXPECT_EQ(*kinds, (std::vector<std::string>{"RUNTIME", "SYNCHRONIZATION", "CUDA_EVENT"}));
  auto empty = NormalizeWindowKinds({});
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());
}

TEST(ProtocolTest, UnknownKindIsNamedInTheError) {
  auto kinds = NormalizeWindowKinds({"runtime", "KERNEL"});
  ASSERT_FALSE(kinds.has_value());
  EXPECT_NE(kinds.error().message.find("'KERNEL'"), std::string::npos);
  EXPECT_NE(kinds.error().message.find("EXTERNAL_CORRELATION"), std::string::npos);
}

TEST(ProtocolTest, WindowDurationLimits) {
  EXPECT_FALSE(ValidateWindowDurationMs(0).has_value());
  EXPECT_FALSE(ValidateWindowDurationMs(-5).has_value());
  EXPECT_TRUE(ValidateWindowDurationMs(1).has_value());
  EXPECT_TRUE(ValidateWindowDurationMs(kMaxWindowMs).has_value());
  EXPECT_FALSE(ValidateWindowDurationMs(kMaxWindowMs + 1).has_value());
}

TEST(ProtocolTest, ScheduleDelay) {
  const int64_t now = 1'700'000'000'000;
  EXPECT_EQ(ScheduleDelayMs(0, now).value(), 0);
  EXPECT_EQ(ScheduleDelayMs(now + 250, now).value(), 250);
  EXPECT_EQ(ScheduleDelayMs(now - 500, now).value(), 0);  // slightly late: open now
  EXPECT_FALSE(ScheduleDelayMs(now - kMaxScheduleLateMs - 1, now).has_value());
  EXPECT_TRUE(ScheduleDelayMs(now + kMaxScheduleAheadMs, now).has_value());
  EXPECT_FALSE(ScheduleDelayMs(now + kMaxScheduleAheadMs + 1, now).has_value());
}

// Found by cupmon_control_fuzz: at_unix_ms = INT64_MIN overflowed `at - now` (undefined; in the
// normal build it wrapped to a huge positive delay and was refused as "ahead").
TEST(ProtocolTest, ScheduleDelayAtTheEndsOfInt64) {
  const int64_t now = 1'700'000'000'000;
  const auto min = ScheduleDelayMs(INT64_MIN, now);
  ASSERT_FALSE(min.has_value());
  EXPECT_NE(min.error().message.find("in the past"), std::string::npos) << min.error().message;
  EXPECT_NE(min.error().message.find("9223373736854775808 ms"), std::string::npos)
      << min.error().message;
  const auto max = ScheduleDelayMs(INT64_MAX, -now);
  ASSERT_FALSE(max.has_value());
  EXPECT_NE(max.error().message.find("ahead"), std::string::npos) << max.error().message;
}

TEST(ProtocolTest, ParseDuration) {
  EXPECT_EQ(ParseDurationMs("250ms").value(), 250);
  EXPECT_EQ(ParseDurationMs("5s").value(), 5000);
  EXPECT_EQ(ParseDurationMs("1.5s").value(), 1500);
  EXPECT_EQ(ParseDurationMs("2m").value(), 120'000);
  EXPECT_EQ(ParseDurationMs("0s").value(), 0);  // parsed; ValidateWindowDurationMs rejects it
  for (const char* bad : {"", "5", "-5s", "5h", "abc", "s", "5 s", "1e999s", "5sec"}) {
    EXPECT_FALSE(ParseDurationMs(bad).has_value()) << bad;
  }
  EXPECT_NE(ParseDurationMs("5").error().message.find("unit"), std::string::npos);
}

TEST(ProtocolTest, NextAlignedIsStrictlyLaterMultiple) {
  EXPECT_EQ(NextAlignedUnixMs(12'345, 10'000), 20'000);
  EXPECT_EQ(NextAlignedUnixMs(20'000, 10'000), 30'000);
  EXPECT_EQ(NextAlignedUnixMs(19'999, 10'000), 20'000);
  EXPECT_EQ(NextAlignedUnixMs(7, 1), 8);
}

}  // namespace
}  // namespace cupmon::control

namespace cupmon::control {
namespace {

TEST(ProtocolTest, Utf8IsCheckedAsRfc3629) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("RUNTIME"));
  EXPECT_TRUE(IsValidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));                      // U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // cut short
  EXPECT_FALSE(IsValidUtf8("a\x80"));             // lone continuation byte
}

TEST(ProtocolTest, TextIsMadeUtf8ByteByByte) {
  EXPECT_EQ(ToValidUtf8(""), "");
  EXPECT_EQ(ToValidUtf8("caf\xc3\xa9 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xf0\x9f\x98\x80");  // as is
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(ToValidUtf8("caf\xe9"), "caf" + fffd);             // Latin-1
  EXPECT_EQ(ToValidUtf8("\xc0\xaf"), fffd + fffd);             // overlong: each byte
  EXPECT_EQ(ToValidUtf8("\xed\xa0\x80"), fffd + fffd + fffd);  // a surrogate
  EXPECT_EQ(ToValidUtf8("ab\xe2\x82"), "ab" + fffd + fffd);    // cut short at the end
  EXPECT_EQ(ToValidUtf8("\xff\xc3\xa9"), fffd + "\xc3\xa9");   // a valid sequence after a bad byte
  for (const char* text : {"caf\xe9", "\xc0\xaf", "\xed\xa0\x80", "ab\xe2\x82", "\xff\xc3\xa9"})
    EXPECT_TRUE(IsValidUtf8(ToValidUtf8(text))) << text;
}

TEST(ProtocolTest, RequestsWithInvalidUtf8KindsDoNotParseQuietly) {
  pb::ControlRequest request;
  request.mutable_open_window()->set_duration_ms(100);
  request.mutable_open_window()->add_kinds("RUNTIME");
  std::string bytes = request.SerializeAsString();
  EXPECT_TRUE(ControlRequestParsesQuietly(bytes));
  const size_t at = bytes.find("RUNTIME");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 3] = '\xff';
  EXPECT_FALSE(ControlRequestParsesQuietly(bytes));
  EXPECT_FALSE(ControlRequestParsesQuietly(std::string("\x0f\x01", 2)));  // not wire format
  EXPECT_TRUE(ControlRequestParsesQuietly(""));  // empty: parses (and is then refused as empty)
}

}  // namespace
}  // namespace cupmon::control

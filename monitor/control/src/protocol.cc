// Control-socket framing, the peer policy and request validation (see protocol.h).
#include "cupmon/control/protocol.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <string>

#include <google/protobuf/message_lite.h>

namespace cupmon::control {

std::string EncodeFrame(const google::protobuf::MessageLite& message) {
  const size_t size = message.ByteSizeLong();
  std::string out(kLengthPrefixBytes + size, '\0');
  const auto n = static_cast<uint32_t>(size);
  for (size_t i = 0; i < kLengthPrefixBytes; ++i) {
    out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  }
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + kLengthPrefixBytes));
  return out;
}

uint32_t DecodeLengthPrefix(const unsigned char (&prefix)[kLengthPrefixBytes]) {
  return static_cast<uint32_t>(prefix[0]) | (static_cast<uint32_t>(prefix[1]) << 8) |
         (static_cast<uint32_t>(prefix[2]) << 16) | (static_cast<uint32_t>(prefix[3]) << 24);
}

bool PeerAllowed(uid_t peer_uid, uid_t own_uid) { return peer_uid == own_uid || peer_uid == 0; }

Expected<std::vector<std::string>> NormalizeWindowKinds(const std::vector<std::string>& kinds) {
  std::vector<std::string> out;
  for (const std::string& kind : kinds) {
    std::string upper = kind;
    std::ranges::transform(upper, upper.begin(),
                           [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    if (std::ranges::find(kWindowKindNames, upper) == kWindowKindNames.end()) {
      std::string known;
      for (std::string_view name : kWindowKindNames) {
        known += known.empty() ? "" : ", ";
        known += name;
      }
      return MakeError("unknown activity kind '" + kind + "'; a window accepts " + known);
    }
    if (std::ranges::find(out, upper) == out.end()) out.push_back(std::move(upper));
  }
  return out;
}

Expected<void> ValidateWindowDurationMs(int64_t duration_ms) {
  if (duration_ms <= 0) {
    return MakeError("window duration must be positive, got " + std::to_string(duration_ms) + " ms");
  }
  if (duration_ms > kMaxWindowMs) {
    return MakeError("window duration " + std::to_string(duration_ms) + " ms exceeds the limit of " +
                     std::to_string(kMaxWindowMs) + " ms (24 h)");
  }
  return {};
}

Expected<int64_t> ScheduleDelayMs(int64_t at_unix_ms, int64_t now_unix_ms) {
  if (at_unix_ms == 0) return 0;
  // In 128 bits: at_unix_ms comes off the socket and may be anywhere in int64, where the difference
  // overflows (found by cupmon_control_fuzz with at_unix_ms = INT64_MIN).
  __extension__ using Int128 = __int128;
  const Int128 delay = static_cast<Int128>(at_unix_ms) - now_unix_ms;
  if (delay < -kMaxScheduleLateMs) {
    return MakeError("window start " + std::to_string(at_unix_ms) + " (epoch ms) is " +
                     std::to_string(static_cast<uint64_t>(-delay)) + " ms in the past; at most " +
                     std::to_string(kMaxScheduleLateMs) + " ms late is accepted");
  }
  if (delay > kMaxScheduleAheadMs) {
    return MakeError("window start " + std::to_string(at_unix_ms) + " (epoch ms) is " +
                     std::to_string(static_cast<uint64_t>(delay)) +
                     " ms ahead; at most 24 h ahead is accepted");
  }
  return std::max<int64_t>(static_cast<int64_t>(delay), 0);
}

Expected<int64_t> ParseDurationMs(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return MakeError("bad duration '" + std::string(text) + "': " + std::string(why) +
                     " (examples: 500ms, 5s, 2m)");
  };
  size_t unit_pos = 0;
  while (unit_pos < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[unit_pos])) || text[unit_pos] == '.' ||
          text[unit_pos] == '-' || text[unit_pos] == '+')) {
    ++unit_pos;
  }
  const std::string_view number = text.substr(0, unit_pos);
  const std::string_view unit = text.substr(unit_pos);
  if (number.empty()) return bad("no number");
  if (number.front() == '-') return bad("negative");
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size() || !std::isfinite(value)) {
    return bad("not a number");
  }
  double scale = 0;
  if (unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60'000;
  } else if (unit.empty()) {
    return bad("missing unit (ms, s or m)");
  } else {
    return bad("unknown unit (use ms, s or m)");
  }
  const double ms = value * scale;
  if (ms > 1e15) return bad("too large");
  return static_cast<int64_t>(std::llround(ms));
}

int64_t NextAlignedUnixMs(int64_t now_unix_ms, int64_t period_ms) {
  if (period_ms <= 0) return now_unix_ms;
  return (now_unix_ms / period_ms + 1) * period_ms;
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace cupmon::control

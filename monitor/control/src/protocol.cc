// Control-socket framing, the peer policy and request validation (see protocol.h).
#include "cupmon/control/protocol.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <string>

#include <google/protobuf/message_lite.h>
#include <google/protobuf/unknown_field_set.h>

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

namespace {
// The length of the RFC 3629 UTF-8 sequence at p (before end), or 0 when none starts there.
size_t Utf8SequenceAt(const unsigned char* p, const unsigned char* end) {
  const unsigned char c = *p;
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 2;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 3;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (static_cast<size_t>(end - p) <= n) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i <= n; ++i) {
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  }
  return n + 1;
}
}  // namespace

bool IsValidUtf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const size_t n = Utf8SequenceAt(p, end);
    if (n == 0) return false;
    p += n;
  }
  return true;
}

std::string ToValidUtf8(std::string_view text) {
  if (IsValidUtf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const size_t n = Utf8SequenceAt(p, end);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++p;
      continue;
    }
    out.append(reinterpret_cast<const char*>(p), n);
    p += n;
  }
  return out;
}

bool ControlRequestParsesQuietly(std::string_view body) {
  using google::protobuf::UnknownField;
  using google::protobuf::UnknownFieldSet;
  // Parsed without a schema first: no UTF-8 checks, no logging.
  UnknownFieldSet request;
  if (!request.ParseFromArray(body.data(), static_cast<int>(body.size()))) return false;
  for (int i = 0; i < request.field_count(); ++i) {
    const UnknownField& field = request.field(i);
    // ControlRequest.open_window = 2, OpenWindowRequest.kinds = 2: the only string fields.
    if (field.number() != 2 || field.type() != UnknownField::TYPE_LENGTH_DELIMITED) continue;
    UnknownFieldSet open_window;
    if (!open_window.ParseFromString(field.length_delimited())) return false;
    for (int j = 0; j < open_window.field_count(); ++j) {
      const UnknownField& kind = open_window.field(j);
      if (kind.number() == 2 && kind.type() == UnknownField::TYPE_LENGTH_DELIMITED &&
          !IsValidUtf8(kind.length_delimited())) {
        return false;
      }
    }
  }
  return true;
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

Expected<void> ValidateSlowerFactor(double factor) {
  if (!(factor > 1.0) || !(factor <= 1000.0))  // NaN fails both
    return MakeError("--when-slower factor must be above 1 and at most 1000 (such as 1.5), got " +
                     std::to_string(factor));
  return {};
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

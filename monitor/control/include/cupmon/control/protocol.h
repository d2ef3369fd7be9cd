// Control-socket wire format and request validation shared by the server (ControlPlane) and the client
// (cupmonctl): u32 little-endian length prefix + one protobuf message, plus the checks on requests.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cupmon/base/error.h"

namespace google::protobuf {
class MessageLite;
}  // namespace google::protobuf

namespace cupmon::control {

inline constexpr size_t kLengthPrefixBytes = 4;

// Window lengths and scheduling horizon accepted by the monitor.
inline constexpr int64_t kMaxWindowMs = 24LL * 60 * 60 * 1000;
inline constexpr int64_t kMaxScheduleAheadMs = 24LL * 60 * 60 * 1000;
// A window requested for an instant up to this far in the past opens at once (clock skew between
// hosts, transfer time); further in the past is an error.
inline constexpr int64_t kMaxScheduleLateMs = 1000;

// The activity kinds a trace window may add, by their CUPTI names without the prefix.
inline constexpr std::array<std::string_view, 7> kWindowKindNames = {
    "RUNTIME",    "DRIVER",         "OVERHEAD", "SYNCHRONIZATION",
    "CUDA_EVENT", "EXTERNAL_CORRELATION", "MARKER"};

// Returns `message` serialised behind its 4-byte little-endian length.
std::string EncodeFrame(const google::protobuf::MessageLite& message);
uint32_t DecodeLengthPrefix(const unsigned char (&prefix)[kLengthPrefixBytes]);

// True when protobuf parses `body` as a ControlRequest without logging anything: it is well-formed
// wire format and every string field (the window kinds) is valid UTF-8. libprotobuf writes an
// `[libprotobuf ERROR ...]` line to stderr, which is the application's, for a string field with
// invalid UTF-8 (seen by cupmon_control_fuzz); the server calls this first and treats such bytes
// as malformed, so no client can write into the host job's log.
bool ControlRequestParsesQuietly(std::string_view body);

// RFC 3629 UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool IsValidUtf8(std::string_view text);
// `text` with each byte that starts no valid UTF-8 sequence replaced by U+FFFD: what a reply's
// string field may carry of text the process or its environment gave (a Latin-1 path, argument
// or job id). Protobuf logs an error into the application's stderr when it serialises a string
// field that is not UTF-8, and the client refuses to parse it.
std::string ToValidUtf8(std::string_view text);

// SO_PEERCRED policy: a peer may talk to the monitor when it runs as the monitor's effective uid or as
// root. Everyone else is refused.
bool PeerAllowed(uid_t peer_uid, uid_t own_uid);

// Upper-cases, checks against kWindowKindNames and de-duplicates (first occurrence wins). An empty
// list stays empty: it means "the monitor's configured window kinds".
Expected<std::vector<std::string>> NormalizeWindowKinds(const std::vector<std::string>& kinds);

// 0, negative and > kMaxWindowMs are errors.
Expected<void> ValidateWindowDurationMs(int64_t duration_ms);
// --when-slower: a finite factor above 1 and at most 1000.
Expected<void> ValidateSlowerFactor(double factor);

// Decides when a window requested for `at_unix_ms` (0: now) opens, given the current wall-clock time.
// Returns the delay in ms (0: open now) or an error for an instant too far in the past or future.
Expected<int64_t> ScheduleDelayMs(int64_t at_unix_ms, int64_t now_unix_ms);

// Parses "250ms", "5s", "2m" (also "1.5s") into milliseconds. Rejects a bare number (ambiguous unit),
// negative values and anything else with a message naming the input.
Expected<int64_t> ParseDurationMs(std::string_view text);

// The next wall-clock instant strictly after `now_unix_ms` that is a multiple of `period_ms`, so that
// `--align 10s` on several hosts picks the same instant.
int64_t NextAlignedUnixMs(int64_t now_unix_ms, int64_t period_ms);

// Milliseconds since the Unix epoch (CLOCK_REALTIME).
int64_t NowUnixMs();

}  // namespace cupmon::control

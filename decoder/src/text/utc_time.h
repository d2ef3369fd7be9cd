// Wall-clock times as text: the ISO-8601 UTC form the reports and exports print. Private to the
// decoder (decoder/src).
#pragma once

#include <cstdint>
#include <string>

namespace cupmon::decoder {

// Unix ns as ISO-8601 UTC with `digits` decimals of the second (9, the default, for --from/--to,
// which take nanoseconds): "2026-11-30T10:14:07.628224Z" with 6.
std::string UtcTime(int64_t unix_ns, int digits = 9);

}  // namespace cupmon::decoder

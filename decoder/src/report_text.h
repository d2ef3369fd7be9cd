// Small text formatters the reports share (steps, diff, the HTML report): fixed decimals and UTC
// wall-clock times. Private to the decoder.
#pragma once

#include <cstdint>
#include <string>

namespace cupmon::decoder {

// `v` with exactly `decimals` decimals ("%.*f").
std::string Fixed(double v, int decimals);
// Unix ns as ISO-8601 UTC with `digits` decimals of the second (9, the default, for --from/--to,
// which take nanoseconds): "2026-11-30T10:14:07.628224Z" with 6.
std::string UtcTime(int64_t unix_ns, int digits = 9);

}  // namespace cupmon::decoder

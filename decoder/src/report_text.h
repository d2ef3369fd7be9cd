// Small text formatters the reports share (summary, info, the text traces, steps, diff, the HTML
// report): printf into a string, fixed decimals, UTC wall-clock times, nvprof's units, and the
// lines of counts that summary and info both print. Private to the decoder.
#pragma once

#include <cstdint>
#include <string>

#include "cupmon/decoder/trace_builder.h"
#include "text/printf.h"    // Printf
#include "text/utc_time.h"  // UtcTime

namespace cupmon::decoder {

// `v` with exactly `decimals` decimals ("%.*f").
std::string Fixed(double v, int decimals);

// Unix ns as ISO-8601 UTC with nanoseconds ("2026-11-30T10:14:07.628224123Z").
std::string IsoTime(int64_t unix_ns);
// Signed relative time with nvprof units.
std::string FormatRel(int64_t ns);
// Bytes with nvprof's units: "512B", "1.5KB", "3.2MB".
std::string FormatBytes(uint64_t b);
// "N records (K kernel; by kind 10=K 5=M) in C chunks not written (W write errors)".
std::string LostBeforeDisk(const pb::Stats& s);
// Records the writer took in (Stats.records) against where they went.
std::string RecordBalance(const TraceCounts& c);
// "5 ranges, 1 marks, 1 unended, 1 END(s) without START, 1 unresolved names" (summary, info).
std::string NvtxCountsText(const TraceCounts& c);

}  // namespace cupmon::decoder

// What the commands share: which report (ReportKind) and in which form (ReportFormat,
// report_format.h), and the duration and time texts of their output and options. The commands:
// cupmon/decoder/commands.h.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cupmon/decoder/diagnostics.h"
#include "cupmon/decoder/diff.h"
#include "cupmon/decoder/export_format.h"
#include "cupmon/decoder/report_format.h"
#include "cupmon/decoder/steps.h"
#include "cupmon/decoder/timeline.h"
#include "cupmon/decoder/trace_builder.h"

namespace cupmon::decoder {

// nvprof-style duration: 5 significant digits with the unit scaled (e.g. "15.840us", "1.0090ms").
std::string FormatDuration(double ns);
// Parses a --from/--to value: "<number><ns|us|ms|s|m|h>" relative to the recording's first
// timestamp, or "@<unix ns>" / an ISO-8601 UTC time ("2026-03-01T12:00:00Z") for wall-clock time.
// Sets exactly one of *rel / *wall.
bool ParseTimeArg(const std::string& text, std::optional<int64_t>* rel,
                  std::optional<int64_t>* wall);

}  // namespace cupmon::decoder

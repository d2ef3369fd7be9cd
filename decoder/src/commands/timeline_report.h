// `cupmon-decode timeline`: TimelineBuilder's buckets (cupmon/decoder/timeline.h) over each rank's
// GPU activity, as CSV or JSONL rows. Run by RunTimelineCommand (commands.cc) once the ranks are
// chosen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <vector>

#include "cupmon/decoder/commands.h"
#include "cupmon/decoder/diagnostics.h"
#include "cupmon/decoder/export_format.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/timeline.h"

namespace cupmon::decoder {

// Writes the rows of each rank in `chosen` in turn; `warnings` carries what the listing already
// warned about.
Outcome RunTimelineReport(const std::vector<const Rank*>& chosen,
                          const TimelineReportOptions& options, std::ostream& out,
                          Diagnostics& diagnostics, bool warnings);

}  // namespace cupmon::decoder

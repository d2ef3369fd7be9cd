// `cupmon-decode timeline`: TimelineBuilder's buckets (cupmon/decoder/timeline.h) over each rank's
// GPU activity, as CSV or JSONL rows. Called by RunReport once the ranks are chosen.
#pragma once

#include <ostream>
#include <vector>

#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/reports.h"

namespace cupmon::decoder {

// Writes the rows of each rank in `chosen` in turn (options.format kCsv or kJsonl,
// options.timeline the bucket size); `warnings` carries what the listing already warned about.
// Returns an exit code.
int RunTimelineReport(const std::vector<const Rank*>& chosen, const ReportOptions& options,
                      std::ostream& out, std::ostream& err, bool warnings);

}  // namespace cupmon::decoder

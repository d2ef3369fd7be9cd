// `cupmon-decode job`: which rank made a step slow, and why. Reads every rank once (RankPass):
// its GPU activity and its steps, handed to the job analysis (decoder/src/job/job_analysis.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/reports.h"

namespace cupmon::decoder {

// Called by RunReport once the ranks are chosen. Reads options.report_format (text or json),
// options.steps (how steps are found, the slow factor and rolling window) and the filter's
// --from/--to (the job steps whose start lies in the range); other filters are refused. `paths`
// are the user's arguments (for the drill-down command lines); `warnings` carries what the
// listing already warned about. Returns an exit code.
int RunJobCommand(const std::vector<const Rank*>& chosen, const std::vector<std::string>& paths,
                  const ReportOptions& options, std::ostream& out, std::ostream& err,
                  bool warnings);

}  // namespace cupmon::decoder

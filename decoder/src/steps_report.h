// `cupmon-decode steps`: the report over FindSteps (decoder/src/steps.cc), per rank on merged
// recordings. Called by RunReport once the ranks are chosen.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/reports.h"

namespace cupmon::decoder {

// `paths` are the user's arguments (for the drill-down command lines); `warnings` carries what
// the listing already warned about. Returns an exit code.
int RunStepsReport(const std::vector<const Rank*>& chosen, const std::vector<std::string>& paths,
                   const ReportOptions& options, std::ostream& out, std::ostream& err,
                   bool warnings);

}  // namespace cupmon::decoder

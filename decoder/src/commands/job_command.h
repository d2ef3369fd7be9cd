// `cupmon-decode job`: which rank made a step slow, and why. Reads every rank once (RankPass):
// its GPU activity and its steps, handed to the job analysis (decoder/src/job/job_analysis.h).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cupmon/decoder/commands.h"
#include "cupmon/decoder/diagnostics.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/reports.h"
#include "cupmon/decoder/steps.h"

namespace cupmon::decoder {

// Run by RunJobCommand (commands.cc) once the ranks are chosen. `paths` are the user's arguments
// (for the drill-down command lines); `warnings` carries what the listing already warned about.
Outcome RunJobReport(const std::vector<const Rank*>& chosen,
                     const std::vector<std::string>& paths, const JobCommandOptions& options,
                     std::ostream& out, Diagnostics& diagnostics, bool warnings);

}  // namespace cupmon::decoder

// `cupmon-decode steps`: the report over FindSteps (decoder/src/steps.cc), per rank on merged
// recordings. Run by RunStepsCommand (commands.cc) once the ranks are chosen.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cupmon/decoder/commands.h"
#include "cupmon/decoder/diagnostics.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/steps.h"

namespace cupmon::decoder {

// `paths` are the user's arguments (for the drill-down command lines); `warnings` carries what
// the listing already warned about.
Outcome RunStepsReport(const std::vector<const Rank*>& chosen,
                       const std::vector<std::string>& paths, const StepsReportOptions& options,
                       std::ostream& out, Diagnostics& diagnostics, bool warnings);

}  // namespace cupmon::decoder

// `cupmon-decode job`: which rank made a step slow, and why. Reads every rank once (RankPass):
// its GPU activity and its steps, made into its step table (decoder/src/job/rank_table.h), the
// tables merged (decoder/src/job/job_merge.h); or merges tables written by --tables-out.
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

// Run by RunJobCommand (commands.cc) when its paths hold step tables (`--tables-out`'s files,
// `files` as FindTableFiles lists them): merged, then answered as over recordings.
Outcome RunJobTables(const std::vector<std::string>& files, const JobCommandOptions& options,
                     std::ostream& out, Diagnostics& diagnostics);

}  // namespace cupmon::decoder

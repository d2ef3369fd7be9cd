// `cupmon-decode job`: which rank made a step slow, and why. Reads every rank once (RankPass):
// its GPU activity and its steps, made into its step table (decoder/src/job/rank_table.h), the
// tables merged (decoder/src/job/job_merge.h); or merges tables written by --tables-out.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "commands/command_options.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/reports.h"
#include "cupmon/decoder/steps.h"

namespace cupmon::decoder {

struct JobCommandOptions {
  // The filter's --from/--to choose the job steps whose start lies in the range; its other
  // filters are refused.
  RankReadOptions read;
  std::optional<uint64_t> limit;  // refused
  ReportFormat format = ReportFormat::kText;  // text or json (csv is refused)
  StepOptions steps;  // how each rank's steps are found, the slow factor and rolling window
  // Write each rank's step table there (`.cupmon-job` files) instead of the answers.
  std::string tables_out;
};

// Run by RunReport once the ranks are chosen. `paths` are the user's arguments (for the
// drill-down command lines); `warnings` carries what the listing already warned about. Returns
// an exit code.
int RunJobCommand(const std::vector<const Rank*>& chosen, const std::vector<std::string>& paths,
                  const JobCommandOptions& options, std::ostream& out, std::ostream& err,
                  bool warnings);

// `cupmon-decode job` over step tables (`--tables-out`'s files, `files` as FindTableFiles lists
// them): merged, then answered as over recordings. Returns an exit code.
int RunJobTables(const std::vector<std::string>& files, const JobCommandOptions& options,
                 std::ostream& out, std::ostream& err);

}  // namespace cupmon::decoder

// `cupmon-decode report`: one self-contained HTML page per job (decoder/src/html_report.cc).
// Called by RunReport once the ranks are chosen.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/reports.h"

namespace cupmon::decoder {

// Writes the page for the ranks in `chosen` to `out` (cupmon-decode's -o FILE is an OutputFile:
// written beside FILE, renamed onto it once complete). `paths` are the
// user's arguments (for the drill-down command lines); `warnings` carries what the listing
// already warned about. Returns an exit code.
int RunHtmlReport(const std::vector<const Rank*>& chosen, const std::vector<std::string>& paths,
                  const ReportOptions& options, std::ostream& out, std::ostream& err,
                  bool warnings);

}  // namespace cupmon::decoder

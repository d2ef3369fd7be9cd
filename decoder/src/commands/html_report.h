// `cupmon-decode report`: one self-contained HTML page per job (commands/html_report.cc). Run by
// RunHtmlCommand (commands.cc) once the ranks are chosen.
#pragma once

#include <cstddef>
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

// Writes the page for the ranks in `chosen` to `out` (cupmon-decode's -o FILE is an OutputFile:
// written beside FILE, renamed onto it once complete). `paths` are the
// user's arguments (for the drill-down command lines); `warnings` carries what the listing
// already warned about.
Outcome RunHtmlReport(const std::vector<const Rank*>& chosen,
                      const std::vector<std::string>& paths, const HtmlReportOptions& options,
                      std::ostream& out, Diagnostics& diagnostics, bool warnings);

}  // namespace cupmon::decoder

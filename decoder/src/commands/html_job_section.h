// The HTML report's Job section: `cupmon-decode job`'s analysis of the report's ranks, its slow
// steps with their verdicts (the culprit marked) and the ranks over its steps.
#pragma once

#include <cstddef>
#include <ostream>

#include "cupmon/decoder/commands.h"
#include "job/job_analysis.h"

namespace cupmon::decoder {

// Writes the section; at most `slow_listed` slow steps are listed, the rest counted.
void WriteJobSection(std::ostream& o, const job::JobAnalysis& a, const HtmlReportOptions& options,
                     size_t slow_listed);

}  // namespace cupmon::decoder

// The commands that read each rank in one pass of its rows: summary and info (several ranks read
// at once), gpu-trace, api-trace and kern-exec (report_sinks.h) and export (export_sink.h, a
// format of export/registry.h), one rank after another into one sink. Run by RunRowsCommand (commands.cc) once the
// ranks are chosen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cupmon/decoder/commands.h"
#include "cupmon/decoder/diagnostics.h"
#include "cupmon/decoder/export_format.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/reports.h"
#include "export/exporter.h"

namespace cupmon::decoder {

// `kind`: kSummary, kInfo, kGpuTrace, kApiTrace, kKernExec or kExport. `listing` and `chosen`:
// the ranks (ChosenRanks); `warnings` and `job_warnings`: what the listing already warned
// about (the latter for a document's top-level "warnings").
Outcome RunRowsReport(ReportKind kind, const RankListing& listing,
                      const std::vector<const Rank*>& chosen, const RowsReportOptions& options,
                      std::ostream& out, Diagnostics& diagnostics, bool warnings,
                      std::vector<std::string> job_warnings);

}  // namespace cupmon::decoder

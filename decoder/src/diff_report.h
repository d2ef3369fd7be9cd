// `cupmon-decode diff A B` (decoder/src/diff_report.cc). Called by RunReport for ReportKind::kDiff.
#pragma once

#include <ostream>
#include <string>

#include "cupmon/decoder/reports.h"

namespace cupmon::decoder {

// Reads side A from `path_a` and side B from `path_b` (each a directory, a rank directory or a
// .cupmon file; the same path twice for two windows or ranges of one recording), each through
// options.filter with options.diff's per-side selection, and writes the comparison to `out`.
// Returns kExitUnusable when a side cannot be read or holds nothing, kExitRegression when
// options.diff.fail_above is exceeded, else kExitWarnings or kExitClean.
int RunDiffReport(const std::string& path_a, const std::string& path_b,
                  const ReportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace cupmon::decoder

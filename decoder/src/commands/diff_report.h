// `cupmon-decode diff A B` (commands/diff_report.cc). Run by RunReport for ReportKind::kDiff.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "commands/command_options.h"
#include "cupmon/decoder/diagnostics.h"
#include "cupmon/decoder/diff.h"
#include "cupmon/decoder/steps.h"

namespace cupmon::decoder {

struct DiffReportOptions {
  RankReadOptions read;  // the filter both sides share, under each side's own selection
  std::optional<uint64_t> limit;  // rows of the table, csv and jsonl
  StepOptions steps;  // how each side's steps are found
  DiffOptions diff;   // per-side selections, format and the gate
};

// Reads side A from `path_a` and side B from `path_b` (each a directory, a rank directory or a
// .cupmon file; the same path twice for two windows or ranges of one recording), each through
// options.read.filter with options.diff's per-side selection, and writes the comparison to `out`.
// Fails (kFailed) when a side cannot be read or holds nothing; kRegression when
// options.diff.fail_above is exceeded, else kWarnings or kClean.
Outcome RunDiffReport(const std::string& path_a, const std::string& path_b,
                      const DiffReportOptions& options, std::ostream& out,
                      Diagnostics& diagnostics);

}  // namespace cupmon::decoder

// RunReport as the decoder tests call it: the library's messages rendered on `err` and its
// outcome turned into an exit code as cupmon-decode does both (tools/cupmon_decode/stderr_text.h),
// so that a test checks the text and the code a user sees.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cupmon/decoder/reports.h"
#include "cupmon_decode/stderr_text.h"

namespace cupmon::testing {

using decode_cli::kExitClean;
using decode_cli::kExitRegression;
using decode_cli::kExitUnusable;
using decode_cli::kExitWarnings;

inline int RunReport(decoder::ReportKind kind, const std::vector<std::string>& paths,
                     const decoder::ReportOptions& options, std::ostream& out, std::ostream& err) {
  decode_cli::StderrText text(err);
  return decode_cli::ExitCode(decoder::RunReport(kind, paths, options, out, text));
}

inline int RunReport(decoder::ReportKind kind, const std::string& path,
                     const decoder::ReportOptions& options, std::ostream& out, std::ostream& err) {
  return RunReport(kind, std::vector<std::string>{path}, options, out, err);
}

}  // namespace cupmon::testing

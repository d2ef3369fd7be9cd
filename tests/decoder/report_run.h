// The decoder tests' way into the commands: one options struct for every command (ReportOptions,
// as a test sets what it needs) handed to the command's own options (cupmon/decoder/commands.h),
// the library's messages rendered on `err` and its outcome turned into an exit code as
// cupmon-decode does both (tools/cupmon_decode/stderr_text.h), so that a test checks the text
// and the code a user sees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cupmon/decoder/commands.h"
#include "cupmon_decode/stderr_text.h"

namespace cupmon::testing {

using decode_cli::kExitClean;
using decode_cli::kExitRegression;
using decode_cli::kExitUnusable;
using decode_cli::kExitWarnings;

struct ReportOptions {
  decoder::TraceFilter filter;
  std::optional<uint32_t> pid;
  std::optional<uint64_t> limit;
  decoder::ExportFormat format = decoder::ExportFormat::kChromeJson;  // export; timeline
  decoder::ReportFormat report_format = decoder::ReportFormat::kText;  // summary, info, job
  size_t horizon = 1 << 16;
  size_t reorder_rows = 1 << 16;
  uint64_t reorder_ns = 0;
  bool recursive = false;
  size_t jobs = 0;
  std::string output_dir;   // export --format kineto
  std::string output_path;  // export --format sqlite
  decoder::KinetoSteps kineto_steps = decoder::KinetoSteps::kAuto;
  bool kineto_synthetic_launches = false;
  decoder::StepOptions steps;
  decoder::TimelineOptions timeline;
  decoder::DiffOptions diff;
  bool full_names = false;
};

inline decoder::RankReadOptions ReadOptionsOf(const ReportOptions& o) {
  decoder::RankReadOptions r;
  r.filter = o.filter;
  r.pid = o.pid;
  r.horizon = o.horizon;
  r.recursive = o.recursive;
  r.jobs = o.jobs;
  r.full_names = o.full_names;
  return r;
}

// The command `kind` over `paths` (diff: A then B), as cupmon-decode runs it; returns its exit
// code.
inline int RunReport(decoder::ReportKind kind, const std::vector<std::string>& paths,
                     const ReportOptions& o, std::ostream& out, std::ostream& err) {
  using decoder::ReportKind;
  decode_cli::StderrText text(err);
  const decoder::RankReadOptions read = ReadOptionsOf(o);
  decoder::Outcome outcome;
  switch (kind) {
    case ReportKind::kSteps:
      outcome = decoder::RunStepsCommand(paths, {.read = read, .limit = o.limit, .steps = o.steps},
                                         out, text);
      break;
    case ReportKind::kJob:
      outcome = decoder::RunJobCommand(paths,
                                       {.read = read,
                                        .limit = o.limit,
                                        .format = o.report_format,
                                        .steps = o.steps,
                                        .tables_out = {}},
                                       out, text);
      break;
    case ReportKind::kTimeline:
      outcome = decoder::RunTimelineCommand(paths,
                                            {.read = read,
                                             .limit = o.limit,
                                             .format = o.format,
                                             .reorder_rows = o.reorder_rows,
                                             .timeline = o.timeline},
                                            out, text);
      break;
    case ReportKind::kReport:
      outcome = decoder::RunHtmlCommand(
          paths, {.read = read, .limit = o.limit, .steps = o.steps, .reorder_rows = o.reorder_rows},
          out, text);
      break;
    case ReportKind::kDiff:
      if (paths.size() != 2) {
        text.Error("diff compares two recordings: cupmon-decode diff A B (got " +
                   std::to_string(paths.size()) + " path(s))");
        return kExitUnusable;
      }
      outcome = decoder::RunDiffCommand(
          paths[0], paths[1], {.read = read, .limit = o.limit, .steps = o.steps, .diff = o.diff},
          out, text);
      break;
    default: {
      decoder::RowsReportOptions rows;
      rows.read = read;
      rows.limit = o.limit;
      rows.reorder_rows = o.reorder_rows;
      rows.reorder_ns = o.reorder_ns;
      rows.format = o.report_format;
      rows.export_format = o.format;
      rows.export_settings = {.output_dir = o.output_dir,
                              .output_path = o.output_path,
                              .kineto_steps = o.kineto_steps,
                              .kineto_synthetic_launches = o.kineto_synthetic_launches};
      outcome = decoder::RunRowsCommand(kind, paths, rows, out, text);
    }
  }
  return decode_cli::ExitCode(outcome);
}

inline int RunReport(decoder::ReportKind kind, const std::string& path, const ReportOptions& o,
                     std::ostream& out, std::ostream& err) {
  return RunReport(kind, std::vector<std::string>{path}, o, out, err);
}

}  // namespace cupmon::testing

// cupmon-decode's commands as the library runs them: one entry per command, each with its own
// options struct, over the user's paths (directories, their per-rank subdirectories, .cupmon
// files; see ListRanks). Several recordings are merged, one rank per recording (process). Each
// writes its output to `out` and reports its messages and progress to `diagnostics`, and says
// how it ended (Outcome); the command-line tool fills the options and maps the outcome to its
// exit code. The commands live under decoder/src/commands/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cupmon/decoder/diagnostics.h"
#include "cupmon/decoder/diff.h"
#include "cupmon/decoder/export_format.h"
#include "cupmon/decoder/report_format.h"
#include "cupmon/decoder/step_options.h"
#include "cupmon/decoder/timeline.h"
#include "cupmon/decoder/trace_filter.h"

namespace cupmon::decoder {

// The options every command that reads recordings takes (filters, which recordings, how they are
// read); each command's own options struct holds one, beside its own choices.
struct RankReadOptions {
  TraceFilter filter;
  std::optional<uint32_t> pid;  // only the recording of this process
  size_t horizon = 1 << 16;     // join horizon in records (see TraceBuilder)
  // Search the given directories' subdirectories at any depth, not only one level down.
  bool recursive = false;
  // Ranks a merged summary, info, steps, job or report, or the two sides of a diff, reads at
  // once, each on its own threads (DecodeThreads() a read); 0 chooses: as many as the CPUs hold,
  // at most 8. Their output is the same, in rank order. Other commands read one rank at a time.
  size_t jobs = 0;
  // Text reports (summary, the traces, steps) show kernels by their short name
  // (ShortKernelName: "at::native::reduce_kernel") unless this is set (--full-names) or
  // filter.mangled is. Exports always carry the full names.
  bool full_names = false;
};

// summary, info, gpu-trace, api-trace, kern-exec and export: each rank read in one pass of its
// rows (commands/rows_report.cc).
struct RowsReportOptions {
  RankReadOptions read;
  std::optional<uint64_t> limit;  // rows of a trace or export (after filters)
  // Traces and exports list rows by start time through a bounded reorder stage (ReorderOptions):
  // at most reorder_rows rows held (0: delivery order), released early once the stream is
  // reorder_ns past them (0: count bound only). Summary and info do not reorder.
  size_t reorder_rows = 1 << 16;
  uint64_t reorder_ns = 0;
  ReportFormat format = ReportFormat::kText;  // summary and info (kCsv: summary only)
  ExportFormat export_format = ExportFormat::kChromeJson;  // export
  ExportSettings export_settings;                          // export
};
// `kind`: kSummary, kInfo, kGpuTrace, kApiTrace, kKernExec or kExport. One recording gives the
// single-recording report; several: summary a section per rank and a total, info a per-rank
// overview with the ranks' window begins in wall-clock time, chrome-json one timeline with a
// process per rank on one wall-clock axis, the traces and csv/jsonl each rank in turn, labelled.
// Problems of one rank (damage, a window the others have and it lacks) are reported and make
// the outcome kWarnings; the other ranks still merge.
Outcome RunRowsCommand(ReportKind kind, const std::vector<std::string>& paths,
                       const RowsReportOptions& options, std::ostream& out,
                       Diagnostics& diagnostics);

// steps: the report over FindSteps, per rank (commands/steps_report.cc).
struct StepsReportOptions {
  RankReadOptions read;  // filters other than --device/--stream/--kernel are refused
  std::optional<uint64_t> limit;  // refused: steps reads whole recordings
  StepOptions steps;
};
Outcome RunStepsCommand(const std::vector<std::string>& paths, const StepsReportOptions& options,
                        std::ostream& out, Diagnostics& diagnostics);

// job: which rank made a step slow, and why (commands/job_command.cc).
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
// Paths that hold step tables (`.cupmon-job` files, directly or one level down) are merged as
// tables, not read as recordings.
Outcome RunJobCommand(const std::vector<std::string>& paths, const JobCommandOptions& options,
                      std::ostream& out, Diagnostics& diagnostics);

// timeline: fixed wall-clock buckets per rank and device, as CSV or JSONL rows
// (commands/timeline_report.cc).
struct TimelineReportOptions {
  RankReadOptions read;
  std::optional<uint64_t> limit;  // refused: every bucket of the span is written
  ExportFormat format = ExportFormat::kCsv;  // kCsv or kJsonl
  size_t reorder_rows = 1 << 16;  // activities held to sort by wall-clock start
  TimelineOptions timeline;       // the bucket size and row limit
};
Outcome RunTimelineCommand(const std::vector<std::string>& paths,
                           const TimelineReportOptions& options, std::ostream& out,
                           Diagnostics& diagnostics);

// report: one self-contained HTML page (commands/html_report.cc).
struct HtmlReportOptions {
  RankReadOptions read;  // --window, --from and --to are refused: the page covers whole recordings
  std::optional<uint64_t> limit;  // refused
  StepOptions steps;
  size_t reorder_rows = 1 << 16;  // activities the busy chart's buckets hold to sort
};
Outcome RunHtmlCommand(const std::vector<std::string>& paths, const HtmlReportOptions& options,
                       std::ostream& out, Diagnostics& diagnostics);

// diff: B against A per kernel name and memcpy kind (commands/diff_report.cc).
struct DiffReportOptions {
  RankReadOptions read;  // the filter both sides share, under each side's own selection
  std::optional<uint64_t> limit;  // rows of the table, csv and jsonl
  StepOptions steps;  // how each side's steps are found
  DiffOptions diff;   // per-side selections, format and the gate
};
// Side A from `path_a`, side B from `path_b` (each a directory, a rank directory or a .cupmon
// file; the same path twice for two windows or ranges of one recording). kFailed when a side
// cannot be read or holds nothing; kRegression when options.diff.fail_above is exceeded.
Outcome RunDiffCommand(const std::string& path_a, const std::string& path_b,
                       const DiffReportOptions& options, std::ostream& out,
                       Diagnostics& diagnostics);

}  // namespace cupmon::decoder

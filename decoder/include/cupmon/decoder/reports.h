// cupmon-decode's commands (summary, gpu-trace, api-trace, kern-exec, export, info, steps,
// timeline, diff, report) behind one entry, RunReport; several recordings (ranks of one job) are
// merged into one view. Each command is a module under decoder/src/commands/ with its own
// options; RunReport lists the ranks and hands each command its part of ReportOptions. The
// command-line tool is a thin shell over these.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cupmon/decoder/diff.h"
#include "cupmon/decoder/export_format.h"
#include "cupmon/decoder/steps.h"
#include "cupmon/decoder/timeline.h"
#include "cupmon/decoder/trace_builder.h"

namespace cupmon::decoder {

// kTimeline writes ExportFormat kCsv or kJsonl. kReport: one self-contained HTML page
// (decoder/src/commands/html_report.cc). kJob: which rank made a step slow, and why
// (decoder/src/commands/job_command.cc).
enum class ReportKind { kSummary, kGpuTrace, kApiTrace, kKernExec, kExport, kInfo, kSteps,
                        kTimeline, kDiff, kReport, kJob };
// summary and info: the text report, one JSON document (schemas cupmon.summary/1 and
// cupmon.info/1, docs/DECODER.md), or CSV (summary's tables only; info has none).
enum class ReportFormat { kText, kJson, kCsv };

// The options of every command, as the command line gives them.
struct ReportOptions {
  TraceFilter filter;
  std::optional<uint32_t> pid;
  std::optional<uint64_t> limit;  // rows per trace/export (after filters)
  ExportFormat format = ExportFormat::kChromeJson;
  // summary and info (kCsv: summary only).
  ReportFormat report_format = ReportFormat::kText;
  // A progress line on `err` while large inputs are read (see ProgressLine). The tool sets it
  // when stderr is a terminal and the report's output does not stream to that terminal.
  bool progress = false;
  size_t horizon = 1 << 16;       // join horizon in records (see TraceBuilder)
  // Traces and exports list rows by start time through a bounded reorder stage (see
  // ReorderOptions): at most reorder_rows rows held (0: delivery order), released early once the
  // stream is reorder_ns past them (0: count bound only). Summary and info do not reorder.
  size_t reorder_rows = 1 << 16;
  uint64_t reorder_ns = 0;
  // Search the given directories' subdirectories at any depth, not only one level down.
  bool recursive = false;
  // Ranks a merged summary, info, steps or report, or the two sides of a diff, reads at once,
  // each on its own threads (DecodeThreads() a read); 0 chooses: as many as the CPUs hold, at
  // most 8. Their output is the same, in rank order. Other reports read one rank at a time.
  size_t jobs = 0;
  // Exports that write a directory (kKineto: DIR/rank0.json, ...); created when missing.
  std::string output_dir;
  // export --format kineto (decoder/src/export/kineto/): the steps written, and whether
  // GPU activities without a launch record get a marked zero-length CPU event that HTA
  // correlates with them (so that they take the iteration of the step they start in).
  KinetoSteps kineto_steps = KinetoSteps::kAuto;
  bool kineto_synthetic_launches = false;
  // `steps` (decoder/src/commands/steps_report.cc).
  StepOptions steps;
  // `job --tables-out DIR` (decoder/src/commands/job_command.cc): write the ranks' step tables.
  std::string job_tables_out;
  // `timeline` (decoder/src/commands/timeline_report.cc): the bucket size and row limit.
  TimelineOptions timeline;
  // `diff` (decoder/src/commands/diff_report.cc): per-side selections, format and the gate.
  DiffOptions diff;
  // export --format sqlite: the file (written beside it, then renamed onto it).
  std::string output_path;
  // Text reports (summary, gpu-trace, api-trace, kern-exec, steps) show kernels by their short
  // name (ShortKernelName: "at::native::reduce_kernel") unless this is set (--full-names) or
  // filter.mangled is. Exports always carry the full names.
  bool full_names = false;
};

// Exit codes of cupmon-decode.
inline constexpr int kExitClean = 0;
inline constexpr int kExitWarnings = 1;  // damage, drops, skips, unknown timestamps...
inline constexpr int kExitUnusable = 2;  // nothing decodable, or a usage error
inline constexpr int kExitRegression = 3;  // diff --fail-above: B is slower than allowed

// Runs one report over `path` (a directory or a .cupmon file). Output goes to `out`, warnings and
// problems to `err`. Returns one of the exit codes above.
int RunReport(ReportKind kind, const std::string& path, const ReportOptions& options,
              std::ostream& out, std::ostream& err);
// ReportKind::kDiff takes exactly two paths, A then B (see RunDiffReport in commands/diff_report.h).
// Runs one report over several paths (directories, their per-rank subdirectories, or .cupmon
// files; see ListRanks). One recording gives exactly the single-recording report. Several are
// merged, one rank per recording (process): summary prints a section per rank and a total, info
// a per-rank overview with the ranks' window begins in wall-clock time, chrome-json one timeline
// with a process per rank on one wall-clock axis (each rank through its own calibration), the
// traces and csv/jsonl each rank in turn, labelled. Problems of one rank (damage, a window the
// others have and it lacks) are reported and make the exit code 1; the other ranks still merge.
int RunReport(ReportKind kind, const std::vector<std::string>& paths, const ReportOptions& options,
              std::ostream& out, std::ostream& err);

// nvprof-style duration: 5 significant digits with the unit scaled (e.g. "15.840us", "1.0090ms").
std::string FormatDuration(double ns);
// Parses a --from/--to value: "<number><ns|us|ms|s|m|h>" relative to the recording's first
// timestamp, or "@<unix ns>" / an ISO-8601 UTC time ("2026-03-01T12:00:00Z") for wall-clock time.
// Sets exactly one of *rel / *wall.
bool ParseTimeArg(const std::string& text, std::optional<int64_t>* rel,
                  std::optional<int64_t>* wall);

}  // namespace cupmon::decoder

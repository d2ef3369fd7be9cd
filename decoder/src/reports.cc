// RunReport: lists the ranks a command reads and hands each command (commands/) its own
// options; and the time and duration texts the commands share.
#include "cupmon/decoder/reports.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "commands/diff_report.h"
#include "commands/html_report.h"
#include "commands/job_command.h"
#include "commands/rows_report.h"
#include "commands/steps_report.h"
#include "commands/timeline_report.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/window_span.h"
#include "job/rank_table.h"
#include "report_text.h"

namespace cupmon::decoder {
namespace {

// The command line's options each command takes, in the command's own struct.
RankReadOptions ReadOptionsOf(const ReportOptions& o) {
  RankReadOptions r;
  r.filter = o.filter;
  r.pid = o.pid;
  r.progress = o.progress;
  r.horizon = o.horizon;
  r.recursive = o.recursive;
  r.jobs = o.jobs;
  r.full_names = o.full_names;
  return r;
}

StepsReportOptions StepsOptionsOf(const ReportOptions& o) {
  return {.read = ReadOptionsOf(o), .limit = o.limit, .steps = o.steps};
}

JobCommandOptions JobOptionsOf(const ReportOptions& o) {
  return {.read = ReadOptionsOf(o), .limit = o.limit, .format = o.report_format,
          .steps = o.steps, .tables_out = o.job_tables_out};
}

TimelineReportOptions TimelineOptionsOf(const ReportOptions& o) {
  return {.read = ReadOptionsOf(o),
          .limit = o.limit,
          .format = o.format,
          .reorder_rows = o.reorder_rows,
          .timeline = o.timeline};
}

HtmlReportOptions HtmlOptionsOf(const ReportOptions& o) {
  return {.read = ReadOptionsOf(o), .limit = o.limit, .steps = o.steps,
          .reorder_rows = o.reorder_rows};
}

DiffReportOptions DiffOptionsOf(const ReportOptions& o) {
  return {.read = ReadOptionsOf(o), .limit = o.limit, .steps = o.steps, .diff = o.diff};
}

RowsReportOptions RowsOptionsOf(const ReportOptions& o) {
  RowsReportOptions r;
  r.read = ReadOptionsOf(o);
  r.limit = o.limit;
  r.reorder_rows = o.reorder_rows;
  r.reorder_ns = o.reorder_ns;
  r.format = o.report_format;
  r.export_format = o.format;
  r.export_settings.output_dir = o.output_dir;
  r.export_settings.output_path = o.output_path;
  r.export_settings.kineto_steps = o.kineto_steps;
  r.export_settings.kineto_synthetic_launches = o.kineto_synthetic_launches;
  return r;
}

}  // namespace

std::string AutoTriggerText(const WindowSpan& w) {
  if (w.trigger_step == 0 || w.trigger_median_ns == 0) return "";
  char ratio[64];
  std::snprintf(ratio, sizeof(ratio), "%.2fx the median ",
                static_cast<double>(w.trigger_step_ns) / static_cast<double>(w.trigger_median_ns));
  char threshold[64];
  std::snprintf(threshold, sizeof(threshold), " (threshold %gx)", w.trigger_factor);
  return "step " + std::to_string(w.trigger_step) + " took " +
         FormatDuration(static_cast<double>(w.trigger_step_ns)) + ", " + ratio +
         FormatDuration(static_cast<double>(w.trigger_median_ns)) + threshold;
}

std::string FormatDuration(double ns) {
  if (ns < 1000.0) {
    if (ns == std::floor(ns)) return Printf("%.0fns", ns);
    return Printf("%.4gns", ns);
  }
  const char* unit = "us";
  double v = ns / 1e3;
  if (v >= 1000.0) {
    v /= 1e3;
    unit = "ms";
    if (v >= 1000.0) {
      v /= 1e3;
      unit = "s";
    }
  }
  const int decimals = v < 10.0 ? 4 : v < 100.0 ? 3 : v < 1000.0 ? 2 : 1;
  return Printf("%.*f%s", decimals, v, unit);
}

bool ParseTimeArg(const std::string& text, std::optional<int64_t>* rel, std::optional<int64_t>* wall) {
  if (text.empty()) return false;
  if (text[0] == '@') {
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str() + 1, &end, 10);
    if (*end) return false;
    *wall = v;
    return true;
  }
  if (text.find('T') != std::string::npos) {
    std::tm tm{};
    const char* p = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p) return false;
    int64_t frac_ns = 0;
    if (*p == '.') {
      ++p;
      int digits = 0;
      while (*p >= '0' && *p <= '9') {
        if (digits < 9) {
          frac_ns = frac_ns * 10 + (*p - '0');
          ++digits;
        }
        ++p;
      }
      while (digits++ < 9) frac_ns *= 10;
    }
    if (*p == 'Z') ++p;
    if (*p) return false;
    *wall = static_cast<int64_t>(timegm(&tm)) * 1'000'000'000 + frac_ns;
    return true;
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return false;
  const std::string unit(end);
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s" || unit.empty()) scale = 1e9;
  else if (unit == "m") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else return false;
  *rel = static_cast<int64_t>(v * scale);
  return true;
}

int RunReport(ReportKind kind, const std::string& path, const ReportOptions& options,
              std::ostream& out, std::ostream& err) {
  return RunReport(kind, std::vector<std::string>{path}, options, out, err);
}

int RunReport(ReportKind kind, const std::vector<std::string>& paths, const ReportOptions& options,
              std::ostream& out, std::ostream& err) {
  const bool sqlite = kind == ReportKind::kExport && options.format == ExportFormat::kSqlite;
  if (sqlite && !SqliteExportBuilt()) {
    err << "cupmon-decode: --format sqlite is not available: this cupmon-decode was built without "
           "SQLite (install libsqlite3-dev, or run tools/install-deps, and rebuild)\n";
    return kExitUnusable;
  }
  if (sqlite && options.output_path.empty()) {
    err << "cupmon-decode: --format sqlite writes a database file, not a stream: give -o FILE\n";
    return kExitUnusable;
  }
  if (kind == ReportKind::kDiff) {
    if (paths.size() != 2) {
      err << "cupmon-decode: diff compares two recordings: cupmon-decode diff A B (got "
          << paths.size() << " path(s))\n";
      return kExitUnusable;
    }
    return RunDiffReport(paths[0], paths[1], DiffOptionsOf(options), out, err);
  }
  if (kind == ReportKind::kJob) {
    // Step tables (`job --tables-out`'s files) are merged; recordings are read.
    if (auto tables = job::FindTableFiles(paths); !tables.empty())
      return RunJobTables(tables, JobOptionsOf(options), out, err);
  }
  auto listing = ListRanks(paths, RankListingOptions{options.recursive});
  if (!listing) {
    err << "cupmon-decode: " << listing.error().message << "\n";
    return kExitUnusable;
  }
  if (kind == ReportKind::kInfo && options.report_format == ReportFormat::kCsv) {
    err << "cupmon-decode: info has no csv form (it is no one table): use --format json\n";
    return kExitUnusable;
  }
  bool warnings = false;
  // Warnings that belong to no one rank, for a document's top-level "warnings".
  std::vector<std::string> job_warnings;
  for (const auto& f : listing->ignored)
    err << "cupmon-decode: ignored (not *.cupmon): " << f << "\n";
  for (const auto& f : listing->refused) {
    err << "cupmon-decode: refused: " << f << "\n";
    job_warnings.push_back("refused: " + f);
    warnings = true;
  }
  for (const auto& w : listing->warnings) {
    err << "cupmon-decode: warning: " << w << "\n";
    job_warnings.push_back(w);
    warnings = true;
  }
  for (const auto& l : listing->left_out) err << "cupmon-decode: left out: " << l << "\n";
  std::vector<const Rank*> chosen;
  for (const auto& r : listing->ranks)
    if (!options.pid || r.recording.header.pid() == *options.pid) chosen.push_back(&r);
  if (chosen.empty()) {
    std::string where;
    for (const auto& p : paths) where += (where.empty() ? "" : ", ") + p;
    err << "cupmon-decode: no usable recording in " << where
        << (options.pid ? " with pid " + std::to_string(*options.pid) : "") << "\n";
    return kExitUnusable;
  }
  switch (kind) {
    case ReportKind::kSteps:
      return RunStepsReport(chosen, paths, StepsOptionsOf(options), out, err, warnings);
    case ReportKind::kJob:
      return RunJobCommand(chosen, paths, JobOptionsOf(options), out, err, warnings);
    case ReportKind::kTimeline:
      return RunTimelineReport(chosen, TimelineOptionsOf(options), out, err, warnings);
    case ReportKind::kReport:
      return RunHtmlReport(chosen, paths, HtmlOptionsOf(options), out, err, warnings);
    default:
      return RunRowsReport(kind, *listing, chosen, RowsOptionsOf(options), out, err, warnings,
                           std::move(job_warnings));
  }
}

}  // namespace cupmon::decoder

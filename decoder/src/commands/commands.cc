// The commands' entries (cupmon/decoder/commands.h): each lists the ranks its paths hold, reports
// what the listing found, picks the ranks (--pid) and runs its command over them.
#include "cupmon/decoder/commands.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands/html_report.h"
#include "commands/job_command.h"
#include "commands/rows_report.h"
#include "commands/steps_report.h"
#include "commands/timeline_report.h"
#include "cupmon/decoder/rank_listing.h"
#include "job/rank_table.h"

namespace cupmon::decoder {
namespace {

// The listing of `paths`, or nullopt after the error (kFailed).
std::optional<RankListing> List(const std::vector<std::string>& paths,
                                const RankReadOptions& read, Diagnostics& diagnostics) {
  auto listing = ListRanks(paths, RankListingOptions{read.recursive});
  if (!listing) {
    diagnostics.Error(listing.error().message);
    return std::nullopt;
  }
  return std::move(*listing);
}

// The ranks a command reads, and what the listing warned about.
struct ChosenRanks {
  std::vector<const Rank*> ranks;
  bool warnings = false;  // the listing's warnings make the outcome kWarnings
  // Warnings that belong to no one rank, for a document's top-level "warnings".
  std::vector<std::string> job_warnings;
};

// Reports what the listing found beside the ranks (files ignored, refused, left out; its
// warnings) and picks the ranks of read.pid; nullopt after the error (kFailed) when none is left.
std::optional<ChosenRanks> Choose(const RankListing& listing, const std::vector<std::string>& paths,
                                  const RankReadOptions& read, Diagnostics& diagnostics) {
  ChosenRanks chosen;
  for (const auto& f : listing.ignored) diagnostics.Status("ignored (not *.cupmon): " + f);
  for (const auto& f : listing.refused) {
    diagnostics.Status("refused: " + f);
    chosen.job_warnings.push_back("refused: " + f);
    chosen.warnings = true;
  }
  for (const auto& w : listing.warnings) {
    diagnostics.Warning(w);
    chosen.job_warnings.push_back(w);
    chosen.warnings = true;
  }
  for (const auto& l : listing.left_out) diagnostics.Status("left out: " + l);
  for (const auto& r : listing.ranks)
    if (!read.pid || r.recording.header.pid() == *read.pid) chosen.ranks.push_back(&r);
  if (chosen.ranks.empty()) {
    std::string where;
    for (const auto& p : paths) where += (where.empty() ? "" : ", ") + p;
    diagnostics.Error("no usable recording in " + where +
                      (read.pid ? " with pid " + std::to_string(*read.pid) : ""));
    return std::nullopt;
  }
  return chosen;
}

// Lists and chooses the ranks of `paths`, then runs `run(chosen)`.
template <class Run>
Outcome OverRanks(const std::vector<std::string>& paths, const RankReadOptions& read,
                  Diagnostics& diagnostics, Run&& run) {
  const std::optional<RankListing> listing = List(paths, read, diagnostics);
  if (!listing) return Outcome::kFailed;
  std::optional<ChosenRanks> chosen = Choose(*listing, paths, read, diagnostics);
  if (!chosen) return Outcome::kFailed;
  return run(*chosen);
}

}  // namespace

Outcome RunRowsCommand(ReportKind kind, const std::vector<std::string>& paths,
                       const RowsReportOptions& options, std::ostream& out,
                       Diagnostics& diagnostics) {
  const bool sqlite = kind == ReportKind::kExport && options.export_format == ExportFormat::kSqlite;
  if (sqlite && !SqliteExportBuilt()) {
    diagnostics.Error(
        "--format sqlite is not available: this cupmon-decode was built without SQLite (install "
        "libsqlite3-dev, or run tools/install-deps, and rebuild)");
    return Outcome::kUsageError;
  }
  if (sqlite && options.export_settings.output_path.empty()) {
    diagnostics.Error("--format sqlite writes a database file, not a stream: give -o FILE");
    return Outcome::kUsageError;
  }
  const std::optional<RankListing> listing = List(paths, options.read, diagnostics);
  if (!listing) return Outcome::kFailed;
  if (kind == ReportKind::kInfo && options.format == ReportFormat::kCsv) {
    diagnostics.Error("info has no csv form (it is no one table): use --format json");
    return Outcome::kUsageError;
  }
  std::optional<ChosenRanks> chosen = Choose(*listing, paths, options.read, diagnostics);
  if (!chosen) return Outcome::kFailed;
  return RunRowsReport(kind, *listing, chosen->ranks, options, out, diagnostics, chosen->warnings,
                       std::move(chosen->job_warnings));
}

Outcome RunStepsCommand(const std::vector<std::string>& paths, const StepsReportOptions& options,
                        std::ostream& out, Diagnostics& diagnostics) {
  return OverRanks(paths, options.read, diagnostics, [&](const ChosenRanks& chosen) {
    return RunStepsReport(chosen.ranks, paths, options, out, diagnostics, chosen.warnings);
  });
}

Outcome RunJobCommand(const std::vector<std::string>& paths, const JobCommandOptions& options,
                      std::ostream& out, Diagnostics& diagnostics) {
  // Step tables (`job --tables-out`'s files) are merged; recordings are read.
  if (auto tables = job::FindTableFiles(paths); !tables.empty())
    return RunJobTables(tables, options, out, diagnostics);
  return OverRanks(paths, options.read, diagnostics, [&](const ChosenRanks& chosen) {
    return RunJobReport(chosen.ranks, paths, options, out, diagnostics, chosen.warnings);
  });
}

Outcome RunTimelineCommand(const std::vector<std::string>& paths,
                           const TimelineReportOptions& options, std::ostream& out,
                           Diagnostics& diagnostics) {
  return OverRanks(paths, options.read, diagnostics, [&](const ChosenRanks& chosen) {
    return RunTimelineReport(chosen.ranks, options, out, diagnostics, chosen.warnings);
  });
}

Outcome RunHtmlCommand(const std::vector<std::string>& paths, const HtmlReportOptions& options,
                       std::ostream& out, Diagnostics& diagnostics) {
  return OverRanks(paths, options.read, diagnostics, [&](const ChosenRanks& chosen) {
    return RunHtmlReport(chosen.ranks, paths, options, out, diagnostics, chosen.warnings);
  });
}

}  // namespace cupmon::decoder

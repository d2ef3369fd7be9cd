// cupmon-decode's commands: each one's own options on the command line, how they become the
// decoder's options for that command (cupmon/decoder/commands.h), and its run.
#include "cupmon_decode/commands.h"

#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "cupmon/decoder/commands.h"
#include "cupmon/decoder/export_format.h"
#include "cupmon/decoder/output_file.h"
#include "cupmon/decoder/quick_info.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/reports.h"
#include "cupmon_decode/common_args.h"
#include "cupmon_decode/stderr_text.h"

namespace cupmon::decode_cli {
namespace {

using decoder::Diagnostics;
using decoder::ReportFormat;
using decoder::ReportKind;

ReportFormat ReportFormatNamed(const std::string& name) {
  return name == "json" ? ReportFormat::kJson
         : name == "csv" ? ReportFormat::kCsv
                         : ReportFormat::kText;
}

decoder::StepSource StepSourceNamed(const std::string& name) {
  return name == "pattern"      ? decoder::StepSource::kPattern
         : name == "annotation" ? decoder::StepSource::kAnnotation
                                : decoder::StepSource::kAuto;
}

// The command-line error messages of this file go straight to stderr, as the library's do
// through StderrText.
int Refuse(std::string_view why) {
  std::cerr << "cupmon-decode: " << why << "\n";
  return kExitUnusable;
}

// summary, info and the traces (gpu-trace, api-trace, kern-exec).
struct RowsArgs {
  CommonArgs common;
  std::string format = "text";  // summary, info
  bool quick = false;           // info
};

void AddSummaryOptions(CLI::App* sub, RowsArgs* a) {
  sub->add_option("--format", a->format,
                  "text (default), json (one document, schema cupmon.summary/1: each rank's "
                  "header, drops, integrity and tables, and the merged ranks and totals) or "
                  "csv (one row per rank, table and name)")
      ->check(CLI::IsMember({"text", "json", "csv"}));
  sub->footer(
      "Examples:\n"
      "  cupmon-decode summary rec/\n"
      "  cupmon-decode summary job/ --format json -o summary.json   # per rank and merged\n"
      "  cupmon-decode summary rec/ --format json | jq '.recordings[0].gpu_activities[0]'\n"
      "  cupmon-decode summary job/ --format csv -o kernels.csv   # rank,pid,table,name,...\n\n"
      "The json and csv fields, their units and the schema version rule: docs/DECODER.md, "
      "\"Machine-readable summary and info\". Times are integer nanoseconds; warnings "
      "still go to stderr (and into the document).");
}

void AddInfoOptions(CLI::App* sub, RowsArgs* a) {
  sub->add_option("--format", a->format,
                  "text (default) or json (one document, schema cupmon.info/1: each "
                  "recording's files, chunks, windows, gaps, drops, integrity and warnings, "
                  "and for several ranks the windows' begins and spread)")
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_flag("--quick", a->quick,
                "Footers only: files, records, time span and the last stats of each "
                "recording, read from the end of each file (a day of history in well under "
                "a second); no integrity check. Text only");
  sub->footer(
      "Examples:\n"
      "  cupmon-decode info rec/\n"
      "  cupmon-decode info rec/ --quick   # footers only: no integrity check\n"
      "  cupmon-decode info job/ --format json -o info.json\n"
      "  cupmon-decode info job/ --format json | jq '.merged.windows[].spread_ns'\n\n"
      "The json fields and the schema version rule: docs/DECODER.md, \"Machine-readable "
      "summary and info\".");
}

// info --quick: every recording's footers, nothing else read (quick_info.h).
int QuickInfo(const RowsArgs& a) {
  if (a.format != "text") {
    return Refuse("info --quick prints text only (drop --format " + a.format +
                  ", or drop --quick for the json document)");
  }
  std::vector<decoder::DirectoryListing> listings;
  for (const std::string& dir : a.common.dirs) {
    auto listing = decoder::ListRecordings(dir);
    if (!listing) return Refuse(listing.error().message);
    for (const std::string& why : listing->refused)
      std::cerr << "cupmon-decode: warning: " << why << "\n";
    listings.push_back(std::move(*listing));
  }
  std::vector<decoder::QuickRecording> quick;
  for (const auto& listing : listings)
    for (const auto& recording : listing.recordings) quick.push_back(decoder::ReadQuick(recording));
  if (quick.empty()) return Refuse("no cupmon recording found");
  std::unique_ptr<decoder::OutputFile> file;
  if (!a.common.output.empty()) {
    auto opened = decoder::OutputFile::Open(a.common.output);
    if (!opened) return Refuse(opened.error().message);
    file = std::move(*opened);
  }
  decoder::PrintQuickInfo(quick, file ? file->stream() : std::cout);
  if (file) {
    if (auto committed = file->Commit(); !committed) return Refuse(committed.error().message);
  } else if (!std::cout.flush()) {
    return Refuse("writing standard output failed");
  }
  return kExitClean;
}

int RunRows(ReportKind kind, const RowsArgs& a) {
  if (kind == ReportKind::kInfo && a.quick) return QuickInfo(a);
  if (!SetThreads(a.common)) return kExitUnusable;
  decoder::RowsReportOptions o;
  o.limit = a.common.limit;
  o.reorder_rows = a.common.reorder_rows;
  o.format = ReportFormatNamed(a.format);
  if (!ReadOptionsOf(a.common, false, &o.read)) return kExitUnusable;
  const bool streams = kind != ReportKind::kSummary && kind != ReportKind::kInfo;
  return RunToOutput(a.common.output, WantsProgress(a.common.output, streams),
                     [&](std::ostream& out, Diagnostics& diagnostics) {
                       return decoder::RunRowsCommand(kind, a.common.dirs, o, out, diagnostics);
                     });
}

// export.
struct ExportArgs {
  CommonArgs common;
  std::string format = "chrome-json";
  std::string kineto_steps = "auto";
  bool kineto_synthetic = false;
  std::string nvtx_scope = "process";
};

void AddExportOptions(CLI::App* sub, ExportArgs* a) {
  // The export registry's formats (export_format.h), in the order its help lists them.
  std::vector<std::string> export_formats;
  for (std::string_view name : decoder::ExportFormatNames()) export_formats.emplace_back(name);
  sub->add_option("--format", a->format, decoder::ExportFormatsHelp())
      ->check(CLI::IsMember(export_formats));
  sub->add_option("--kineto-steps", a->kineto_steps,
                  "--format kineto: where ProfilerStep#N (HTA's iterations) come from: auto "
                  "(default: step annotations when there are any, else the steps "
                  "`cupmon-decode steps --by pattern` detects), detected, annotation or none")
      ->check(CLI::IsMember({"auto", "detected", "annotation", "none"}));
  sub->add_option("--nvtx-scope", a->nvtx_scope,
                  "Which NVTX range labels a kernel (jsonl \"range\", chrome-json and perfetto "
                  "nvtx_range): process (default: the launching thread's innermost open range, "
                  "else the one opened last on another thread of its process, marked "
                  "range_scope/nvtx_scope \"process\"; autograd's backward kernels then carry "
                  "the step marked on the main thread) or thread (the launching thread's only, "
                  "as Nsight Systems projects them)")
      ->check(CLI::IsMember({"thread", "process"}));
  sub->add_flag("--kineto-synthetic-launches", a->kineto_synthetic,
                "--format kineto: give each GPU activity without a launch record a marked "
                "zero-length CPU event (\"cupmon: launch not recorded\", args.synthetic) "
                "with its correlation id, so that HTA puts it in the iteration it starts in");
}

decoder::KinetoSteps KinetoStepsNamed(const std::string& name) {
  return name == "detected"     ? decoder::KinetoSteps::kDetected
         : name == "annotation" ? decoder::KinetoSteps::kAnnotation
         : name == "none"       ? decoder::KinetoSteps::kNone
                                : decoder::KinetoSteps::kAuto;
}

int RunExport(const ExportArgs& a) {
  using decoder::ExportFormat;
  if (!SetThreads(a.common)) return kExitUnusable;
  decoder::RowsReportOptions o;
  o.limit = a.common.limit;
  o.reorder_rows = a.common.reorder_rows;
  // --format was checked against the registry's names as it was parsed.
  auto named = decoder::ExportFormatNamed(a.format);
  if (!named) return Refuse(named.error().message);
  o.export_format = *named;
  if ((a.kineto_steps != "auto" || a.kineto_synthetic) && o.export_format != ExportFormat::kKineto)
    return Refuse(
        "--kineto-steps and --kineto-synthetic-launches apply to export --format kineto only");
  o.export_settings.kineto_steps = KinetoStepsNamed(a.kineto_steps);
  o.export_settings.kineto_synthetic_launches = a.kineto_synthetic;
  const std::string& output = a.common.output;
  const bool sqlite = o.export_format == ExportFormat::kSqlite;
  if (sqlite && !decoder::SqliteExportBuilt()) {
    return Refuse(
        "--format sqlite is not available: this cupmon-decode was built without SQLite (install "
        "libsqlite3-dev, or run tools/install-deps, and rebuild)");
  }
  if (sqlite && output.empty()) {
    return Refuse(
        "--format sqlite writes an SQLite database file and cannot write to standard output: "
        "give -o FILE.sqlite");
  }
  if (o.export_format == ExportFormat::kPerfetto && output.empty() && isatty(STDOUT_FILENO)) {
    return Refuse(
        "--format perfetto writes binary protobuf; give -o FILE.pftrace or redirect standard "
        "output");
  }
  const bool progress = WantsProgress(output, /*streams=*/true);
  if (!ReadOptionsOf(a.common, a.nvtx_scope == "thread", &o.read)) return kExitUnusable;
  // kineto: -o names a directory, which the export creates and fills itself; sqlite: a database
  // that SQLite writes beside it and renames onto it at the end. Neither is an OutputFile.
  std::string file = output;
  if (o.export_format == ExportFormat::kKineto) {
    if (output.empty()) return Refuse("--format kineto writes one file per rank: give -o DIR");
    o.export_settings.output_dir = output;
    file.clear();
  } else if (sqlite) {
    o.export_settings.output_path = output;
    file.clear();
  }
  return RunToOutput(file, progress, [&](std::ostream& out, Diagnostics& diagnostics) {
    return decoder::RunRowsCommand(ReportKind::kExport, a.common.dirs, o, out, diagnostics);
  });
}

// steps, job and report: the steps' options.
struct StepsArgs {
  CommonArgs common;
  std::string format;  // steps: "table"; job: "text"
  std::string by = "auto";
  double slow_factor = 1.5;
};

void AddStepsOptions(CLI::App* sub, StepsArgs* a) {
  sub->add_option("--format", a->format, "table (default), csv or jsonl: one row per step")
      ->check(CLI::IsMember({"table", "csv", "jsonl"}));
  sub->add_option("--by", a->by,
                  "auto (default: step annotations or NVTX ranges such as \"step 12\" when "
                  "they label at least half as many steps as the kernel pattern finds), "
                  "pattern or annotation (annotations and NVTX ranges)")
      ->check(CLI::IsMember({"auto", "pattern", "annotation"}));
  sub->add_option("--slow-factor", a->slow_factor,
                  "A step is slow at this many times the median of the steps before it "
                  "(default 1.5)")
      ->check(CLI::PositiveNumber);
}

// job: the steps' options and where to write the ranks' step tables.
struct JobArgs : StepsArgs {
  std::string tables_out;
};

void AddJobOptions(CLI::App* sub, JobArgs* a) {
  sub->add_option("--format", a->format,
                  "text (default: the answers) or json (one document, schema cupmon.job/1, "
                  "with every step and rank)")
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_option("--by", a->by, "How each rank's steps are found, as for steps: auto "
                  "(default), pattern or annotation")
      ->check(CLI::IsMember({"auto", "pattern", "annotation"}));
  sub->add_option("--slow-factor", a->slow_factor,
                  "A step is slow at this many times the median of the steps before it "
                  "(default 1.5), on the job's step time (its longest rank's)")
      ->check(CLI::PositiveNumber);
  sub->get_option("--from")->description(
      "Only the job steps that start at or after this time (same forms as for the other "
      "commands; relative: to the first step)");
  sub->get_option("--to")->description("Only the job steps that start before this time");
  sub->add_option("--tables-out", a->tables_out,
                  "Write each rank's step table into DIR (rank<N>-<host>-<pid>.cupmon-job) "
                  "instead of the answers: run it where the recordings are (per node), then "
                  "`job` over the tables' directories merges them");
  sub->footer(
      "Examples:\n"
      "  cupmon-decode job /shared/cupmon/job-1234/   # slow steps: which rank, and why\n"
      "  cupmon-decode job job/ --from 2026-03-01T12:00:00Z --to 2026-03-01T13:00:00Z\n"
      "  cupmon-decode job job/ --format json | jq '.slow_steps[]'\n"
      "  cupmon-decode job /tmp/cupmon/4242 --tables-out /shared/4242/tables/$(hostname)\n"
      "      # on each node: its ranks' step tables (small); then, on any host:\n"
      "  cupmon-decode job /shared/4242/tables/   # merges every node's tables\n\n"
      "Each rank's steps are as `steps` finds them; the figures, the verdict classes and "
      "their thresholds: docs/DECODER.md, \"Which rank, which step, and why (`job`)\". "
      "--jobs reads several ranks at once, as for summary. Arguments holding *.cupmon-job "
      "files (directly or one level down) are merged as tables, not read as recordings.");
}

void AddReportOptions(CLI::App* sub, StepsArgs* a) {
  sub->add_option("--slow-factor", a->slow_factor,
                  "A step is slow at this many times the median of the steps before it "
                  "(default 1.5)")
      ->check(CLI::PositiveNumber);
  sub->footer(
      "Examples:\n"
      "  cupmon-decode report rec/ -o report.html\n"
      "  cupmon-decode report job/rank0 job/rank1 -o job.html   # per-rank rows, totals\n"
      "  cupmon-decode report rec/ --device 0 -o dev0.html   # activities of GPU 0 only\n"
      "  cupmon-decode report rec/ | gzip > report.html.gz   # stdout when it is no terminal\n\n"
      "The page needs no network: charts are inline SVG, no script. Steps and slow steps are "
      "as `steps` finds them, over whole recordings (--window, --from, --to and --limit do "
      "not apply); --device, --stream and --kernel narrow the activity table and busy chart. "
      "-o FILE is written beside it and renamed onto it once complete.");
}

decoder::StepOptions StepOptionsOf(const StepsArgs& a) {
  decoder::StepOptions steps;
  steps.format = a.format == "csv"     ? decoder::StepFormat::kCsv
                 : a.format == "jsonl" ? decoder::StepFormat::kJsonl
                                       : decoder::StepFormat::kTable;
  steps.source = StepSourceNamed(a.by);
  steps.slow_factor = a.slow_factor;
  steps.cupti_clock = a.common.clock == "cupti";
  return steps;
}

int RunSteps(const StepsArgs& a) {
  if (!SetThreads(a.common)) return kExitUnusable;
  decoder::StepsReportOptions o;
  o.limit = a.common.limit;
  o.steps = StepOptionsOf(a);
  if (!ReadOptionsOf(a.common, false, &o.read)) return kExitUnusable;
  return RunToOutput(a.common.output, WantsProgress(a.common.output, /*streams=*/false),
                     [&](std::ostream& out, Diagnostics& diagnostics) {
                       return decoder::RunStepsCommand(a.common.dirs, o, out, diagnostics);
                     });
}

int RunJob(const JobArgs& a) {
  if (!SetThreads(a.common)) return kExitUnusable;
  decoder::JobCommandOptions o;
  o.limit = a.common.limit;
  o.format = ReportFormatNamed(a.format);
  o.steps = StepOptionsOf(a);
  o.tables_out = a.tables_out;
  if (!ReadOptionsOf(a.common, false, &o.read)) return kExitUnusable;
  return RunToOutput(a.common.output, WantsProgress(a.common.output, /*streams=*/false),
                     [&](std::ostream& out, Diagnostics& diagnostics) {
                       return decoder::RunJobCommand(a.common.dirs, o, out, diagnostics);
                     });
}

int RunReportPage(const StepsArgs& a) {
  if (!SetThreads(a.common)) return kExitUnusable;
  decoder::HtmlReportOptions o;
  o.limit = a.common.limit;
  o.steps = StepOptionsOf(a);
  o.reorder_rows = a.common.reorder_rows;
  if (a.common.output.empty() && isatty(STDOUT_FILENO))
    return Refuse("report writes an HTML page: give -o FILE.html or redirect standard output");
  const bool progress = WantsProgress(a.common.output, /*streams=*/true);
  if (!ReadOptionsOf(a.common, false, &o.read)) return kExitUnusable;
  return RunToOutput(a.common.output, progress, [&](std::ostream& out, Diagnostics& diagnostics) {
    return decoder::RunHtmlCommand(a.common.dirs, o, out, diagnostics);
  });
}

// timeline.
struct TimelineArgs {
  CommonArgs common;
  std::string format = "csv";
  std::string bucket = "1s";
  uint64_t max_rows = decoder::TimelineOptions{}.max_rows;
};

void AddTimelineOptions(CLI::App* sub, TimelineArgs* a) {
  sub->add_option("--format", a->format, "csv (default) or jsonl: one row per bucket "
                  "per device")
      ->check(CLI::IsMember({"csv", "jsonl"}));
  sub->add_option("--bucket", a->bucket,
                  "Bucket size with a unit: 100ms, 1s (default), 10s, 1m, 1h; buckets are "
                  "aligned to it in unix time");
  sub->add_option("--max-rows", a->max_rows,
                  "Refuse (exit 2) a bucket that would write more rows than this per rank "
                  "(default 100000000)")
      ->check(CLI::PositiveNumber);
  sub->footer(
      "Examples:\n"
      "  cupmon-decode timeline rec/   # 1 s buckets, CSV on stdout\n"
      "  cupmon-decode timeline job/ --bucket 100ms -o busy.csv   # rows per rank (rank, pid)\n"
      "  cupmon-decode timeline rec/ --bucket 1m --format jsonl --device 0\n"
      "  cupmon-decode timeline rec/ --bucket 10ms --from 2026-03-01T12:00:00Z "
      "--to 2026-03-01T12:05:00Z\n\n"
      "Busy % is the union of the device's kernel, memcpy and memset intervals in the bucket "
      "(not NVML utilization). Every bucket from the first activity to the last is written, "
      "empty ones as zeros.");
  sub->get_option("--reorder-rows")
      ->description("Activities held to sort by wall-clock start (default 65536). One that "
                    "comes after its bucket was written is left out and counted (exit 1)");
}

int RunTimeline(const TimelineArgs& a) {
  using decoder::ExportFormat;
  if (!SetThreads(a.common)) return kExitUnusable;
  decoder::TimelineReportOptions o;
  o.limit = a.common.limit;
  o.format = a.format == "jsonl" ? ExportFormat::kJsonl : ExportFormat::kCsv;
  o.reorder_rows = a.common.reorder_rows;
  auto bucket = decoder::ParseBucketSize(a.bucket);
  if (!bucket) return Refuse("--bucket: " + bucket.error().message);
  o.timeline.bucket_ns = *bucket;
  o.timeline.max_rows = a.max_rows;
  const bool progress = WantsProgress(a.common.output, /*streams=*/true);
  if (!ReadOptionsOf(a.common, false, &o.read)) return kExitUnusable;
  return RunToOutput(a.common.output, progress, [&](std::ostream& out, Diagnostics& diagnostics) {
    return decoder::RunTimelineCommand(a.common.dirs, o, out, diagnostics);
  });
}

// diff.
struct DiffArgs {
  CommonArgs common;
  std::string format = "table";
  struct Side {
    std::optional<uint32_t> window, rank;
    std::string from, to;
  } a, b;
  std::optional<double> fail_above;
};

void AddDiffOptions(CLI::App* sub, DiffArgs* d) {
  sub->get_option("DIR")->description(
      "A B: two recordings (directories, rank directories or .cupmon files); the same one "
      "twice with --window-a/-b or --from-a/... to compare two parts of it");
  sub->add_option("--format", d->format,
                  "table (default), csv (one row per name; the verdict on stderr) or jsonl "
                  "(sides, names, steps and the verdict, one object per line)")
      ->check(CLI::IsMember({"table", "csv", "jsonl"}));
  for (auto [name, side] : {std::pair{"a", &d->a}, std::pair{"b", &d->b}}) {
    const std::string s = name, S = s == "a" ? "A" : "B";
    sub->add_option("--window-" + s, side->window, "Side " + S + ": only trace window N");
    sub->add_option("--from-" + s, side->from, "Side " + S + ": start (same forms as --from)");
    sub->add_option("--to-" + s, side->to, "Side " + S + ": end (same forms as --to)");
    sub->add_option("--rank-" + s, side->rank,
                    "Side " + S + ": only the recording of this rank (as info lists them)");
  }
  sub->add_option("--fail-above", d->fail_above,
                  "Exit 3 when B's GPU time grows by more than PCT percent: per step when "
                  "steps are found in both sides' ranges, else per call (A's calls at B's mean "
                  "durations, over the names on both sides); see docs/DECODER.md")
      ->check(CLI::NonNegativeNumber);
}

int RunDiff(const DiffArgs& d) {
  if (!SetThreads(d.common)) return kExitUnusable;
  decoder::DiffReportOptions o;
  o.limit = d.common.limit;
  o.steps.cupti_clock = d.common.clock == "cupti";
  o.diff.format = d.format == "csv"     ? decoder::DiffFormat::kCsv
                  : d.format == "jsonl" ? decoder::DiffFormat::kJsonl
                                        : decoder::DiffFormat::kTable;
  o.diff.fail_above = d.fail_above;
  for (auto [name, side, range] :
       {std::tuple{"a", &d.a, &o.diff.a}, std::tuple{"b", &d.b, &o.diff.b}}) {
    range->window = side->window;
    range->rank = side->rank;
    if (!side->from.empty() &&
        !decoder::ParseTimeArg(side->from, &range->from_rel, &range->from_wall))
      return Refuse(std::string("cannot parse --from-") + name + " " + side->from);
    if (!side->to.empty() && !decoder::ParseTimeArg(side->to, &range->to_rel, &range->to_wall))
      return Refuse(std::string("cannot parse --to-") + name + " " + side->to);
  }
  if (!ReadOptionsOf(d.common, false, &o.read)) return kExitUnusable;
  return RunToOutput(d.common.output, WantsProgress(d.common.output, /*streams=*/false),
                     [&](std::ostream& out, Diagnostics& diagnostics) {
                       const std::vector<std::string>& paths = d.common.dirs;
                       if (paths.size() != 2) {
                         diagnostics.Error(
                             "diff compares two recordings: cupmon-decode diff A B (got " +
                             std::to_string(paths.size()) + " path(s))");
                         return decoder::Outcome::kUsageError;
                       }
                       return decoder::RunDiffCommand(paths[0], paths[1], o, out, diagnostics);
                     });
}

// Binds a command's arguments (`Args`, held until the run) to its options and its run.
template <class Args>
Command Make(const char* name, const char* help, void (*add)(CLI::App*, Args*),
             int (*run)(const Args&)) {
  auto args = std::make_shared<Args>();
  return {name, help,
          [args, add](CLI::App* sub) {
            AddCommon(sub, &args->common);
            if (add) add(sub, args.get());
          },
          [args, run] {
            // "-o -" is standard output, as elsewhere on the command line; "./-" still names a
            // file.
            if (args->common.output == "-") args->common.output.clear();
            return run(*args);
          }};
}

template <ReportKind kKind>
int RunRowsOf(const RowsArgs& a) {
  return RunRows(kKind, a);
}

}  // namespace

std::vector<Command> MakeCommands() {
  std::vector<Command> commands;
  commands.push_back(Make<RowsArgs>("summary", "nvprof-style summary: GPU activities and API calls by total time", AddSummaryOptions,
                                    RunRowsOf<ReportKind::kSummary>));
  commands.push_back(Make<RowsArgs>("gpu-trace", "One line per GPU activity (kernel, memcpy, memset)", nullptr,
                                    RunRowsOf<ReportKind::kGpuTrace>));
  commands.push_back(Make<RowsArgs>("api-trace", "One line per CUDA runtime/driver API call, with what it launched", nullptr,
                                    RunRowsOf<ReportKind::kApiTrace>));
  commands.push_back(Make<RowsArgs>("kern-exec", "Per kernel: API start and duration, queue time, kernel start/duration, total", nullptr,
                                    RunRowsOf<ReportKind::kKernExec>));
  commands.push_back(Make<ExportArgs>("export", "Machine-readable export: chrome-json, perfetto (.pftrace), kineto, sqlite, csv or jsonl", AddExportOptions, RunExport));
  commands.push_back(
      Make<RowsArgs>("info", "Recordings, files, chunks, windows, drops and an integrity report", AddInfoOptions, RunRowsOf<ReportKind::kInfo>));
  commands.push_back(Make<StepsArgs>("steps", "Training steps found in the kernel stream (or step annotations): per step start, duration, "
       "kernels, busy and idle time per device, memcpy bytes; distribution, slow steps, stragglers; "
       "the trace windows with the step each began in and, for TRIGGER_AUTO, why it opened", AddStepsOptions, RunSteps));
  commands.push_back(
      Make<TimelineArgs>("timeline", "Fixed wall-clock buckets (--bucket 1s) per rank and device: busy % (the union of kernel, "
       "memcpy and memset intervals), kernels/s, memcpy bytes/s, device memory in use and its "
       "peak (MEMORY2 records); csv or jsonl, streamed", AddTimelineOptions, RunTimeline));
  commands.push_back(Make<DiffArgs>("diff", "Compares two recordings, ranks, windows or time ranges (A B): per kernel name and memcpy "
       "kind calls, total, mean, p50, p99 and their change, step times, a verdict; --fail-above "
       "makes it a CI gate", AddDiffOptions, RunDiff));
  commands.push_back(Make<JobArgs>("job", "Which rank made a step slow, and why: the ranks' collectives matched instance by instance "
       "(not by their clocks), per step and rank work, collective time, wait and host gap, a "
       "verdict per slow step (gpu-work, host-gap, collectives, unexplained), stragglers, hangs", AddJobOptions, RunJob));
  commands.push_back(Make<StepsArgs>("report", "One self-contained HTML page (-o FILE.html): header, step-time chart with slow steps and "
       "their drill-down commands, busy time per GPU, device memory in use (MEMORY2 records), top "
       "GPU activities, windows, drops, integrity, per-rank rows", AddReportOptions, RunReportPage));
  return commands;
}

}  // namespace cupmon::decode_cli

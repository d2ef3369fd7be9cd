// cupmon-decode: offline decoder for cupmon recordings (no GPU, CUDA or libcupti needed).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <iostream>
#include <exception>
#include <memory>
#include <new>
#include <regex>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "cupmon/decoder/export_format.h"
#include "cupmon/decoder/output_file.h"
#include "cupmon/decoder/quick_info.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/reports.h"
#include "cupmon/decoder/torch_monitor_dump.h"
#include "cupmon/format/build_info.h"

namespace {

using cupmon::decoder::ExportFormat;
using cupmon::decoder::ReportKind;
using cupmon::decoder::ReportOptions;

struct CommonArgs {
  std::vector<std::string> dirs;
  bool recursive = false;
  std::optional<uint32_t> window, device, stream, pid;
  std::optional<uint64_t> limit;
  std::string from, to, kernel, output;
  bool mangled = false, full_names = false;
  size_t reorder_rows = 1 << 16;
  std::optional<int> threads;
  size_t jobs = 0;
  std::string clock = "wall";
};

void AddCommon(CLI::App* app, CommonArgs* a) {
  app->add_option("DIR", a->dirs,
                  "Directories of *.cupmon files (and their per-rank subdirectories, one level "
                  "down), or .cupmon files; also PyTorch CUPTI monitor dumps (a directory with "
                  "cupti_monitor_meta.bin and cupti_monitor_raw_buffers.bin). Several recordings "
                  "are merged, one rank each")
      ->required();
  app->add_flag("-r,--recursive", a->recursive,
                "Look for recordings in subdirectories at any depth, not only one level down");
  app->add_option("--window", a->window, "Only records that start inside trace window N");
  app->add_option("--from", a->from,
                  "Start of the time range: relative to the first record (1.5s, 200ms, 30us) or "
                  "wall clock (2026-03-01T12:00:00Z, @<unix ns>)");
  app->add_option("--to", a->to, "End of the time range (same forms as --from)");
  app->add_option("--device", a->device, "Only GPU activity on this device id");
  app->add_option("--stream", a->stream, "Only GPU activity on this stream id");
  app->add_option("--kernel", a->kernel,
                  "Only GPU activity whose name matches this ECMAScript regex, searched in the "
                  "full demangled name (--mangled: the raw one) whichever form is shown, so "
                  "--kernel 'reduce_kernel<512' still finds template arguments");
  app->add_option("--pid", a->pid, "Only the recording of this process id");
  app->add_option(
      "--limit", a->limit,
      "At most N rows (traces and exports; traces, csv and jsonl then read no further)");
  app->add_option("-o,--output", a->output,
                  "Write to FILE instead of standard output ('-': standard output; a file "
                  "named - is ./-; export --format kineto: a DIR)");
  CLI::Option* mangled =
      app->add_flag("--mangled", a->mangled, "Show kernel names as recorded, not demangled");
  app->add_flag("--full-names", a->full_names,
                "Reports: show kernels by their full demangled names, not the short form "
                "(at::native::reduce_kernel: no return type, template arguments or parameters). "
                "Exports always carry full names (csv and jsonl also a short_name)")
      ->excludes(mangled);
  app->add_option("--reorder-rows", a->reorder_rows,
                  "Traces/exports: rows held to sort by start time (default 65536; 0 keeps "
                  "CUPTI delivery order). Later rows are emitted anyway and counted");
  app->add_option("--threads", a->threads,
                  "Threads reading a recording: 2 (the default on a machine with two or more "
                  "CPUs) checks and decompresses chunks on a second thread while the first "
                  "decodes the records; 1 reads on one thread (same output). Overrides "
                  "CUPMON_DECODE_THREADS")
      ->check(CLI::Range(1, 2));
  app->add_option("--jobs", a->jobs,
                  "summary, info, steps, job and report of several ranks, and diff's two sides: "
                  "ranks read at once, each with --threads threads (default: as many as the CPUs "
                  "hold at --threads each, at most 8 and one per 128 MiB of memory left; 1 reads "
                  "them one after another). The output is the same, in rank order")
      ->check(CLI::Range(1, 1024));
  app->add_option("--clock", a->clock,
                  "wall (default): times in unix ns through the recording's calibration; cupti: "
                  "times as CUPTI recorded them, the calibration not applied (to check one "
                  "command's figures against another's: they then share one time base)")
      ->check(CLI::IsMember({"wall", "cupti"}));
}

// CUPMON_DECODE_THREADS, when set, must be 1 or 2 (as --threads): "" when it is fine, else why not.
std::string CheckThreadsVariable() {
  const char* v = std::getenv("CUPMON_DECODE_THREADS");
  if (!v) return {};
  const std::string_view s(v);
  if (s == "1" || s == "2") return {};
  return "CUPMON_DECODE_THREADS='" + std::string(s) + "' is not 1 or 2 (threads reading a recording)";
}

// Edit distance (insertions, deletions, substitutions) between two short words.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

// info --quick: every recording's footers, nothing else read (quick_info.h).
int QuickInfo(const std::vector<std::string>& dirs, const std::string& format,
              std::string output) {
  if (format != "text") {
    std::cerr << "cupmon-decode: info --quick prints text only (drop --format " << format
              << ", or drop --quick for the json document)\n";
    return cupmon::decoder::kExitUnusable;
  }
  std::vector<cupmon::decoder::DirectoryListing> listings;
  for (const std::string& dir : dirs) {
    auto listing = cupmon::decoder::ListRecordings(dir);
    if (!listing) {
      std::cerr << "cupmon-decode: " << listing.error().message << "\n";
      return cupmon::decoder::kExitUnusable;
    }
    for (const std::string& why : listing->refused)
      std::cerr << "cupmon-decode: warning: " << why << "\n";
    listings.push_back(std::move(*listing));
  }
  std::vector<cupmon::decoder::QuickRecording> quick;
  for (const auto& listing : listings)
    for (const auto& recording : listing.recordings)
      quick.push_back(cupmon::decoder::ReadQuick(recording));
  if (quick.empty()) {
    std::cerr << "cupmon-decode: no cupmon recording found\n";
    return cupmon::decoder::kExitUnusable;
  }
  if (output == "-") output.clear();
  std::unique_ptr<cupmon::decoder::OutputFile> file;
  if (!output.empty()) {
    auto opened = cupmon::decoder::OutputFile::Open(output);
    if (!opened) {
      std::cerr << "cupmon-decode: " << opened.error().message << "\n";
      return cupmon::decoder::kExitUnusable;
    }
    file = std::move(*opened);
  }
  cupmon::decoder::PrintQuickInfo(quick, file ? file->stream() : std::cout);
  if (file) {
    if (auto committed = file->Commit(); !committed) {
      std::cerr << "cupmon-decode: " << committed.error().message << "\n";
      return cupmon::decoder::kExitUnusable;
    }
  } else if (!std::cout.flush()) {
    std::cerr << "cupmon-decode: writing standard output failed\n";
    return cupmon::decoder::kExitUnusable;
  }
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{
      "cupmon-decode: reads cupmon recordings on any machine (no GPU, CUDA or libcupti).\n\n"
      "Examples:\n"
      "  cupmon-decode summary /var/log/cupmon\n"
      "  cupmon-decode gpu-trace rec/ --kernel 'gemm' --limit 20\n"
      "  cupmon-decode summary rec/ --full-names   # kernels by whole demangled names, not short\n"
      "  cupmon-decode kern-exec rec/ --window 3\n"
      "  cupmon-decode export rec/ --format chrome-json -o trace.json   # open in ui.perfetto.dev\n"
      "  cupmon-decode export job/ --format perfetto -o job.pftrace   # Perfetto's own binary format\n"
      "  cupmon-decode export job/ --format kineto -o hta/   # hta/rank0.json...: Kineto JSON for HTA\n"
      "  cupmon-decode export job/ --format kineto -o hta/ --kineto-steps detected \\\n"
      "      --kineto-synthetic-launches   # HTA iterations from detected steps, for every kernel\n"
      "  cupmon-decode export rec/ --format jsonl --nvtx-scope thread   # NVTX labels as nsys\n"
      "  cupmon-decode export job/ --format sqlite -o job.sqlite   # Nsight Systems' SQLite schema\n"
      "  sqlite3 job.sqlite 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL'   # SQL written for nsys\n"
      "  cupmon-decode info rec/\n"
      "  cupmon-decode summary job/ --format json -o summary.json   # also info; csv: summary\n"
      "  cupmon-decode summary job/rank0 job/rank1   # several ranks: per rank and in total\n"
      "  cupmon-decode export job/ --format chrome-json -o job.json   # job/rank*/: one process per rank\n"
      "  cupmon-decode info job/   # per-rank windows in wall-clock time and their spread\n"
      "  cupmon-decode summary torch-out/   # a torch.profiler._cupti_monitor dump (names unresolved)\n"
      "  cupmon-decode steps rec/   # training steps, step-time distribution, slow steps\n"
      "  cupmon-decode timeline job/ --bucket 1s -o busy.csv   # per rank, device, second: busy %\n"
      "  cupmon-decode timeline rec/ --bucket 100ms --from 10s --to 20s --format jsonl\n"
      "  cupmon-decode diff before/ after/   # per kernel and memcpy kind: what B adds or saves\n"
      "  cupmon-decode diff job/rank0 job/rank1   # two ranks (or job job --rank-a 0 --rank-b 1)\n"
      "  cupmon-decode diff rec rec --window-a 1 --window-b 2   # two windows of one recording\n"
      "  cupmon-decode diff rec rec --from-a 0s --to-a 10s --from-b 50s --to-b 60s\n"
      "  cupmon-decode diff base/ new/ --fail-above 5   # CI gate: exit 3 when B is >5% slower\n"
      "  cupmon-decode job job/   # slow steps: which rank, its work, host or the collectives\n"
      "  cupmon-decode report job/ -o report.html   # one self-contained HTML page\n"
      "  cupmon-decode summary rec/ --threads 1   # read on one thread (default: 2 where 2 CPUs)\n"
      "  cupmon-decode summary job/ --jobs 4   # read 4 ranks at once (default: CPUs / threads)\n\n"
      "Exit codes: 0 clean, 1 warnings (damage, drops, skipped records), 2 unusable input or usage "
      "error, 3 diff --fail-above: a regression above the threshold."};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version",
      cupmon::VersionText("cupmon-decode", "pytorch-dumps: reads version " +
                                               std::to_string(cupmon::decoder::kTorchDumpVersion)));
  CommonArgs args;
  std::string format = "chrome-json";
  std::string kineto_steps = "auto";
  bool kineto_synthetic = false;
  std::string nvtx_scope = "process";
  std::string steps_format = "table", steps_by = "auto";
  double steps_slow_factor = 1.5;
  std::string timeline_format = "csv", timeline_bucket = "1s";
  uint64_t timeline_max_rows = cupmon::decoder::TimelineOptions{}.max_rows;
  std::string diff_format = "table";
  std::string report_format = "text";
  std::string job_tables_out;
  bool info_quick = false;
  struct DiffSideArgs {
    std::optional<uint32_t> window, rank;
    std::string from, to;
  } diff_a, diff_b;
  std::optional<double> fail_above;
  struct Cmd {
    const char* name;
    const char* help;
    ReportKind kind;
  };
  const Cmd cmds[] = {
      {"summary", "nvprof-style summary: GPU activities and API calls by total time", ReportKind::kSummary},
      {"gpu-trace", "One line per GPU activity (kernel, memcpy, memset)", ReportKind::kGpuTrace},
      {"api-trace", "One line per CUDA runtime/driver API call, with what it launched", ReportKind::kApiTrace},
      {"kern-exec", "Per kernel: API start and duration, queue time, kernel start/duration, total",
       ReportKind::kKernExec},
      {"export", "Machine-readable export: chrome-json, perfetto (.pftrace), kineto, sqlite, csv or jsonl",
       ReportKind::kExport},
      {"info", "Recordings, files, chunks, windows, drops and an integrity report", ReportKind::kInfo},
      {"steps",
       "Training steps found in the kernel stream (or step annotations): per step start, duration, "
       "kernels, busy and idle time per device, memcpy bytes; distribution, slow steps, stragglers; "
       "the trace windows with the step each began in and, for TRIGGER_AUTO, why it opened",
       ReportKind::kSteps},
      {"timeline",
       "Fixed wall-clock buckets (--bucket 1s) per rank and device: busy % (the union of kernel, "
       "memcpy and memset intervals), kernels/s, memcpy bytes/s, device memory in use and its "
       "peak (MEMORY2 records); csv or jsonl, streamed",
       ReportKind::kTimeline},
      {"diff",
       "Compares two recordings, ranks, windows or time ranges (A B): per kernel name and memcpy "
       "kind calls, total, mean, p50, p99 and their change, step times, a verdict; --fail-above "
       "makes it a CI gate",
       ReportKind::kDiff},
      {"job",
       "Which rank made a step slow, and why: the ranks' collectives matched instance by instance "
       "(not by their clocks), per step and rank work, collective time, wait and host gap, a "
       "verdict per slow step (gpu-work, host-gap, collectives, unexplained), stragglers, hangs",
       ReportKind::kJob},
      {"report",
       "One self-contained HTML page (-o FILE.html): header, step-time chart with slow steps and "
       "their drill-down commands, busy time per GPU, device memory in use (MEMORY2 records), top "
       "GPU activities, windows, drops, integrity, per-rank rows",
       ReportKind::kReport},
  };
  // A first word that is no command (a typo such as "sumary") would otherwise be reported as
  // "A subcommand is required": name it, and the nearest command.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string_view word = argv[1];
    const Cmd* nearest = nullptr;
    size_t best = SIZE_MAX;
    std::string names;
    for (const Cmd& c : cmds) {
      if (word == c.name) {
        nearest = nullptr;
        best = 0;
        break;
      }
      const size_t d = EditDistance(word, c.name);
      if (d < best) best = d, nearest = &c;
      names += std::string(names.empty() ? "" : ", ") + c.name;
    }
    if (best > 0) {
      std::cerr << "cupmon-decode: unknown command '" << word << "'";
      if (nearest && best <= 3) std::cerr << "; did you mean '" << nearest->name << "'?";
      std::cerr << "\ncommands: " << names << " (cupmon-decode --help)\n";
      return cupmon::decoder::kExitUnusable;
    }
  }
  // The export registry's formats (export_format.h), in the order its help lists them.
  std::vector<std::string> export_formats;
  for (std::string_view name : cupmon::decoder::ExportFormatNames()) export_formats.emplace_back(name);
  std::map<CLI::App*, ReportKind> kinds;
  for (const Cmd& c : cmds) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    AddCommon(sub, &args);
    if (c.kind == ReportKind::kExport)
      sub->add_option("--format", format, cupmon::decoder::ExportFormatsHelp())
          ->check(CLI::IsMember(export_formats));
    if (c.kind == ReportKind::kExport) {
      sub->add_option("--kineto-steps", kineto_steps,
                      "--format kineto: where ProfilerStep#N (HTA's iterations) come from: auto "
                      "(default: step annotations when there are any, else the steps "
                      "`cupmon-decode steps --by pattern` detects), detected, annotation or none")
          ->check(CLI::IsMember({"auto", "detected", "annotation", "none"}));
      sub->add_option("--nvtx-scope", nvtx_scope,
                      "Which NVTX range labels a kernel (jsonl \"range\", chrome-json and perfetto "
                      "nvtx_range): process (default: the launching thread's innermost open range, "
                      "else the one opened last on another thread of its process, marked "
                      "range_scope/nvtx_scope \"process\"; autograd's backward kernels then carry "
                      "the step marked on the main thread) or thread (the launching thread's only, "
                      "as Nsight Systems projects them)")
          ->check(CLI::IsMember({"thread", "process"}));
      sub->add_flag("--kineto-synthetic-launches", kineto_synthetic,
                    "--format kineto: give each GPU activity without a launch record a marked "
                    "zero-length CPU event (\"cupmon: launch not recorded\", args.synthetic) "
                    "with its correlation id, so that HTA puts it in the iteration it starts in");
    }
    if (c.kind == ReportKind::kSummary) {
      sub->add_option("--format", report_format,
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
    if (c.kind == ReportKind::kInfo) {
      sub->add_option("--format", report_format,
                      "text (default) or json (one document, schema cupmon.info/1: each "
                      "recording's files, chunks, windows, gaps, drops, integrity and warnings, "
                      "and for several ranks the windows' begins and spread)")
          ->check(CLI::IsMember({"text", "json"}));
      sub->add_flag("--quick", info_quick,
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
    if (c.kind == ReportKind::kSteps) {
      sub->add_option("--format", steps_format, "table (default), csv or jsonl: one row per step")
          ->check(CLI::IsMember({"table", "csv", "jsonl"}));
      sub->add_option("--by", steps_by,
                      "auto (default: step annotations or NVTX ranges such as \"step 12\" when "
                      "they label at least half as many steps as the kernel pattern finds), "
                      "pattern or annotation (annotations and NVTX ranges)")
          ->check(CLI::IsMember({"auto", "pattern", "annotation"}));
      sub->add_option("--slow-factor", steps_slow_factor,
                      "A step is slow at this many times the median of the steps before it "
                      "(default 1.5)")
          ->check(CLI::PositiveNumber);
    }
    if (c.kind == ReportKind::kTimeline) {
      sub->add_option("--format", timeline_format, "csv (default) or jsonl: one row per bucket "
                      "per device")
          ->check(CLI::IsMember({"csv", "jsonl"}));
      sub->add_option("--bucket", timeline_bucket,
                      "Bucket size with a unit: 100ms, 1s (default), 10s, 1m, 1h; buckets are "
                      "aligned to it in unix time");
      sub->add_option("--max-rows", timeline_max_rows,
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
    if (c.kind == ReportKind::kDiff) {
      sub->get_option("DIR")->description(
          "A B: two recordings (directories, rank directories or .cupmon files); the same one "
          "twice with --window-a/-b or --from-a/... to compare two parts of it");
      sub->add_option("--format", diff_format,
                      "table (default), csv (one row per name; the verdict on stderr) or jsonl "
                      "(sides, names, steps and the verdict, one object per line)")
          ->check(CLI::IsMember({"table", "csv", "jsonl"}));
      for (auto [side, a] : {std::pair{"a", &diff_a}, std::pair{"b", &diff_b}}) {
        const std::string s = side, S = s == "a" ? "A" : "B";
        sub->add_option("--window-" + s, a->window, "Side " + S + ": only trace window N");
        sub->add_option("--from-" + s, a->from, "Side " + S + ": start (same forms as --from)");
        sub->add_option("--to-" + s, a->to, "Side " + S + ": end (same forms as --to)");
        sub->add_option("--rank-" + s, a->rank,
                        "Side " + S + ": only the recording of this rank (as info lists them)");
      }
      sub->add_option("--fail-above", fail_above,
                      "Exit 3 when B's GPU time grows by more than PCT percent: per step when "
                      "steps are found in both sides' ranges, else per call (A's calls at B's mean "
                      "durations, over the names on both sides); see docs/DECODER.md")
          ->check(CLI::NonNegativeNumber);
    }
    if (c.kind == ReportKind::kJob) {
      sub->add_option("--format", report_format,
                      "text (default: the answers) or json (one document, schema cupmon.job/1, "
                      "with every step and rank)")
          ->check(CLI::IsMember({"text", "json"}));
      sub->add_option("--by", steps_by, "How each rank's steps are found, as for steps: auto "
                      "(default), pattern or annotation")
          ->check(CLI::IsMember({"auto", "pattern", "annotation"}));
      sub->add_option("--slow-factor", steps_slow_factor,
                      "A step is slow at this many times the median of the steps before it "
                      "(default 1.5), on the job's step time (its longest rank's)")
          ->check(CLI::PositiveNumber);
      sub->get_option("--from")->description(
          "Only the job steps that start at or after this time (same forms as for the other "
          "commands; relative: to the first step)");
      sub->get_option("--to")->description("Only the job steps that start before this time");
      sub->add_option("--tables-out", job_tables_out,
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
    if (c.kind == ReportKind::kReport) {
      sub->add_option("--slow-factor", steps_slow_factor,
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
    kinds[sub] = c.kind;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : cupmon::decoder::kExitUnusable;
  }
  ReportKind kind = ReportKind::kSummary;
  for (const auto& [sub, k] : kinds)
    if (sub->parsed()) kind = k;

  if (kind == ReportKind::kInfo && info_quick) return QuickInfo(args.dirs, report_format, args.output);

  if (args.threads) {
    cupmon::decoder::SetDecodeThreads(*args.threads);
  } else if (const std::string why = CheckThreadsVariable(); !why.empty()) {
    std::cerr << "cupmon-decode: " << why << "\n";
    return cupmon::decoder::kExitUnusable;
  }

  ReportOptions opt;
  opt.filter.window = args.window;
  opt.filter.device = args.device;
  opt.filter.stream = args.stream;
  opt.filter.mangled = args.mangled;
  opt.filter.nvtx_scope = nvtx_scope == "thread" ? cupmon::decoder::NvtxScope::kThread
                                                 : cupmon::decoder::NvtxScope::kProcess;
  opt.filter.cupti_clock = opt.steps.cupti_clock = args.clock == "cupti";
  opt.full_names = args.full_names;
  opt.pid = args.pid;
  opt.limit = args.limit;
  opt.reorder_rows = args.reorder_rows;
  opt.recursive = args.recursive;
  opt.jobs = args.jobs;
  // --format was checked against the registry's names as it was parsed.
  if (auto named = cupmon::decoder::ExportFormatNamed(format); named) {
    opt.format = *named;
  } else {
    std::cerr << "cupmon-decode: " << named.error().message << "\n";
    return cupmon::decoder::kExitUnusable;
  }
  opt.report_format = report_format == "json"  ? cupmon::decoder::ReportFormat::kJson
                      : report_format == "csv" ? cupmon::decoder::ReportFormat::kCsv
                                               : cupmon::decoder::ReportFormat::kText;
  opt.steps.format = steps_format == "csv"     ? cupmon::decoder::StepFormat::kCsv
                     : steps_format == "jsonl" ? cupmon::decoder::StepFormat::kJsonl
                                               : cupmon::decoder::StepFormat::kTable;
  opt.steps.source = steps_by == "pattern"      ? cupmon::decoder::StepSource::kPattern
                     : steps_by == "annotation" ? cupmon::decoder::StepSource::kAnnotation
                                                : cupmon::decoder::StepSource::kAuto;
  opt.steps.slow_factor = steps_slow_factor;
  opt.job_tables_out = job_tables_out;
  if ((kineto_steps != "auto" || kineto_synthetic) && opt.format != ExportFormat::kKineto) {
    std::cerr << "cupmon-decode: --kineto-steps and --kineto-synthetic-launches apply to export "
                 "--format kineto only\n";
    return cupmon::decoder::kExitUnusable;
  }
  opt.kineto_steps = kineto_steps == "detected"     ? cupmon::decoder::KinetoSteps::kDetected
                     : kineto_steps == "annotation" ? cupmon::decoder::KinetoSteps::kAnnotation
                     : kineto_steps == "none"       ? cupmon::decoder::KinetoSteps::kNone
                                                    : cupmon::decoder::KinetoSteps::kAuto;
  opt.kineto_synthetic_launches = kineto_synthetic;
  if (kind == ReportKind::kTimeline) {
    opt.format = timeline_format == "jsonl" ? ExportFormat::kJsonl : ExportFormat::kCsv;
    auto bucket = cupmon::decoder::ParseBucketSize(timeline_bucket);
    if (!bucket) {
      std::cerr << "cupmon-decode: --bucket: " << bucket.error().message << "\n";
      return cupmon::decoder::kExitUnusable;
    }
    opt.timeline.bucket_ns = *bucket;
    opt.timeline.max_rows = timeline_max_rows;
  }
  opt.diff.format = diff_format == "csv"     ? cupmon::decoder::DiffFormat::kCsv
                    : diff_format == "jsonl" ? cupmon::decoder::DiffFormat::kJsonl
                                             : cupmon::decoder::DiffFormat::kTable;
  opt.diff.fail_above = fail_above;
  for (auto [side, a, r] :
       {std::tuple{"a", &diff_a, &opt.diff.a}, std::tuple{"b", &diff_b, &opt.diff.b}}) {
    r->window = a->window;
    r->rank = a->rank;
    if (!a->from.empty() && !cupmon::decoder::ParseTimeArg(a->from, &r->from_rel, &r->from_wall)) {
      std::cerr << "cupmon-decode: cannot parse --from-" << side << " " << a->from << "\n";
      return cupmon::decoder::kExitUnusable;
    }
    if (!a->to.empty() && !cupmon::decoder::ParseTimeArg(a->to, &r->to_rel, &r->to_wall)) {
      std::cerr << "cupmon-decode: cannot parse --to-" << side << " " << a->to << "\n";
      return cupmon::decoder::kExitUnusable;
    }
  }
  const bool sqlite = kind == ReportKind::kExport && opt.format == ExportFormat::kSqlite;
  if (sqlite && !cupmon::decoder::SqliteExportBuilt()) {
    std::cerr << "cupmon-decode: --format sqlite is not available: this cupmon-decode was built "
                 "without SQLite (install libsqlite3-dev, or run tools/install-deps, and rebuild)\n";
    return cupmon::decoder::kExitUnusable;
  }
  // "-o -" is standard output, as elsewhere on the command line; "./-" still names a file.
  if (args.output == "-") args.output.clear();
  if (sqlite && args.output.empty()) {
    std::cerr << "cupmon-decode: --format sqlite writes an SQLite database file and cannot write "
                 "to standard output: give -o FILE.sqlite\n";
    return cupmon::decoder::kExitUnusable;
  }
  if (sqlite) opt.output_path = args.output;
  const bool html = kind == ReportKind::kReport;
  if (html && args.output.empty() && isatty(STDOUT_FILENO)) {
    std::cerr << "cupmon-decode: report writes an HTML page: give -o FILE.html or redirect "
                 "standard output\n";
    return cupmon::decoder::kExitUnusable;
  }
  if (kind == ReportKind::kExport && opt.format == ExportFormat::kPerfetto && args.output.empty() &&
      isatty(STDOUT_FILENO)) {
    std::cerr << "cupmon-decode: --format perfetto writes binary protobuf; give -o FILE.pftrace "
                 "or redirect standard output\n";
    return cupmon::decoder::kExitUnusable;
  }
  // Traces and exports stream to stdout while they read: a progress line redrawn on the same
  // terminal would tear through them. Summary and info write only once reading is done.
  const bool streams_to_terminal = args.output.empty() && isatty(STDOUT_FILENO) &&
                                   kind != ReportKind::kSummary && kind != ReportKind::kInfo &&
                                   kind != ReportKind::kSteps && kind != ReportKind::kDiff &&
                                   kind != ReportKind::kJob;
  opt.progress = isatty(STDERR_FILENO) && !streams_to_terminal;
  if (!args.from.empty() &&
      !cupmon::decoder::ParseTimeArg(args.from, &opt.filter.from_rel, &opt.filter.from_wall)) {
    std::cerr << "cupmon-decode: cannot parse --from " << args.from << "\n";
    return cupmon::decoder::kExitUnusable;
  }
  if (!args.to.empty() &&
      !cupmon::decoder::ParseTimeArg(args.to, &opt.filter.to_rel, &opt.filter.to_wall)) {
    std::cerr << "cupmon-decode: cannot parse --to " << args.to << "\n";
    return cupmon::decoder::kExitUnusable;
  }
  // An empty or inverted range would print an empty report and exit 0. Ranges of the same kind
  // compare here; a relative end against a wall-clock start needs the recording, and is left alone.
  const auto inverted = [](const std::optional<int64_t>& from, const std::optional<int64_t>& to) {
    return from && to && *to <= *from;
  };
  if (inverted(opt.filter.from_rel, opt.filter.to_rel) ||
      inverted(opt.filter.from_wall, opt.filter.to_wall)) {
    std::cerr << "cupmon-decode: --to " << args.to << " is not after --from " << args.from
              << ": the range is empty\n";
    return cupmon::decoder::kExitUnusable;
  }
  if (!args.kernel.empty()) {
    try {
      opt.filter.kernel.emplace(args.kernel);
    } catch (const std::regex_error& e) {
      std::cerr << "cupmon-decode: bad --kernel regex: " << e.what() << "\n";
      return cupmon::decoder::kExitUnusable;
    }
  }
  std::unique_ptr<cupmon::decoder::OutputFile> file;
  // --format kineto: -o names a directory, which the export creates and fills itself.
  if (kind == ReportKind::kExport && opt.format == ExportFormat::kKineto) {
    if (args.output.empty()) {
      std::cerr << "cupmon-decode: --format kineto writes one file per rank: give -o DIR\n";
      return cupmon::decoder::kExitUnusable;
    }
    opt.output_dir = std::move(args.output);
    args.output.clear();
  } else if (!args.output.empty() && !sqlite) {
    // (The SQLite export opens its file itself: SQLite writes a temporary beside it, renamed
    // onto it at the end.)
    // Written beside FILE and renamed onto it at the end: a full disk or a size limit leaves no
    // truncated FILE behind.
    auto opened = cupmon::decoder::OutputFile::Open(args.output);
    if (!opened) {
      std::cerr << "cupmon-decode: " << opened.error().message << "\n";
      return cupmon::decoder::kExitUnusable;
    }
    file = std::move(*opened);
  }
  std::ostream& out = file ? file->stream() : std::cout;
  std::ios::sync_with_stdio(false);
  int rc = cupmon::decoder::kExitUnusable;
  try {
    rc = cupmon::decoder::RunReport(kind, args.dirs, opt, out, std::cerr);
  } catch (const std::bad_alloc&) {
    // Exit 2 and the reason, not std::terminate's abort. Each rank read at once holds its own
    // working memory (60-80 MB), so fewer at once is the first thing to try.
    std::cerr << "cupmon-decode: out of memory; --jobs 1 reads one rank at a time (merged "
                 "summary, info, steps and report, diff), and a smaller --reorder-rows holds "
                 "fewer rows\n";
  } catch (const std::exception& e) {
    std::cerr << "cupmon-decode: stopped by an unexpected error: " << e.what() << "\n";
  }
  // Exit 2 means the output is not usable (the message says why): FILE is left as it was. When
  // the output itself failed (the report stopped reading then), Commit says why and removes the
  // temporary.
  const bool unusable = rc == cupmon::decoder::kExitUnusable;
  if (file && (!unusable || file->stream().fail())) {
    if (auto committed = file->Commit(); !committed) {
      std::cerr << "cupmon-decode: " << committed.error().message << "\n";
      rc = cupmon::decoder::kExitUnusable;
    }
  } else if (!file && (!unusable || std::cout.fail()) && !std::cout.flush()) {
    std::cerr << "cupmon-decode: writing standard output failed (a full disk, or the reader of the "
                 "pipe went away): the output is incomplete\n";
    rc = cupmon::decoder::kExitUnusable;
  }
  return rc;
}

// The options every command takes, and the run of a command into its output (common_args.h).
#include "cupmon_decode/common_args.h"

#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <new>
#include <regex>
#include <string_view>

#include "cupmon/decoder/output_file.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/reports.h"
#include "cupmon_decode/stderr_text.h"

namespace cupmon::decode_cli {
namespace {

// CUPMON_DECODE_THREADS, when set, must be 1 or 2 (as --threads): "" when it is fine, else why not.
std::string CheckThreadsVariable() {
  const char* v = std::getenv("CUPMON_DECODE_THREADS");
  if (!v) return {};
  const std::string_view s(v);
  if (s == "1" || s == "2") return {};
  return "CUPMON_DECODE_THREADS='" + std::string(s) + "' is not 1 or 2 (threads reading a recording)";
}

}  // namespace

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

bool SetThreads(const CommonArgs& args) {
  if (args.threads) {
    decoder::SetDecodeThreads(*args.threads);
  } else if (const std::string why = CheckThreadsVariable(); !why.empty()) {
    std::cerr << "cupmon-decode: " << why << "\n";
    return false;
  }
  return true;
}

bool ReadOptionsOf(const CommonArgs& args, bool nvtx_thread, decoder::RankReadOptions* read) {
  decoder::TraceFilter& f = read->filter;
  f.window = args.window;
  f.device = args.device;
  f.stream = args.stream;
  f.mangled = args.mangled;
  f.nvtx_scope = nvtx_thread ? decoder::NvtxScope::kThread : decoder::NvtxScope::kProcess;
  f.cupti_clock = args.clock == "cupti";
  read->full_names = args.full_names;
  read->pid = args.pid;
  read->recursive = args.recursive;
  read->jobs = args.jobs;
  if (!args.from.empty() && !decoder::ParseTimeArg(args.from, &f.from_rel, &f.from_wall)) {
    std::cerr << "cupmon-decode: cannot parse --from " << args.from << "\n";
    return false;
  }
  if (!args.to.empty() && !decoder::ParseTimeArg(args.to, &f.to_rel, &f.to_wall)) {
    std::cerr << "cupmon-decode: cannot parse --to " << args.to << "\n";
    return false;
  }
  // An empty or inverted range would print an empty report and exit 0. Ranges of the same kind
  // compare here; a relative end against a wall-clock start needs the recording, and is left alone.
  const auto inverted = [](const std::optional<int64_t>& from, const std::optional<int64_t>& to) {
    return from && to && *to <= *from;
  };
  if (inverted(f.from_rel, f.to_rel) || inverted(f.from_wall, f.to_wall)) {
    std::cerr << "cupmon-decode: --to " << args.to << " is not after --from " << args.from
              << ": the range is empty\n";
    return false;
  }
  if (!args.kernel.empty()) {
    try {
      f.kernel.emplace(args.kernel);
    } catch (const std::regex_error& e) {
      std::cerr << "cupmon-decode: bad --kernel regex: " << e.what() << "\n";
      return false;
    }
  }
  return true;
}

bool WantsProgress(const std::string& output, bool streams) {
  // A progress line redrawn on the terminal that the output streams to would tear through it.
  const bool streams_to_terminal = streams && output.empty() && isatty(STDOUT_FILENO);
  return isatty(STDERR_FILENO) && !streams_to_terminal;
}

int RunToOutput(const std::string& file_path, bool wants_progress, const CommandRun& run) {
  std::unique_ptr<decoder::OutputFile> file;
  if (!file_path.empty()) {
    // Written beside FILE and renamed onto it at the end: a full disk or a size limit leaves no
    // truncated FILE behind.
    auto opened = decoder::OutputFile::Open(file_path);
    if (!opened) {
      std::cerr << "cupmon-decode: " << opened.error().message << "\n";
      return kExitUnusable;
    }
    file = std::move(*opened);
  }
  std::ostream& out = file ? file->stream() : std::cout;
  std::ios::sync_with_stdio(false);
  StderrText diagnostics(std::cerr, wants_progress);
  decoder::Outcome outcome = decoder::Outcome::kFailed;
  try {
    outcome = run(out, diagnostics);
  } catch (const std::bad_alloc&) {
    // Exit 2 and the reason, not std::terminate's abort. Each rank read at once holds its own
    // working memory (60-80 MB), so fewer at once is the first thing to try.
    std::cerr << "cupmon-decode: out of memory; --jobs 1 reads one rank at a time (merged "
                 "summary, info, steps and report, diff), and a smaller --reorder-rows holds "
                 "fewer rows\n";
  } catch (const std::exception& e) {
    std::cerr << "cupmon-decode: stopped by an unexpected error: " << e.what() << "\n";
  }
  int rc = ExitCode(outcome);
  // Unusable: the output is not to be used (the message says why), and FILE is left as it was.
  // When the output itself failed (the command stopped reading then), Commit says why and
  // removes the temporary.
  const bool unusable = decoder::Unusable(outcome);
  if (file && (!unusable || file->stream().fail())) {
    if (auto committed = file->Commit(); !committed) {
      std::cerr << "cupmon-decode: " << committed.error().message << "\n";
      rc = kExitUnusable;
    }
  } else if (!file && (!unusable || std::cout.fail()) && !std::cout.flush()) {
    std::cerr << "cupmon-decode: writing standard output failed (a full disk, or the reader of the "
                 "pipe went away): the output is incomplete\n";
    rc = kExitUnusable;
  }
  return rc;
}

}  // namespace cupmon::decode_cli

// What every cupmon-decode command takes on its command line (the recordings, filters, -o, threads
// and jobs), how it becomes the decoder's RankReadOptions, and the run of a command into its
// output (standard output or an -o file) with its messages on stderr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cupmon/decoder/commands.h"
#include "cupmon/decoder/diagnostics.h"

namespace cupmon::decode_cli {

struct CommonArgs {
  std::vector<std::string> dirs;
  bool recursive = false;
  std::optional<uint32_t> window, device, stream, pid;
  std::optional<uint64_t> limit;
  std::string from, to, kernel;
  std::string output;  // -o; "-" (standard output) is read as ""
  bool mangled = false, full_names = false;
  size_t reorder_rows = 1 << 16;
  std::optional<int> threads;
  size_t jobs = 0;
  std::string clock = "wall";
};

// Adds the options every command takes to `app`, bound to `args`.
void AddCommon(CLI::App* app, CommonArgs* args);

// Applies --threads, or checks CUPMON_DECODE_THREADS; false after the message (exit 2).
bool SetThreads(const CommonArgs& args);

// The filters and reading choices of `args` (export's --nvtx-scope in `nvtx_thread`); false after
// the message (exit 2) when --from, --to or --kernel cannot be parsed or the range is empty.
bool ReadOptionsOf(const CommonArgs& args, bool nvtx_thread, decoder::RankReadOptions* read);

// Whether to draw a progress line: stderr is a terminal, and the output does not stream to the
// terminal too while the command reads (`streams`: traces, exports, timeline and report write
// as they read; the others once reading is done).
bool WantsProgress(const std::string& output, bool streams);

// Runs `run` into `file` (written beside it, renamed onto it once complete: OutputFile) or, when
// `file` is empty, standard output, with the messages on stderr; returns the exit code. A run
// that ends unusable leaves `file` as it was; an output that cannot be written whole is exit 2.
using CommandRun = std::function<decoder::Outcome(std::ostream& out, decoder::Diagnostics&)>;
int RunToOutput(const std::string& file, bool wants_progress, const CommandRun& run);

}  // namespace cupmon::decode_cli

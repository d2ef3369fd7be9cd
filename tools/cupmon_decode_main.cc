// cupmon-decode: offline decoder for cupmon recordings (no GPU, CUDA or libcupti needed). Its
// commands (tools/cupmon_decode/commands.cc) fill the decoder's options and run; this file
// registers them, parses the command line and dispatches.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "cupmon/decoder/torch_monitor_dump.h"
#include "cupmon/format/build_info.h"
#include "cupmon_decode/commands.h"
#include "cupmon_decode/stderr_text.h"

namespace {

using cupmon::decode_cli::Command;
using cupmon::decode_cli::kExitUnusable;

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

// A first word that is no command (a typo such as "sumary") would otherwise be reported as "A
// subcommand is required": names it, and the nearest command; false when it is a command.
bool RefuseUnknownCommand(std::string_view word, const std::vector<Command>& commands) {
  const Command* nearest = nullptr;
  size_t best = SIZE_MAX;
  std::string names;
  for (const Command& c : commands) {
    if (word == c.name) return false;
    const size_t d = EditDistance(word, c.name);
    if (d < best) best = d, nearest = &c;
    names += std::string(names.empty() ? "" : ", ") + c.name;
  }
  std::cerr << "cupmon-decode: unknown command '" << word << "'";
  if (nearest && best <= 3) std::cerr << "; did you mean '" << nearest->name << "'?";
  std::cerr << "\ncommands: " << names << " (cupmon-decode --help)\n";
  return true;
}

}  // namespace

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
  std::vector<Command> commands = cupmon::decode_cli::MakeCommands();
  if (argc > 1 && argv[1][0] != '-' && RefuseUnknownCommand(argv[1], commands))
    return kExitUnusable;
  std::vector<CLI::App*> subs;
  for (const Command& c : commands) {
    subs.push_back(app.add_subcommand(c.name, c.help));
    c.add_options(subs.back());
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUnusable;
  }
  for (size_t i = 0; i < commands.size(); ++i)
    if (subs[i]->parsed()) return commands[i].run();
  return kExitUnusable;  // require_subcommand(1): not reached
}

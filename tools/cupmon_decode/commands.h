// cupmon-decode's commands, as its main function registers and dispatches them: each adds its
// options (the common ones and its own) to its subcommand, and once the command line is parsed,
// fills its decoder options struct (cupmon/decoder/commands.h), runs and gives the exit code.
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

namespace cupmon::decode_cli {

struct Command {
  const char* name;
  const char* help;
  std::function<void(CLI::App* sub)> add_options;
  std::function<int()> run;  // after a successful parse of its subcommand
};

// Every command, in the order the help lists them.
std::vector<Command> MakeCommands();

}  // namespace cupmon::decode_cli

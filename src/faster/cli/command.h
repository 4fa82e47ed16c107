// Subcommand registry: each cli/cmd_*.cpp registers itself, so adding a command touches one file.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "faster/core/enum_names.h"

namespace faster::cli {

// Exit code of the data tools when they finished but skipped bad input (0 = all done, 1 = error).
constexpr int kExitBadInput = 3;

// Adds the subcommand to `root`; its callback stores the command's exit code in `exit_code`.
using AddCommand = std::function<void(CLI::App& root, int& exit_code)>;

struct Command {
  int order;  // position in `faster --help`
  AddCommand add;
};

std::vector<Command>& commands();
bool register_command(int order, AddCommand add);

// An option whose value is one name of `table`, parsed into `value` as the flag is read; a wrong
// name ends with faster's one-line error ("--flag must be a or b (got 'x')").
template <typename E, size_t N>
CLI::Option* add_enum_option(CLI::App* cmd, const std::string& flag, E& value,
                             const EnumName<E> (&table)[N], const std::string& help) {
  return cmd->add_option(flag, value, help)
      ->transform(
          [&table, flag](std::string text) {
            return std::to_string(static_cast<int>(parse_enum(table, text, flag)));
          },
          "(" + enum_choices(table) + ")")
      ->default_str(enum_name(table, value));
}

// Path of the running faster program (to start more of it: bench runs, DDP ranks).
std::string self_exe();

}  // namespace faster::cli

#define FASTER_REGISTER_COMMAND(order, fn) \
  static const bool faster_registered_##order = ::faster::cli::register_command(order, fn)

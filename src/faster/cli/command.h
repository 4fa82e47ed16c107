// Subcommand registry: each cli/cmd_*.cpp registers itself, so adding a command touches one file.
// Two programs are built from it (cli/files.cmake lists which commands go where): `faster` runs the
// commands that need no LibTorch itself, so they start in milliseconds, and execs faster-torch,
// built beside it, for the others; it knows their names and descriptions from a table that
// faster-torch's own registry writes at build time (torch_commands()).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "faster/core/enum_names.h"
#include "faster/core/exit_codes.h"
#include "faster/core/flag_rules.h"
#include "faster/core/text.h"
#include "faster/data/loader/cpu_share.h"

namespace faster::cli {

// Adds the subcommand to `root`; its callback stores the command's exit code in `exit_code`.
using AddCommand = std::function<void(CLI::App& root, int& exit_code)>;

struct Command {
  int order;  // position in `faster --help`
  AddCommand add;
};

std::vector<Command>& commands();
bool register_command(int order, AddCommand add);

// A command of faster-torch as `faster` lists it.
struct CommandSummary {
  int order;
  const char* name;
  const char* description;
};
// faster-torch's commands: generated at build time by `faster-torch --command-table` (only in
// `faster`).
const std::vector<CommandSummary>& torch_commands();
// This program's registered commands as the C++ source of torch_commands().
std::string command_table_source();

// Parses the command line and runs the registered command; returns its exit code.
int run_command_line(int argc, char** argv);
// What each main() returns: `body`'s exit code, or, when it throws, kExitUsage for a UsageError,
// the signal itself for an Interrupted (the process ends by it: 128 + the signal to the shell) and
// kExitError for any other, after one line on stderr ("faster: error: ...", and a HINT line where
// there is one); `message` gives that line for an exception other than faster::Error.
int exit_code_of(const std::function<int()>& body,
                 const std::function<std::string(const std::exception&)>& message);

// An option whose value is one name of `table`, parsed into `value` as the flag is read; a wrong
// name ends with faster's one-line error ("--flag must be a or b (got 'x')").  any_case: the name
// in any case (torchvision's spelling of a flag it lower-cases).
template <typename E, size_t N>
CLI::Option* add_enum_option(CLI::App* cmd, const std::string& flag, E& value,
                             const EnumName<E> (&table)[N], const std::string& help,
                             bool any_case = false) {
  return cmd->add_option(flag, value, help)
      ->transform(
          [&table, flag, any_case](std::string text) {
            if (any_case) text = lower_case(std::move(text));
            return std::to_string(static_cast<int>(parse_enum(table, text, flag)));
          },
          "(" + enum_choices(table) + ")")
      ->default_str(enum_name(table, value));
}

// The nvJPEG loader's two knobs, as `faster load` and `faster train` both take them: --cpu-share
// (images the CPU threads decode anyway: a number or auto) and --nvjpeg-threads (threads feeding
// the GPU's decoder, each taking a part of every batch).
void add_nvjpeg_options(CLI::App* cmd, data::CpuShare& cpu_share, int& threads);

// An integer flag whose value must lie in [lo, hi]: parsed as a 64-bit integer as it is read, so
// a number past the type's range gets faster's message ("--epochs must be between 1 and 1000000
// (got 99999999999)") rather than CLI11's "Could not convert"; not a number: "--epochs must be an
// integer (got 'ten')".  Both usage errors (exit 2).
CLI::Option* add_count_option(CLI::App* cmd, const std::string& flag, int& value, int64_t lo,
                              int64_t hi, const std::string& help);
CLI::Option* add_count_option(CLI::App* cmd, const std::string& flag, int64_t& value, int64_t lo,
                              int64_t hi, const std::string& help);
// --workers (kMaxWorkers) and --epochs (kMaxEpochs), as every command that has them takes them.
// `names`: the flag's names (train adds torchvision's -j).
CLI::Option* add_workers_option(CLI::App* cmd, int& value, const std::string& help,
                                const std::string& names = "--workers");
template <typename T>
CLI::Option* add_epochs_option(CLI::App* cmd, T& value, const std::string& help) {
  return add_count_option(cmd, "--epochs", value, 1, kMaxEpochs, help);
}

// --device as train, eval and load take it: auto (a GPU if one is visible), cpu, cuda or cuda:N,
// its spelling checked as it is read (a usage error naming it); whether the machine has that
// device is the command's to check (train::resolve_device).
CLI::Option* add_device_option(CLI::App* cmd, std::string& value);

// --seed: a decimal integer from 0 to 2^64-1 into `seed`; anything else ("-1", "1e23", a number
// past 2^64) is a usage error, where a plain option would wrap it around to another seed.
CLI::Option* add_seed_option(CLI::App* cmd, uint64_t& seed, const std::string& help);

// --val-res / --val-resize of train and eval: a side from 8 to `max_side` into `side`, whose 0
// stands for "not given" (a default follows), so a given 0 is a usage error.
CLI::Option* add_val_side_option(CLI::App* cmd, const std::string& flag, int& side, int max_side,
                                 const std::string& help);

// "1,2,3": a list of sizes as the --blocks and --filters flags take them.
std::string comma_list(const std::vector<int>& v);

// Path of the `faster` program (to start more of it: bench runs, DDP ranks); in faster-torch, the
// `faster` beside it, so that the new processes show as `faster train ...` like the first.
std::string self_exe();
// Path of faster-torch, beside this program.
std::string torch_exe();

}  // namespace faster::cli

#define FASTER_REGISTER_COMMAND(order, fn) \
  static const bool faster_registered_##order = ::faster::cli::register_command(order, fn)

// Entry point of `faster`: runs the commands that need no LibTorch (synth, resize, pack, export)
// itself, so they start without LibTorch's second of loading, and hands the others to faster-torch
// beside it: an exec with the same arguments (argv[0] too, for messages and ps), so the exit code
// is the command's.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "faster/cli/command.h"
#include "faster/core/error.h"

namespace faster::cli {
namespace {

// LibTorch's OpenMP runtime reads its settings from the environment as it loads, before
// faster-torch's main() runs, so they are set here.  By default a thread that waits at the end of a
// parallel region spins for a while before it sleeps; when other processes share the cores, that
// spinning takes the core the thread it waits for needs, and each step waits out a time slice: the
// CPU recipe ran 3-4x longer beside two compilers on 2 cores (BENCHMARKS.md, issue 16).  Passive
// threads sleep at once; the user's own setting wins.
void set_torch_environment() {
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT"))
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
}

[[noreturn]] void exec_torch(char** argv) {
  const std::string exe = torch_exe();
  set_torch_environment();
  execv(exe.c_str(), argv);
  throw Error(detail::concat("cannot start ", exe, ": ", std::strerror(errno)),
              "the commands that need LibTorch run in faster-torch, built beside faster "
              "(cmake --build)");
}

bool is_torch_command(const char* name) {
  for (const CommandSummary& c : torch_commands())
    if (std::strcmp(c.name, name) == 0) return true;
  return false;
}

// faster-torch's commands, so that `faster --help` lists them and a wrong name is told from them.
// main() hands them over before parsing; the callback covers a line where CLI11 finds one later.
void register_torch_commands(char** argv) {
  for (const CommandSummary& c : torch_commands())
    register_command(c.order, [c, argv](CLI::App& root, int&) {
      root.add_subcommand(c.name, c.description)->prefix_command()->callback([argv] {
        exec_torch(argv);
      });
    });
}

}  // namespace
}  // namespace faster::cli

int main(int argc, char** argv) {
  using namespace faster::cli;
  return exit_code_of(
      [&] {
        if (argc > 1 && is_torch_command(argv[1])) exec_torch(argv);
        register_torch_commands(argv);
        return run_command_line(argc, argv);
      },
      [](const std::exception& e) { return std::string(e.what()); });
}

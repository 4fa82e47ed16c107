// Entry point of faster-torch, the program that runs the commands needing LibTorch (train, eval,
// bench, load, env): `faster` execs it with its own arguments.  At build time it also writes the
// table of its commands that `faster` is compiled with (--command-table FILE).
#include <c10/util/Exception.h>

#include <cstring>
#include <fstream>
#include <string>

#include "faster/cli/command.h"
#include "faster/core/early_context.h"
#include "faster/core/error.h"
#include "faster/core/process_clock.h"

namespace faster::cli {
namespace {

// The first line of a LibTorch error, without its C++ backtrace.
std::string message(const std::exception& e) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&e);
  if (!torch_error) return e.what();
  const std::string s = torch_error->what_without_backtrace();
  return s.substr(0, s.find('\n'));
}

int write_command_table(const char* path) {
  std::ofstream out(path);
  out << command_table_source();
  if (!out.flush()) FASTER_THROW("cannot write ", path);
  return 0;
}

// The loader calls this before any library's constructor (with main()'s arguments, as glibc
// passes them): the CUDA context then overlaps LibTorch's loading (faster/core/early_context.h).
void early_context_entry(int argc, char** argv, char** envp) {
  faster::begin_early_context(argc, argv, envp);
}
__attribute__((section(".preinit_array"),
               used)) void (*preinit_early_context)(int, char**, char**) = early_context_entry;

}  // namespace
}  // namespace faster::cli

int main(int argc, char** argv) {
  using namespace faster::cli;
  const int code = exit_code_of(
      [&] {
        faster::mark_main_entered();
        // The early context's thread reads the environment, which LibTorch's first CUDA call
        // writes: it ends here, in the time LibTorch's loading left it.
        faster::finish_early_context();
        if (argc == 3 && std::strcmp(argv[1], "--command-table") == 0)
          return write_command_table(argv[2]);
        return run_command_line(argc, argv);
      },
      message);
  faster::finish_early_context();  // no exit while the driver is still making it
  return code;
}

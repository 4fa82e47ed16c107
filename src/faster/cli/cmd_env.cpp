// `faster env`: the environment as JSON, like the seed's ENV block.
#include <cstdio>

#include "faster/cli/command.h"
#include "faster/core/env.h"

namespace faster::cli {
namespace {

void add_env(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand(
      "env",
      "Print the environment as JSON: faster, LibTorch, CUDA, cuDNN and NCCL (builds with CUDA), "
      "GPUs, CPU (torch_default_threads is LibTorch's own default; train uses the usable cores), "
      "OS.");
  cmd->footer("Exit codes: 0 done; 2 a usage error (docs/exit_codes.md).");
  cmd->callback([&exit_code] {
    std::printf("%s\n", env_info().dump(2).c_str());
    exit_code = 0;
  });
}

}  // namespace
FASTER_REGISTER_COMMAND(90, add_env);
}  // namespace faster::cli

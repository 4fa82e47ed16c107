# cli: two programs, one file per subcommand.  `faster` runs the commands that need no LibTorch
# and execs faster-torch, beside it, for the commands that need LibTorch.
list(APPEND FASTER_CLI_SOURCES src/faster/cli/command.cpp)
list(APPEND FASTER_CLI_BASE_SOURCES
  src/faster/cli/main.cpp
  src/faster/cli/cmd_synth.cpp
  src/faster/cli/cmd_resize.cpp
  src/faster/cli/cmd_pack.cpp
  src/faster/cli/cmd_export.cpp
)
list(APPEND FASTER_CLI_TORCH_SOURCES
  src/faster/cli/main_torch.cpp
  src/faster/cli/cmd_train.cpp
  src/faster/cli/train_flags.cpp
  src/faster/cli/train_recipe.cpp
  src/faster/cli/cmd_eval.cpp
  src/faster/cli/cmd_bench.cpp
  src/faster/cli/cmd_load.cpp
  src/faster/cli/cmd_env.cpp
)

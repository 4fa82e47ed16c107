# cli: the `faster` program, one file per subcommand.
list(APPEND FASTER_CLI_SOURCES
  src/faster/cli/main.cpp
  src/faster/cli/cmd_train.cpp
  src/faster/cli/cmd_eval.cpp
  src/faster/cli/cmd_bench.cpp
  src/faster/cli/cmd_load.cpp
  src/faster/cli/cmd_synth.cpp
  src/faster/cli/cmd_resize.cpp
  src/faster/cli/cmd_pack.cpp
  src/faster/cli/cmd_export.cpp
  src/faster/cli/cmd_env.cpp
)

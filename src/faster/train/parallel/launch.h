// The local launcher behind `faster train --parallel ddp --nproc N`: starts N copies of this
// program as ranks 0..N-1 (torchrun's environment variables), waits, and if one fails stops the
// others within a bounded time, so a job never hangs on a dead rank.
#pragma once

#include <string>
#include <vector>

namespace faster::train {

struct LaunchOptions {
  int nproc = 1;
  std::string exe;                // the program to start (this one)
  std::vector<std::string> args;  // its arguments, without --nproc
  int grace_seconds = 10;         // SIGTERM, then SIGKILL after this long
  std::string checkpoint;         // the job's --checkpoint, named when Ctrl-C stops it
};

// MASTER_PORT comes from the environment, else a free local port is taken.
// Returns 0 when every rank exits 0; else the first failing rank's exit code (128+signal if
// killed).
int launch_local(const LaunchOptions& o);

// Program arguments (without the program name) with `--nproc N` / `--nproc=N` removed.
std::vector<std::string> without_nproc(const std::vector<std::string>& args);

}  // namespace faster::train

// Who this process is in a distributed job, read from the environment that launched it: our own
// launcher or torchrun (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT)
// or a Slurm job step (SLURM_PROCID, SLURM_LOCALID, SLURM_STEP_NUM_TASKS,
// SLURM_STEP_TASKS_PER_NODE, SLURM_STEP_NODELIST, SLURM_JOB_ID).
#pragma once

#include <string>

namespace faster::train {

struct WorldInfo {
  int rank = 0, local_rank = 0, world = 1, local_world = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source = "single";  // single | launcher | torchrun | slurm

  bool is_main() const { return rank == 0; }
};

// Reads and checks the environment; throws faster::Error naming the inconsistent variable.  With
// nothing set, a world of one (rank 0) on a free local port.
WorldInfo world_from_env();

// MASTER_PORT as a TCP port (1-65535), or `fallback` where it is unset or empty; throws
// faster::Error naming any other value.  The launcher and every rank read it so.
int master_port_from_env(int fallback);

// A TCP port on 127.0.0.1 that nothing listens on right now.
int free_local_port();

// Whether this process is a task of a Slurm job step of several tasks (core/launch_env.h).
bool in_slurm_step();

// The tasks on node `node` (0-based) of a Slurm task list ("2(x3),1": 2 on nodes 0-2, 1 on node
// 3); -1 where the list is malformed or too short.
int tasks_on_node(const std::string& per_node, int node);

// The first host of a Slurm host list ("gpu[03-05,7],cpu1" -> "gpu03"); empty if malformed.
std::string first_slurm_host(const std::string& nodelist);

}  // namespace faster::train

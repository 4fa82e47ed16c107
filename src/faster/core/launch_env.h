// How a process was launched, read from its environment: shared by the trainer's world
// (train/parallel/world.cpp, join_job) and the early CUDA context (core/early_context.cpp, which
// runs before main() and takes the same decisions).  Header-only and plain C calls.  `env` returns
// a variable's value or nullptr; an empty value counts as unset.
#pragma once

#include <cstdlib>
#include <cstring>

namespace faster::launch_env {

template <typename Env>
const char* get(const Env& env, const char* name) {
  const char* v = env(name);
  return v && *v ? v : nullptr;
}

// A task of a Slurm job step of several tasks: srun sets SLURM_STEP_NUM_TASKS; an sbatch script's
// own shell (SLURM_PROCID=0, SLURM_NTASKS=N, no step) and a one-task step (`srun --pty bash`) are
// one process each.
template <typename Env>
bool in_slurm_step(const Env& env) {
  const char* tasks = get(env, "SLURM_STEP_NUM_TASKS");
  return get(env, "SLURM_PROCID") && tasks && std::atoi(tasks) > 1;
}

// Such a task that sees exactly one GPU (srun --gpus-per-task 1 binds each its own): it uses that
// one, device 0, whatever its local rank.
template <typename Env>
bool one_gpu_per_task(const Env& env) {
  const char* visible = get(env, "CUDA_VISIBLE_DEVICES");
  return in_slurm_step(env) && visible && !std::strchr(visible, ',');
}

}  // namespace faster::launch_env

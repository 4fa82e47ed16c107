// The environment report (`faster env`, and the header of every benchmark): versions of faster,
// LibTorch, CUDA, cuDNN, NCCL; GPUs; CPU cores; OS.
#pragma once

#include <nlohmann/json.hpp>

namespace faster {

nlohmann::json env_info();

// The CPUs this process may run on (its affinity mask, which taskset, cgroups' cpusets and Slurm
// set), at least 1.
int usable_cores();

}  // namespace faster

// The environment report (`faster env`, and the header of every benchmark): versions of faster,
// LibTorch, CUDA, cuDNN, NCCL; GPUs; CPU cores; OS.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>

namespace faster {

nlohmann::json env_info();

// The CPUs this process may run on (its affinity mask, which taskset, cgroups' cpusets and Slurm
// set), at least 1.
int usable_cores();

// Memory a new allocation can take without swapping (MemAvailable in /proc/meminfo, the kernel's
// estimate; less where this process's cgroup v2 limit leaves less), in bytes; 0 when unknown.
int64_t available_memory_bytes();

}  // namespace faster

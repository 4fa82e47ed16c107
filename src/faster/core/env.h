// The environment report (`faster env`, and the header of every benchmark): versions of faster,
// LibTorch, CUDA, cuDNN, NCCL; GPUs; CPU cores; OS.
#pragma once

#include <nlohmann/json.hpp>

namespace faster {

nlohmann::json env_info();

}  // namespace faster

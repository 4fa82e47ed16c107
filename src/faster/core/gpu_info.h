// What the GPU side of this build and machine is: CUDA/cuDNN/NCCL versions and the visible GPUs.
// Implemented by gpu_info_cuda.cpp in CUDA builds and gpu_info_cpu.cpp otherwise.
#pragma once

#include <nlohmann/json.hpp>

namespace faster {

nlohmann::json gpu_info();
int cuda_device_count();

}  // namespace faster

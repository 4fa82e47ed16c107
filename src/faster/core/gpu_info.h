// What the GPU side of this build and machine is: CUDA/cuDNN/NCCL versions and the visible GPUs.
// Implemented by gpu_info_cuda.cpp in CUDA builds and gpu_info_cpu.cpp otherwise.
#pragma once

#include <nlohmann/json.hpp>

namespace faster {

nlohmann::json gpu_info();
int cuda_device_count();

// How host threads wait for the GPU (the context's scheduling flag, cudaSetDeviceFlags): CUDA's
// default (spin while the process has fewer active contexts than cores, else yield), spin, yield
// the core while polling, or block on an interrupt (the thread sleeps, its core free for others).
enum class GpuWait { kAuto, kSpin, kYield, kBlock };

// Sets `wait` for CUDA device `device` (also where its context already exists); throws
// faster::Error if CUDA refuses, or for anything but kAuto in a build without CUDA.
void set_gpu_wait(int device, GpuWait wait);

}  // namespace faster

// gpu_info for CUDA builds: runtime, driver, cuDNN and NCCL versions and each visible GPU.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <torch/csrc/cuda/nccl.h>

#include "faster/core/cuda_check.h"
#include "faster/core/gpu_info.h"

namespace faster {
namespace {
std::string version_string(int v) {  // CUDA encodes 12040 as 12.4
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}
}  // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

void set_gpu_wait(int device, GpuWait wait) {
  unsigned flag = cudaDeviceScheduleAuto;
  if (wait == GpuWait::kSpin) flag = cudaDeviceScheduleSpin;
  if (wait == GpuWait::kYield) flag = cudaDeviceScheduleYield;
  if (wait == GpuWait::kBlock) flag = cudaDeviceScheduleBlockingSync;
  const c10::cuda::CUDAGuard on(static_cast<c10::DeviceIndex>(device));  // the flag is per device
  FASTER_CHECK_CUDA(cudaSetDeviceFlags(flag), "--gpu-wait");
}

nlohmann::json gpu_info() {
  nlohmann::json j;
  const int n = cuda_device_count();
  j["available"] = n > 0;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  j["cuda_runtime"] = version_string(runtime);
  j["cuda_driver"] = version_string(driver);
  const long cudnn = at::detail::getCUDAHooks().versionCuDNN();
  j["cudnn"] = std::to_string(cudnn / 10000) + "." + std::to_string(cudnn / 100 % 100) + "." +
               std::to_string(cudnn % 100);
  const auto nccl = torch::cuda::nccl::version();
  j["nccl"] = std::to_string(nccl >> 32) + "." + std::to_string((nccl >> 16) & 0xffff) + "." +
              std::to_string(nccl & 0xffff);
  j["gpus"] = nlohmann::json::array();
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    j["gpus"].push_back(
        {{"index", i},
         {"name", p.name},
         {"memory_gib", p.totalGlobalMem / double(1 << 30)},
         {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
         {"multiprocessors", p.multiProcessorCount}});
  }
  return j;
}

}  // namespace faster

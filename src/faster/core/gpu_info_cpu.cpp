// gpu_info for builds without CUDA: says so, so reports never claim a GPU that was not used.
#include "faster/core/gpu_info.h"

#include "faster/core/error.h"

namespace faster {

nlohmann::json gpu_info() {
  return {{"available", false},
          {"reason", "this build of faster has no CUDA"},
          {"gpus", nlohmann::json::array()}};
}

int cuda_device_count() {
  return 0;
}

void set_gpu_wait(int /*device*/, GpuWait wait) {
  if (wait != GpuWait::kAuto) FASTER_THROW("--gpu-wait: this build of faster has no CUDA");
}

}  // namespace faster

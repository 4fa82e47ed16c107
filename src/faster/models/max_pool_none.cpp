// Builds without CUDA: max_pool is LibTorch's max_pool2d.
#include <torch/torch.h>

#include "faster/models/max_pool.h"

namespace faster::models {

bool max_pool_kernel_applies(const torch::Tensor&, int, int, int) {
  return false;
}

torch::Tensor max_pool(const torch::Tensor& x, int kernel, int stride, int padding) {
  return torch::max_pool2d(x, kernel, stride, padding);
}

}  // namespace faster::models

// Builds without CUDA: the models always run LibTorch's BatchNorm2d and activations.
#include "faster/core/error.h"
#include "faster/models/norm_activation.h"

namespace faster::models {

bool fused_relu_batch_norm_applies(const torch::Tensor&, const torch::nn::BatchNorm2dImpl&) {
  return false;
}

torch::Tensor fused_relu_batch_norm(const torch::Tensor&, torch::nn::BatchNorm2dImpl&) {
  FASTER_THROW("fused ReLU + BatchNorm needs a CUDA build of faster");
}

bool fused_batch_norm_gelu_applies(const torch::Tensor&, const torch::nn::BatchNorm2dImpl&) {
  return false;
}

torch::Tensor fused_batch_norm_gelu(const torch::Tensor&, torch::nn::BatchNorm2dImpl&) {
  FASTER_THROW("fused BatchNorm + GELU needs a CUDA build of faster");
}

}  // namespace faster::models

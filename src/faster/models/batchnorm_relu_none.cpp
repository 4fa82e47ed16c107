// Builds without CUDA: ResNet always runs LibTorch's BatchNorm2d, add, ReLU and convolutions.
#include "faster/core/error.h"
#include "faster/models/batchnorm_relu.h"

namespace faster::models {

bool fused_batch_norm_relu_applies(const torch::Tensor&, const torch::nn::BatchNorm2dImpl&,
                                   const torch::Tensor&) {
  return false;
}

torch::Tensor fused_batch_norm_relu(const torch::Tensor&, torch::nn::BatchNorm2dImpl&,
                                    const torch::Tensor&) {
  FASTER_THROW("fused BatchNorm + ReLU needs a CUDA build of faster");
}

bool conv_and_shortcut_applies(const torch::Tensor&, const torch::nn::Conv2dImpl&) {
  return false;
}

std::pair<torch::Tensor, torch::Tensor> conv_and_shortcut(const torch::Tensor&,
                                                          torch::nn::Conv2dImpl&, bool) {
  FASTER_THROW("the convolution with its shortcut's gradient needs a CUDA build of faster");
}

}  // namespace faster::models

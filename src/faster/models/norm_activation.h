// BatchNorm2d fused with the activation beside it, as one CUDA operation (norm_activation.cu) with
// its own backward pass, where it applies: ThinNet's ReLU -> BatchNorm and SpeedNet's BatchNorm ->
// GELU.  Elsewhere (CPU, other
// dtypes, BatchNorm2d options it does not cover) the models run LibTorch's modules.  Results equal
// the unfused ones up to float rounding: statistics are summed in float per block and in double
// across blocks.
#pragma once

#include <torch/nn/modules/batchnorm.h>
#include <torch/types.h>

namespace faster::models {

// Whether fused_relu_batch_norm takes y and bn: a CUDA build, y a 4-d CUDA float/half/bfloat16
// tensor (dense NCHW or NHWC), bn affine with running statistics and a fixed momentum, float
// parameters; in training mode at least 2 values per channel, in eval mode no autograd.
bool fused_relu_batch_norm_applies(const torch::Tensor& y, const torch::nn::BatchNorm2dImpl& bn);

// bn(relu(y)), differentiable in y, bn.weight and bn.bias; in training mode it normalizes with the
// batch statistics and updates bn's running statistics and num_batches_tracked as BatchNorm2d does.
torch::Tensor fused_relu_batch_norm(const torch::Tensor& y, torch::nn::BatchNorm2dImpl& bn);

// Whether fused_batch_norm_gelu takes x and bn: as fused_relu_batch_norm_applies.
bool fused_batch_norm_gelu_applies(const torch::Tensor& x, const torch::nn::BatchNorm2dImpl& bn);

// gelu(bn(x)) (the exact GELU, torch::gelu's default), as fused_relu_batch_norm: differentiable in
// x, bn.weight and bn.bias, bn's statistics updated in training mode.  Only x is kept for the
// backward pass (LibTorch's pair keeps x and bn(x)).
torch::Tensor fused_batch_norm_gelu(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn);

}  // namespace faster::models

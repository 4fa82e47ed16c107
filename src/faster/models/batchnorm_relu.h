// ResNet's BatchNorm -> (+ residual) -> ReLU as one of cuDNN's fused batch-norm kernels
// (cudnnBatchNormalizationForwardTrainingEx / BackwardEx with the BN_ACTIVATION or
// BN_ADD_ACTIVATION ops, the kernels MXNet and DALI's ResNet recipes use), where they apply:
// a CUDA build, training mode, fp16 channels-last input (bf16 too where the process's cuDNN runs
// the fused ops on it: tried once, on a small batch).  Elsewhere ResNet runs LibTorch's ops one
// by one.  CUDA builds compile batchnorm_relu_cudnn.cpp, others batchnorm_relu_none.cpp.
#pragma once

#include <torch/nn/modules/batchnorm.h>
#include <torch/types.h>

namespace faster::models {

// Whether fused_batch_norm_relu takes x, bn and residual (undefined: none): a CUDA build whose
// LibTorch's cuDNN has the fused ops, x a 4-d fp16 (or, where cuDNN runs it, bf16) CUDA tensor in
// channels-last layout with a channel count divisible by 4, residual (if any) the same, bn in
// training mode, affine, with running statistics and a fixed momentum, its parameters float on x's
// device.
bool fused_batch_norm_relu_applies(const torch::Tensor& x, const torch::nn::BatchNorm2dImpl& bn,
                                   const torch::Tensor& residual = {});

// relu(bn(x) + residual), differentiable in x, residual, bn.weight and bn.bias; updates bn's
// running statistics and num_batches_tracked as BatchNorm2d does in training.
torch::Tensor fused_batch_norm_relu(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn,
                                    const torch::Tensor& residual = {});

}  // namespace faster::models

// ResNet's BatchNorm -> (+ residual) -> ReLU as one of cuDNN's fused batch-norm kernels
// (cudnnBatchNormalizationForwardTrainingEx / BackwardEx with the BN_ACTIVATION or
// BN_ADD_ACTIVATION ops, the kernels MXNet and DALI's ResNet recipes use), where they apply:
// a CUDA build, training mode, fp16 channels-last input (bf16 too where the process's cuDNN runs
// the fused ops on it: tried once, on a small batch).  Elsewhere ResNet runs LibTorch's ops one
// by one.  CUDA builds compile batchnorm_relu_cudnn.cpp, others batchnorm_relu_none.cpp.
#pragma once

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/types.h>

#include <utility>

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

// A residual block's first convolution and its identity shortcut, where the shortcut's gradient
// is joined to the data-gradient convolution by cuDNN (its graph API) instead of by autograd in a
// separate pass over the block's input (ResNet's "shortcut" and "shortcut_add" levers, resnet.h).
// Applies in a CUDA build whose LibTorch's cuDNN has the graph API, x a 4-d fp16 or bf16 CUDA
// tensor in channels-last layout, conv without bias or groups, with a square window, one stride
// and zero padding, its weight on x's device.  The shortcut's only consumer must be
// fused_batch_norm_relu (as its residual): its gradient, a buffer made for that edge alone, may
// be added onto in place.
bool conv_and_shortcut_applies(const torch::Tensor& x, const torch::nn::Conv2dImpl& conv);

// {conv(x), x}: the convolution (its weight cast to x's type, as autocast does) and the shortcut,
// both differentiable; the same values as conv.forward(x) and x.  x's gradient: the data gradient
// with the operation's beta = 1 onto the shortcut's gradient (in place), or, add_in_epilogue, plus
// the shortcut's gradient in the operation's epilogue (into a new buffer).
std::pair<torch::Tensor, torch::Tensor> conv_and_shortcut(const torch::Tensor& x,
                                                          torch::nn::Conv2dImpl& conv,
                                                          bool add_in_epilogue = false);

}  // namespace faster::models

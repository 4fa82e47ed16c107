// SpeedNet's 2x2 max-pool (stride 2, odd sides floored) as torch::max_pool2d(x, 2) computes it:
// the same values, and in training the same gradient (each window's gradient goes to its first
// largest value in row-major order, or to its last NaN where it holds one).  On CUDA, for
// channels-last float/half/bfloat16 maps whose channels fill 16-byte packs, it runs faster's
// kernels (max_pool.cu): one read of the input and one write of the output forward, one read of
// input and output gradient and one write of the input gradient backward, where LibTorch's NHWC
// kernels took 0.42 of SpeedNet's 1.8 ms training step on an H200; elsewhere LibTorch's max_pool2d.
#pragma once

#include <torch/types.h>

namespace faster::models {

// Whether max_pool2x2 runs faster's kernels for x (a CUDA build, a 4-d CUDA tensor in
// channels-last order, at least 2x2, float/half/bfloat16, channels a multiple of 16 bytes, data
// 16-byte aligned).
bool max_pool2x2_kernel_applies(const torch::Tensor& x);

// torch::max_pool2d(x, 2), differentiable in x.
torch::Tensor max_pool2x2(const torch::Tensor& x);

}  // namespace faster::models

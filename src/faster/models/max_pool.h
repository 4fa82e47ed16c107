// Max-pooling as torch::max_pool2d(x, kernel, stride, padding) computes it: the same values, and in
// training the same gradient (each window's gradient goes to its first largest value in row-major
// order, or to its last NaN where it holds one; where windows overlap, an input's gradients are
// summed in float in LibTorch's order).  On CUDA, for channels-last float/half/bfloat16 maps whose
// channels fill 16-byte packs, it runs faster's kernels (max_pool.cu): SpeedNet's 2x2 windows
// with one read of the input and one write of the output forward, where LibTorch's NHWC kernels
// took 0.42 of SpeedNet's 1.8 ms training step on an H200; ResNet's 3x3 stride-2 stem pool keeping
// each output's place in its window as a byte (LibTorch keeps an int64 index) and gathering the
// gradient per input pixel, where LibTorch's NHWC kernels took 2.7 ms of ResNet-18's 13.2 ms step
// on an H200 (BENCHMARKS.md).  Elsewhere LibTorch's max_pool2d.
#pragma once

#include <torch/types.h>

namespace faster::models {

// Whether max_pool runs faster's kernels for x and the window (a CUDA build, a 4-d CUDA tensor in
// channels-last order, float/half/bfloat16, channels a multiple of 16 bytes, data 16-byte aligned;
// a kernel of at most 15, padding at most half of it, an output of at least a pixel).
bool max_pool_kernel_applies(const torch::Tensor& x, int kernel, int stride, int padding = 0);

// torch::max_pool2d(x, kernel, stride, padding), differentiable in x.
torch::Tensor max_pool(const torch::Tensor& x, int kernel, int stride, int padding = 0);

}  // namespace faster::models

// ThinNet's ReLU -> BatchNorm (training statistics) as three CUDA kernels per direction instead of
// LibTorch's ReLU, batch-norm and ReLU-backward passes: the ReLU is applied where the values are
// read, so its output never goes to memory, and the backward pass reads the conv output once for
// the ReLU mask and the normalized value together.  Compute only (CUDA builds): the caller owns
// memory and streams; relu_batchnorm_cuda.cpp wraps them as an autograd function.
#pragma once

#include <cstdint>

#include "faster/models/kernel_elements.h"

namespace faster::models::kernels {

// A [n, c, h, w] tensor, dense in NCHW (channels_last = false) or NHWC (true) order.
struct NormShape {
  int64_t n = 0, c = 0, hw = 0;
  bool channels_last = false;
  ElementType type = ElementType::kFloat;
  int64_t count() const { return n * hw; }  // values per channel
};

// Whether these kernels take `s` (element data at `data`; vector loads need 16-byte alignment).
bool relu_bn_supported(const NormShape& s, const void* data);

// Float workspace each call needs (partial sums of every block, per-channel coefficients).
int64_t relu_bn_workspace(const NormShape& s);

// Training forward: r = max(y, 0); batch mean and biased variance of r per channel; out = (r -
// mean) / sqrt(var + eps) * gamma + beta.  Writes save_mean/save_invstd ([c]) for the backward
// pass and, when running_mean is not null, updates running_mean/running_var ([c]) with `momentum`
// and the unbiased variance, as torch.nn.BatchNorm2d does.
void relu_bn_forward(const NormShape& s, const void* y, void* out, const float* gamma,
                     const float* beta, float* running_mean, float* running_var, float momentum,
                     float eps, float* save_mean, float* save_invstd, float* workspace,
                     void* stream);

// Backward of relu_bn_forward: from y, dout and the saved statistics, dy (zero where y <= 0),
// dgamma and dbeta ([c], float).
void relu_bn_backward(const NormShape& s, const void* y, const void* dout, void* dy,
                      const float* gamma, const float* save_mean, const float* save_invstd,
                      float* dgamma, float* dbeta, float* workspace, void* stream);

// Inference: out = (max(y, 0) - running_mean) / sqrt(running_var + eps) * gamma + beta.
void relu_bn_inference(const NormShape& s, const void* y, void* out, const float* gamma,
                       const float* beta, const float* running_mean, const float* running_var,
                       float eps, float* workspace, void* stream);

}  // namespace faster::models::kernels

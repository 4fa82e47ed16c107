// BatchNorm (training statistics) fused with the activation beside it, as three CUDA kernels per
// direction instead of LibTorch's batch-norm and activation passes: the activation is applied where
// the values are read or written, so its input or output never goes to memory, and the backward
// pass reads the stored tensor once for the activation's derivative and the normalized value
// together.  Compute only (CUDA builds): the caller owns memory and streams;
// norm_activation_cuda.cpp wraps them as an autograd function.
#pragma once

#include <cstdint>

#include "faster/models/kernel_elements.h"

namespace faster::models::kernels {

// Which activation, on which side of the normalization.
enum class NormAct {
  kReluNorm,  // ThinNet: out = bn(max(y, 0))
  kNormGelu,  // SpeedNet: out = gelu(bn(y)), the exact (erf) GELU
};

// A [n, c, h, w] tensor, dense in NCHW (channels_last = false) or NHWC (true) order.
struct NormShape {
  int64_t n = 0, c = 0, hw = 0;
  bool channels_last = false;
  ElementType type = ElementType::kFloat;
  int64_t count() const { return n * hw; }  // values per channel
};

// Whether these kernels take `s` (element data at `data`; vector loads need 16-byte alignment).
bool norm_act_supported(const NormShape& s, const void* data);

// Float workspace each call needs (partial sums of every block, per-channel coefficients).
int64_t norm_act_workspace(const NormShape& s);

// Floats a training forward saves for its backward pass: [4][c] (mean, 1 / std, and the scale and
// shift the normalization applied).
inline int64_t norm_act_saved(const NormShape& s) {
  return 4 * s.c;
}

// Training forward of y (the normalization's input r is y, or max(y, 0) for kReluNorm): batch mean
// and biased variance of r per channel; z = (r - mean) / sqrt(var + eps) * gamma + beta; out = z
// (kReluNorm) or gelu(z) (kNormGelu).  Writes `saved` ([4][c]) for the backward pass and, when
// running_mean is not null, updates running_mean/running_var ([c]) with `momentum` and the unbiased
// variance, as torch.nn.BatchNorm2d does.
void norm_act_forward(NormAct act, const NormShape& s, const void* y, void* out, const float* gamma,
                      const float* beta, float* running_mean, float* running_var, float momentum,
                      float eps, float* saved, float* workspace, void* stream);

// Backward of norm_act_forward: from y, dout and the forward's `saved`, dy (zero where the ReLU of
// kReluNorm passed nothing), dgamma and dbeta ([c], float).
void norm_act_backward(NormAct act, const NormShape& s, const void* y, const void* dout, void* dy,
                       const float* gamma, const float* saved, float* dgamma, float* dbeta,
                       float* workspace, void* stream);

// Inference: as the forward, normalized with running_mean and running_var.
void norm_act_inference(NormAct act, const NormShape& s, const void* y, void* out,
                        const float* gamma, const float* beta, const float* running_mean,
                        const float* running_var, float eps, float* workspace, void* stream);

}  // namespace faster::models::kernels

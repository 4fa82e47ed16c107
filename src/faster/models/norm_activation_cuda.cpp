// The fused BatchNorm + activation as a LibTorch autograd function over norm_activation.cu's
// kernels, queued on the current CUDA stream (so CUDA-graph capture records them like any LibTorch
// op).
#include <ATen/core/grad_mode.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/autograd.h>

#include <cstdint>

#include "faster/models/cuda_tensor.h"
#include "faster/models/norm_activation.h"
#include "faster/models/norm_activation_kernels.h"

namespace faster::models {
namespace {
using kernels::element_type;
using kernels::ElementType;
using kernels::NormAct;
using kernels::NormShape;
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

NormShape shape_of(const torch::Tensor& y) {
  NormShape s;
  s.n = y.size(0);
  s.c = y.size(1);
  s.hw = y.size(2) * y.size(3);
  s.channels_last = y.suggest_memory_format() == torch::MemoryFormat::ChannelsLast;
  element_type(y.scalar_type(), s.type);
  return s;
}

torch::MemoryFormat format_of(const NormShape& s) {
  return s.channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
}

float* floats(const torch::Tensor& t) {
  return t.defined() ? t.data_ptr<float>() : nullptr;
}

torch::Tensor workspace(const NormShape& s, const torch::Tensor& like) {
  return torch::empty({kernels::norm_act_workspace(s)}, like.options().dtype(torch::kFloat));
}

class NormActFunction : public torch::autograd::Function<NormActFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor y, const torch::Tensor& weight,
                               const torch::Tensor& bias, const torch::Tensor& running_mean,
                               const torch::Tensor& running_var, double momentum, double eps,
                               int64_t act) {
    const c10::cuda::CUDAGuard on(y.device());  // the kernels read the SM count of the current one
    const auto s = shape_of(y);
    y = y.contiguous(format_of(s));
    auto out = torch::empty_like(y);
    auto saved = torch::empty({kernels::norm_act_saved(s)}, y.options().dtype(torch::kFloat));
    auto work = workspace(s, y);
    kernels::norm_act_forward(static_cast<NormAct>(act), s, y.data_ptr(), out.data_ptr(),
                              floats(weight), floats(bias), floats(running_mean),
                              floats(running_var), static_cast<float>(momentum),
                              static_cast<float>(eps), floats(saved), floats(work), stream_of(y));
    ctx->save_for_backward({y, weight, saved});
    ctx->saved_data["act"] = act;
    return out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& y = saved[0];
    const auto& weight = saved[1];
    const c10::cuda::CUDAGuard on(y.device());
    const auto s = shape_of(y);
    auto dout = grads[0].contiguous(format_of(s));
    if (!aligned16(dout)) dout = dout.clone();
    auto dy = torch::empty_like(y);
    const auto f = y.options().dtype(torch::kFloat);
    auto dgamma = torch::empty({s.c}, f), dbeta = torch::empty({s.c}, f);
    auto work = workspace(s, y);
    kernels::norm_act_backward(static_cast<NormAct>(ctx->saved_data["act"].toInt()), s,
                               y.data_ptr(), dout.data_ptr(), dy.data_ptr(), floats(weight),
                               floats(saved[2]), floats(dgamma), floats(dbeta), floats(work),
                               stream_of(y));
    return {dy,
            dgamma,
            dbeta,
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

bool is_float_on(const torch::Tensor& t, const torch::Device& device) {
  return t.defined() && t.scalar_type() == torch::kFloat && t.device() == device &&
         t.is_contiguous();
}

// The rules of fused_relu_batch_norm_applies (norm_activation.h), for either activation.
bool applies(const torch::Tensor& y, const torch::nn::BatchNorm2dImpl& bn) {
  ElementType type;
  if (!y.defined() || !y.is_cuda() || y.dim() != 4 || !element_type(y.scalar_type(), type))
    return false;
  // One value per channel: LibTorch's batch norm reports the error that training needs more.
  if (bn.is_training() && y.size(0) * y.size(2) * y.size(3) < 2) return false;
  const auto& o = bn.options;
  if (!o.affine() || !o.track_running_stats() || !o.momentum().has_value()) return false;
  const auto device = y.device();
  for (const auto* t : {&bn.weight, &bn.bias, &bn.running_mean, &bn.running_var})
    if (!is_float_on(*t, device) || t->numel() != y.size(1)) return false;
  if (!bn.is_training() && at::GradMode::is_enabled() &&
      (y.requires_grad() || bn.weight.requires_grad() || bn.bias.requires_grad()))
    return false;  // inference has no backward here
  const auto s = shape_of(y);
  return kernels::norm_act_supported(s, y.is_contiguous(format_of(s)) ? y.data_ptr() : nullptr);
}

torch::Tensor apply(NormAct act, const torch::Tensor& y, torch::nn::BatchNorm2dImpl& bn) {
  const double eps = bn.options.eps();
  if (bn.is_training()) {
    bn.num_batches_tracked.add_(1);
    return NormActFunction::apply(y, bn.weight, bn.bias, bn.running_mean, bn.running_var,
                                  *bn.options.momentum(), eps, static_cast<int64_t>(act));
  }
  const c10::cuda::CUDAGuard on(y.device());
  const auto s = shape_of(y);
  const auto x = y.contiguous(format_of(s));
  auto out = torch::empty_like(x);
  auto work = workspace(s, x);
  kernels::norm_act_inference(act, s, x.data_ptr(), out.data_ptr(), floats(bn.weight),
                              floats(bn.bias), floats(bn.running_mean), floats(bn.running_var),
                              static_cast<float>(eps), floats(work), stream_of(x));
  return out;
}

}  // namespace

bool fused_relu_batch_norm_applies(const torch::Tensor& y, const torch::nn::BatchNorm2dImpl& bn) {
  return applies(y, bn);
}

torch::Tensor fused_relu_batch_norm(const torch::Tensor& y, torch::nn::BatchNorm2dImpl& bn) {
  return apply(NormAct::kReluNorm, y, bn);
}

bool fused_batch_norm_gelu_applies(const torch::Tensor& x, const torch::nn::BatchNorm2dImpl& bn) {
  return applies(x, bn);
}

torch::Tensor fused_batch_norm_gelu(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn) {
  return apply(NormAct::kNormGelu, x, bn);
}

}  // namespace faster::models

// SyncBatchNorm: a custom autograd function.  Forward all-reduces [sum, count], then the sum of
// squared deviations, per channel; backward all-reduces [sum dy, sum dy*(x-mean)] so the input
// gradient is that of the combined batch.  Weight and bias gradients stay local sums (DDP averages
// them like any gradient).
#include "faster/models/sync_batchnorm.h"

#include <torch/torch.h>

namespace faster::models {
namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::Tensor per_channel(const torch::Tensor& t) {
  return t.view({1, -1, 1, 1});
}

// Statistics in float32 at least (fp16/bf16 inputs under autocast), else in the input's precision.
torch::Tensor widened(const torch::Tensor& t) {
  const auto s = t.scalar_type();
  return s == torch::kHalf || s == torch::kBFloat16 ? t.to(torch::kFloat) : t;
}

struct SyncBatchNormFunction : torch::autograd::Function<SyncBatchNormFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               torch::Tensor running_mean, torch::Tensor running_var, double eps,
                               double momentum, const AllReduceSum* all_reduce) {
    const auto x = widened(input);
    const int64_t c = x.size(1);
    // Two passes over the combined batch, as a single process would compute them: the mean first,
    // then the squared deviations from it (no E[x^2] - E[x]^2 cancellation).
    auto sums =
        torch::cat({x.sum({0, 2, 3}), torch::full({1}, double(x.numel() / c), x.options())});
    (*all_reduce)(sums);
    const auto count = sums[c];
    const auto mean = sums.narrow(0, 0, c) / count;
    auto squares = (x - per_channel(mean)).square().sum({0, 2, 3});
    (*all_reduce)(squares);
    const auto var = squares / count;
    const auto invstd = (var + eps).rsqrt();
    {
      torch::NoGradGuard no_grad;
      running_mean.mul_(1 - momentum).add_(mean, momentum);
      running_var.mul_(1 - momentum).add_(var * count / (count - 1), momentum);
    }
    ctx->save_for_backward({input, weight, mean, invstd, count});
    ctx->saved_data["all_reduce"] = reinterpret_cast<int64_t>(all_reduce);
    const auto xhat = (x - per_channel(mean)) * per_channel(invstd);
    return (xhat * per_channel(weight) + per_channel(bias)).to(input.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto x = widened(saved[0]), weight = saved[1], mean = saved[2], invstd = saved[3],
               count = saved[4];
    const auto* all_reduce =
        reinterpret_cast<const AllReduceSum*>(ctx->saved_data["all_reduce"].toInt());
    const auto dy = widened(grads[0]);
    const int64_t c = x.size(1);
    const auto xmu = x - per_channel(mean);
    const auto local = torch::cat({dy.sum({0, 2, 3}), (dy * xmu).sum({0, 2, 3})});
    auto global = local.clone();
    (*all_reduce)(global);
    const auto mean_dy = global.narrow(0, 0, c) / count;
    const auto mean_dy_xmu = global.narrow(0, c, c) / count;
    const auto dx = per_channel(weight * invstd) *
                    (dy - per_channel(mean_dy) - xmu * per_channel(invstd.square() * mean_dy_xmu));
    const auto grad_weight = local.narrow(0, c, c) * invstd;
    const auto grad_bias = local.narrow(0, 0, c);
    return {dx.to(grads[0].scalar_type()), grad_weight, grad_bias, {}, {}, {}, {}, {}};
  }
};

}  // namespace

SyncBatchNorm2dImpl::SyncBatchNorm2dImpl(int64_t features, AllReduceSum all_reduce, double eps,
                                         double momentum)
    : features_(features), all_reduce_(std::move(all_reduce)), eps_(eps), momentum_(momentum) {
  reset();
}

void SyncBatchNorm2dImpl::reset() {
  weight = register_parameter("weight", torch::ones({features_}));
  bias = register_parameter("bias", torch::zeros({features_}));
  running_mean = register_buffer("running_mean", torch::zeros({features_}));
  running_var = register_buffer("running_var", torch::ones({features_}));
  num_batches_tracked = register_buffer("num_batches_tracked", torch::zeros({}, torch::kLong));
}

torch::Tensor SyncBatchNorm2dImpl::forward(const torch::Tensor& x) {
  if (!is_training()) {
    return torch::batch_norm(x, weight, bias, running_mean, running_var, false, 0.0, eps_,
                             /*cudnn_enabled=*/true);
  }
  {
    torch::NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  return SyncBatchNormFunction::apply(x, weight, bias, running_mean, running_var, eps_, momentum_,
                                      &all_reduce_);
}

}  // namespace faster::models

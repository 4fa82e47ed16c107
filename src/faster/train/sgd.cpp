// Flat SGD implementation.
#include "faster/train/sgd.h"

#include <algorithm>
#include <numeric>

#include "faster/core/error.h"

namespace faster::train {
namespace {

// A tensor's elements in the order they sit in memory (a view when the tensor is dense).
torch::Tensor memory_order_flat(const torch::Tensor& t) {
  // Permute the dimensions by decreasing stride: a dense tensor then reads in memory order.
  std::vector<int64_t> dims(t.dim());
  std::iota(dims.begin(), dims.end(), 0);
  std::stable_sort(dims.begin(), dims.end(),
                   [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
  return t.permute(dims).reshape({-1});
}

torch::Tensor layout_like(const torch::Tensor& grad, const torch::Tensor& param) {
  // AccumulateGrad gives gradients their parameter's layout; copy only where one does not.
  if (grad.strides() == param.strides()) return grad;
  auto like = torch::empty_strided(param.sizes(), param.strides(), grad.options());
  like.copy_(grad);
  return like;
}

}  // namespace

torch::Tensor flat_grad_of(const torch::Tensor& param) {
  const auto& g = param.grad();
  return g.defined() ? memory_order_flat(layout_like(g, param)) : torch::Tensor();
}

FlatSgd::FlatSgd(std::vector<torch::Tensor> params, SgdOptions options)
    : params_(std::move(params)), options_(options) {
  FASTER_CHECK(!params_.empty(), "FlatSgd: no parameters");
  int64_t total = 0;
  for (const auto& p : params_) {
    FASTER_CHECK(p.scalar_type() == torch::kFloat && p.is_non_overlapping_and_dense(),
                 "FlatSgd: parameters must be dense float32 tensors");
    offsets_.push_back(total);
    total += p.numel();
  }
  flat_ = torch::empty({total}, params_[0].options());
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    // A view with the parameter's own strides over its slice of the flat buffer.
    auto view = flat_.as_strided(p.sizes(), p.strides(), offsets_[i]);
    view.copy_(p.detach());
    p.set_data(view);
  }
  momentum_ = torch::zeros_like(flat_);
  lr_ = torch::full({}, options_.lr, flat_.options());
  if (options_.weight_decay != 0 && !options_.decay_1d) {
    decay_ = torch::full_like(flat_, options_.weight_decay);
    for (size_t i = 0; i < params_.size(); ++i)
      if (params_[i].dim() <= 1) decay_.narrow(0, offsets_[i], params_[i].numel()).zero_();
  }
}

void FlatSgd::reorder_from(torch::Tensor flat, bool channels_last) const {
  torch::NoGradGuard no_grad;
  FASTER_CHECK(flat.numel() == flat_.numel(), "reorder_from: a buffer of another size");
  const auto saved = flat.clone();
  const auto format =
      channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    if (p.dim() != 4) continue;  // one order only
    const auto written = torch::empty(p.sizes(), torch::TensorOptions().memory_format(format));
    flat.as_strided(p.sizes(), p.strides(), offsets_[i])
        .copy_(saved.as_strided(p.sizes(), written.strides(), offsets_[i]));
  }
}

void FlatSgd::set_lr(double lr) {
  lr_.fill_(lr);
}

void FlatSgd::zero_grad() {
  for (auto& p : params_) p.mutable_grad() = torch::Tensor();
}

torch::Tensor FlatSgd::flat_grad() const {
  std::vector<torch::Tensor> parts;
  parts.reserve(params_.size());
  for (const auto& p : params_) {
    auto g = flat_grad_of(p);
    parts.push_back(g.defined() ? g : torch::zeros({p.numel()}, p.options()));
  }
  return torch::cat(parts);
}

void FlatSgd::step(const torch::Tensor& grad, const torch::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  const auto& o = options_;
  auto g = decay_.defined()      ? torch::addcmul(grad, decay_, flat_)
           : o.weight_decay != 0 ? grad + o.weight_decay * flat_
                                 : grad;
  if (!found_inf.defined()) {
    momentum_.mul_(o.momentum).add_(g);
    flat_.addcmul_(o.nesterov ? g + o.momentum * momentum_ : momentum_, lr_, -1);
    return;
  }
  const auto skip = found_inf.to(torch::kBool);
  auto buf = momentum_ * o.momentum + g;
  auto next = flat_ - lr_ * (o.nesterov ? g + o.momentum * buf : buf);
  momentum_.copy_(torch::where(skip, momentum_, buf));
  flat_.copy_(torch::where(skip, flat_, next));
}

}  // namespace faster::train

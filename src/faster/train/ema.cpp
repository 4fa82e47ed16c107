// WeightEma implementation.
#include "faster/train/ema.h"

#include <torch/torch.h>

#include <algorithm>

#include "faster/core/error.h"

namespace faster::train {

WeightEma::WeightEma(torch::Tensor flat_params, std::vector<torch::Tensor> buffers, double decay,
                     bool warmup)
    : flat_(std::move(flat_params)), buffers_(std::move(buffers)), decay_(decay), warmup_(warmup) {
  FASTER_CHECK(decay > 0 && decay < 1, "EMA decay must be in (0, 1)");
  torch::NoGradGuard no_grad;
  ema_flat_ = flat_.detach().clone();
  for (const auto& b : buffers_) ema_buffers_.push_back(b.detach().clone());
}

double WeightEma::decay_at(int64_t k) const {
  if (k <= 0) return 0;
  if (!warmup_) return decay_;
  return std::min(decay_, (1.0 + static_cast<double>(k)) / (10.0 + static_cast<double>(k)));
}

void WeightEma::update() {
  const double d = decay_at(updates_++);
  if (d == 0) return copy();
  torch::NoGradGuard no_grad;
  ema_flat_.lerp_(flat_, 1.0 - d);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    if (buffers_[i].is_floating_point())
      ema_buffers_[i].lerp_(buffers_[i], 1.0 - d);
    else
      ema_buffers_[i].copy_(buffers_[i]);
  }
}

void WeightEma::reset() {
  copy();
  updates_ = 1;
}

void WeightEma::copy() {
  torch::NoGradGuard no_grad;
  ema_flat_.copy_(flat_);
  for (size_t i = 0; i < buffers_.size(); ++i) ema_buffers_[i].copy_(buffers_[i]);
}

void WeightEma::swap() {
  torch::NoGradGuard no_grad;
  const auto exchange = [](torch::Tensor& a, torch::Tensor& b) {
    auto t = a.clone();
    a.copy_(b);
    b.copy_(t);
  };
  exchange(flat_, ema_flat_);
  for (size_t i = 0; i < buffers_.size(); ++i) exchange(buffers_[i], ema_buffers_[i]);
}

std::vector<torch::Tensor> WeightEma::state() const {
  std::vector<torch::Tensor> s{ema_flat_};
  s.insert(s.end(), ema_buffers_.begin(), ema_buffers_.end());
  return s;
}

}  // namespace faster::train

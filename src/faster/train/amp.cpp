// Autocast scope and grad scaler implementation.
#include "faster/train/amp.h"

#include <ATen/autocast_mode.h>

#include "faster/core/error.h"
#include "faster/core/torch_compat.h"

namespace faster::train {

c10::ScalarType precision_dtype(Precision p) {
  switch (p) {
    case Precision::kFloat16:
      return torch::kHalf;
    case Precision::kBFloat16:
      return torch::kBFloat16;
    default:
      return torch::kFloat;
  }
}

AutocastScope::AutocastScope(c10::DeviceType device, Precision precision, bool cache)
    : device_(device), active_(precision != Precision::kFloat32) {
  if (!active_) return;
  was_enabled_ = compat::autocast_enabled(device);
  was_dtype_ = compat::autocast_dtype(device);
  was_cache_enabled_ = at::autocast::is_autocast_cache_enabled();
  at::autocast::set_autocast_cache_enabled(cache);
  compat::set_autocast(device, true, precision_dtype(precision));
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // Leaving the outermost scope drops the cached low-precision copies of the weights.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast(device_, was_enabled_, was_dtype_);
  at::autocast::set_autocast_cache_enabled(was_cache_enabled_);
}

GradScaler::GradScaler(torch::Device device, GradScalerOptions options) : options_(options) {
  FASTER_CHECK(options.init_scale > 0 && options.growth_factor > 1 && options.backoff_factor < 1 &&
                   options.growth_interval > 0,
               "invalid grad scaler options");
  scale_ = torch::full({}, options.init_scale, torch::dtype(torch::kFloat).device(device));
  tracker_ = torch::zeros({}, torch::dtype(torch::kLong).device(device));
}

torch::Tensor GradScaler::unscale_(torch::Tensor& flat_grad) const {
  flat_grad.mul_(scale_.reciprocal());
  return torch::logical_not(torch::isfinite(flat_grad).all()).to(torch::kFloat);
}

void GradScaler::update(const torch::Tensor& found_inf) {
  // All arithmetic on 0-dim device tensors: the host never waits for the answer.
  const auto finite = 1 - found_inf;
  auto tracker = (tracker_ + 1) * finite.to(torch::kLong);
  const auto grow = (tracker >= options_.growth_interval).to(torch::kFloat);
  const auto factor =
      found_inf * options_.backoff_factor + finite * (grow * options_.growth_factor + (1 - grow));
  scale_.mul_(factor);
  tracker_.copy_(tracker * (1 - grow).to(torch::kLong));
}

}  // namespace faster::train

// Mixed precision: an autocast scope for the forward pass, and a dynamic loss scaler for fp16 whose
// inf/NaN check and scale update stay on the device (no host sync, so a step can be
// graph-captured).
#pragma once

#include <torch/types.h>

#include <string>
#include <vector>

#include "faster/core/enum_names.h"

namespace faster::train {

enum class Precision { kFloat32, kFloat16, kBFloat16 };

inline constexpr EnumName<Precision> kPrecisionNames[] = {
    {"fp32", Precision::kFloat32}, {"fp16", Precision::kFloat16}, {"bf16", Precision::kBFloat16}};

c10::ScalarType precision_dtype(Precision p);

// Enables autocast for `device` at `precision` for its lifetime (no-op for fp32), then restores the
// previous state.  The cast cache is off when `cache` is false (required inside CUDA graph
// capture).
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device, Precision precision, bool cache = true);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_;
  bool active_, was_enabled_ = false, was_cache_enabled_ = true;
  c10::ScalarType was_dtype_ = c10::ScalarType::Undefined;
};

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

// torch.cuda.amp.GradScaler semantics: multiply the loss by `scale`; after backward, unscale the
// gradients and look for inf/NaN; a step with a non-finite gradient is skipped and the scale is
// multiplied by backoff_factor; after growth_interval finite steps in a row it grows by
// growth_factor.
class GradScaler {
 public:
  GradScaler(torch::Device device, GradScalerOptions options = {});

  torch::Tensor scale(const torch::Tensor& loss) const { return loss * scale_; }
  // Multiplies grads by 1/scale in place; returns found_inf: 0-dim float, 1.0 if any grad is not
  // finite.
  torch::Tensor unscale_(torch::Tensor& flat_grad) const;
  // Updates the scale and the growth tracker from found_inf, on the device.
  void update(const torch::Tensor& found_inf);

  double current_scale() const { return scale_.item<double>(); }  // syncs; for reports and tests
  const GradScalerOptions& options() const { return options_; }
  // The scale and the growth tracker themselves (checkpoints copy into them).
  std::vector<torch::Tensor> state() const { return {scale_, tracker_}; }
  int64_t growth_tracker() const { return tracker_.item<int64_t>(); }

 private:
  GradScalerOptions options_;
  torch::Tensor scale_;    // 0-dim float32
  torch::Tensor tracker_;  // 0-dim int64: finite steps since the last change of scale
};

}  // namespace faster::train

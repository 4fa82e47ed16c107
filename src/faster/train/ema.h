// An exponential moving average of a model's weights (torchvision's --model-ema, timm's
// ModelEma): parameters and floating-point buffers (BatchNorm running statistics) averaged after
// every step; evaluation can run on the average by swapping it in.
//
// Its first update copies the model and the k-th after it averages with decay
// min(decay, (1 + k) / (10 + k)) (timm's warm-up): the initial weights and statistics leave no
// trace, and the first copy's share after n more updates is at most 10! (n + 1)! / (n + 10)!,
// under 1e-8 past 40, where a plain average started at the initial model kept decay^n of it
// (0.99^314 = 4 % of a running_var of 1.0, twenty times the true one, gave a model near chance).
// BatchNorm's statistics are averaged from the model's own, with the same decay: they then follow
// the same window of training as the averaged weights, which the last step's statistics would not
// (torchvision's use_buffers=True); integer buffers (num_batches_tracked) are copied.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace faster::train {

class WeightEma {
 public:
  // `flat_params`: the optimizer's flat parameter buffer; `buffers`: the model's buffers.
  // `warmup` false: the decay from the second update on, as torchvision's --model-ema.
  WeightEma(torch::Tensor flat_params, std::vector<torch::Tensor> buffers, double decay,
            bool warmup = true);

  // The average takes the model in (the first update copies it), on the device.
  void update();
  // The average restarts from the model, now (during the learning-rate warm-up, as torchvision
  // restarts its average): the next update is the warm-up's second.
  void reset();
  // Swaps the averaged weights into the model (and back on the second call).
  void swap();

  double decay() const { return decay_; }
  // The decay of update k (0-based): 0 (a copy) for the first, then the warm-up's, at most decay.
  double decay_at(int64_t k) const;
  // Updates since the last reset (a checkpoint records it; a resumed run goes on from it).
  int64_t updates() const { return updates_; }
  void set_updates(int64_t n) { updates_ = n; }
  // The averages themselves: flat parameters, then buffers (checkpoints copy into them).
  std::vector<torch::Tensor> state() const;

 private:
  void copy();

  torch::Tensor flat_, ema_flat_;
  std::vector<torch::Tensor> buffers_, ema_buffers_;
  double decay_;
  bool warmup_;
  int64_t updates_ = 0;
};

}  // namespace faster::train

// An exponential moving average of a model's weights (torchvision's --model-ema): parameters and
// floating-point buffers (BatchNorm running statistics) averaged as ema = decay * ema + (1 - decay)
// * model after every `every` steps; evaluation can run on the average by swapping it in.
#pragma once

#include <torch/types.h>

#include <vector>

namespace faster::train {

class WeightEma {
 public:
  // `flat_params`: the optimizer's flat parameter buffer; `buffers`: the model's buffers (the
  // floating-point ones are averaged, the others, like num_batches_tracked, copied).
  WeightEma(torch::Tensor flat_params, std::vector<torch::Tensor> buffers, double decay);

  // ema = decay * ema + (1 - decay) * model, on the device.
  void update();
  // ema = model (during the learning-rate warm-up, as torchvision does).
  void reset();
  // Swaps the averaged weights into the model (and back on the second call).
  void swap();

  double decay() const { return decay_; }
  // The averages themselves: flat parameters, then buffers (checkpoints copy into them).
  std::vector<torch::Tensor> state() const;

 private:
  torch::Tensor flat_, ema_flat_;
  std::vector<torch::Tensor> buffers_, ema_buffers_;
  double decay_;
};

}  // namespace faster::train

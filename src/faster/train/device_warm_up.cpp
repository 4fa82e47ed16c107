// Device warm-up: one tiny network step on throwaway tensors.
#include "faster/train/device_warm_up.h"

#include <torch/torch.h>

namespace faster::train {

void warm_up_device(torch::Device device, Precision precision, bool channels_last) {
  namespace F = torch::nn::functional;
  auto f = torch::TensorOptions().device(device);
  const auto format =
      channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
  auto x = torch::randn({8, 16, 8, 8}, f).contiguous(format);
  auto w = torch::randn({16, 16, 3, 3}, f).contiguous(format).requires_grad_();
  auto fc = torch::randn({10, 16}, f).requires_grad_();
  const auto y = torch::zeros({8}, f.dtype(torch::kLong));
  torch::Tensor loss;
  {
    AutocastScope autocast(device.type(), precision);
    auto h = torch::gelu(torch::max_pool2d(torch::conv2d(x, w, {}, 1, 1), 2));
    loss = F::cross_entropy(torch::linear(h.amax({2, 3}), fc), y,
                            F::CrossEntropyFuncOptions().label_smoothing(0.1));
  }
  loss.backward();
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace faster::train

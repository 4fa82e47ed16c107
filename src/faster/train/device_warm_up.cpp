// Device and model warm-ups: throwaway steps on made-up values, on threads of their own.
#include "faster/train/device_warm_up.h"

#include <c10/core/DeviceGuard.h>
#include <torch/torch.h>

#include <future>
#include <string>

#include "faster/models/registry.h"
#include "faster/train/sgd.h"
#include "faster/train/step_graph.h"
#include "faster/train/stepper.h"

namespace faster::train {

namespace {

// Values from no random generator (the run's streams stay as they are): the fractional parts of i
// times the golden ratio, spread evenly over [-2, 2) without a pattern the whitening's covariance
// would find degenerate.
torch::Tensor made_up(std::vector<int64_t> shape, const torch::TensorOptions& f) {
  int64_t n = 1;
  for (const auto s : shape) n *= s;
  return (torch::arange(n, f.dtype(torch::kDouble)) * 0.6180339887498949)
      .frac()
      .mul(4)
      .sub(2)
      .to(torch::kFloat)
      .view(shape);
}

}  // namespace

void warm_up_device(torch::Device device, Precision precision, bool channels_last) {
  namespace F = torch::nn::functional;
  c10::DeviceGuard on(device);  // the caller's thread may have another current device
  auto f = torch::TensorOptions().device(device);
  const auto format =
      channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
  // cuDNN's and cuBLAS's libraries load on their first call (about 0.22 and 0.11 s on an H200,
  // after the context's 0.35 s): the convolution on a thread of its own overlaps the two.  Its
  // cuDNN handle goes back to LibTorch's pool when the thread ends, for the training thread.
  auto conv = std::async(std::launch::async, [&] {
    c10::DeviceGuard on_this_thread(device);
    auto x = made_up({8, 16, 8, 8}, f).contiguous(format);
    auto w = made_up({16, 16, 3, 3}, f).contiguous(format).requires_grad_();
    torch::Tensor out;
    {
      AutocastScope autocast(device.type(), precision);
      out = torch::gelu(torch::max_pool2d(torch::conv2d(x, w, {}, 1, 1), 2));
    }
    out.sum().backward();
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  });
  auto h = made_up({8, 16}, f);
  auto fc = made_up({10, 16}, f).requires_grad_();
  const auto y = torch::zeros({8}, f.dtype(torch::kLong));
  torch::Tensor loss;
  {
    AutocastScope autocast(device.type(), precision);
    loss = F::cross_entropy(torch::linear(h, fc), y,
                            F::CrossEntropyFuncOptions().label_smoothing(0.1));
  }
  loss.backward();
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
  conv.get();
}

std::future<std::string> warm_up_model(models::Model model, std::vector<int64_t> input_shape,
                                       const TrainOptions& o, torch::Device device) {
  return std::async(std::launch::async, [=]() mutable -> std::string {
    // The copy ends with the thread (the closure lives as long as the future).
    models::Model copy = std::move(model);
    try {
      c10::DeviceGuard on(device);
      // A stream of its own: the trainer's thread, on the default stream, does not wait for it.
      SideStreamScope stream(device);
      const auto f = torch::TensorOptions().device(device);
      const auto format =
          o.channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
      if (o.whiten) {
        auto sample = input_shape;
        sample[0] = std::min<int64_t>(sample[0], 64);
        const auto set = models::init_from_data(copy, made_up(sample, f));
        if (o.freeze_whitening)
          for (auto p : set) p.requires_grad_(false);
      }
      // The optimizer as the run's (its storage re-pointed, so made before the step): Muon's
      // Newton-Schulz products are the first step's to load too.
      FlatSgd sgd(trainable(copy->parameters()), o.sgd);
      const auto x = made_up(input_shape, f).contiguous(format);
      copy->train();
      torch::Tensor logits;
      {
        AutocastScope autocast(device.type(), o.precision);
        logits = copy.forward(x);
      }
      logits.to(torch::kFloat).logsumexp(1).sum().backward();
      sgd.step(sgd.flat_grad());
      {
        torch::NoGradGuard no_grad;
        copy->eval();
        AutocastScope autocast(device.type(), o.precision);
        copy.forward(x.flip(3));  // the flip-TTA's second pass (the training's forward: the first)
      }
      if (device.is_cuda()) torch::cuda::synchronize(device.index());
      return {};
    } catch (const std::exception& e) {
      return e.what();
    }
  });
}

}  // namespace faster::train

// DataParallel on CUDA: LibTorch's replicate (with gradient edges back to the original parameters),
// autograd Scatter/Gather, and our own parallel apply so each replica thread gets the caller's
// autocast setting and its device (LibTorch's parallel_apply does not carry autocast over).
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/autograd/functions/comm.h>
#include <torch/nn/parallel/data_parallel.h>
#include <torch/torch.h>

#include "faster/core/parallel.h"
#include "faster/train/parallel/data_parallel.h"

namespace faster::train {

bool data_parallel_available() {
  return true;
}

torch::Tensor data_parallel_forward(const models::Model& model, const torch::Tensor& input,
                                    const std::vector<torch::Device>& devices,
                                    Precision precision) {
  if (devices.size() == 1) return model.forward(input);
  torch::autograd::Scatter scatter(devices, /*chunk_sizes=*/c10::nullopt, /*dim=*/0);
  const auto inputs = scatter.apply({input});
  auto replicas = torch::nn::parallel::replicate(model.ptr(), devices);
  const size_t n = std::min(inputs.size(), replicas.size());
  std::vector<torch::autograd::Variable> outputs(n);
  const bool grad_mode = torch::GradMode::is_enabled();
  // A thread per replica (the caller's among them), so the devices' launches overlap; qualified,
  // since ATen has a parallel_for of its own.
  faster::parallel_for(static_cast<int>(n), static_cast<int64_t>(n), [&](int, int64_t index) {
    const auto i = static_cast<size_t>(index);
    torch::AutoGradMode grad(grad_mode);
    c10::cuda::CUDAGuard guard(devices[i]);
    AutocastScope autocast(c10::DeviceType::CUDA, precision, /*cache=*/true);
    outputs[i] = models::classifier_of(*replicas[i]).forward(inputs[i]);
  });
  return torch::autograd::Gather(devices[0], /*dim=*/0).apply(std::move(outputs)).front();
}

}  // namespace faster::train

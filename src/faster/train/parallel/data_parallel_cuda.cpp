// DataParallel on CUDA: LibTorch's replicate (with gradient edges back to the original parameters),
// autograd Scatter/Gather, and our own parallel apply so each replica thread gets the caller's
// autocast setting and its device (LibTorch's parallel_apply does not carry autocast over).
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/autograd/functions/comm.h>
#include <torch/nn/parallel/data_parallel.h>
#include <torch/torch.h>

#include <exception>
#include <thread>

#include "faster/train/parallel/data_parallel.h"

namespace faster::train {

bool data_parallel_available() { return true; }

torch::Tensor data_parallel_forward(const models::Model& model, const torch::Tensor& input,
                                    const std::vector<torch::Device>& devices, Precision precision) {
  if (devices.size() == 1) return model.forward(input);
  torch::autograd::Scatter scatter(devices, /*chunk_sizes=*/c10::nullopt, /*dim=*/0);
  const auto inputs = scatter.apply({input});
  auto replicas = torch::nn::parallel::replicate(model.ptr(), devices);
  const size_t n = std::min(inputs.size(), replicas.size());
  std::vector<torch::autograd::Variable> outputs(n);
  std::vector<std::exception_ptr> errors(n);
  const bool grad_mode = torch::GradMode::is_enabled();
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      try {
        torch::AutoGradMode grad(grad_mode);
        c10::cuda::CUDAGuard guard(devices[i]);
        AutocastScope autocast(c10::DeviceType::CUDA, precision, /*cache=*/true);
        outputs[i] = models::classifier_of(*replicas[i]).forward(inputs[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return torch::autograd::Gather(devices[0], /*dim=*/0).apply(std::move(outputs)).front();
}

}  // namespace faster::train

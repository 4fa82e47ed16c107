// SyncBatchNorm for DDP: batch statistics (and, in backward, the gradient sums) are summed over all
// ranks, so every rank normalizes with the statistics of the combined batch, as
// torch.nn.SyncBatchNorm.  Parameter and buffer names are BatchNorm2d's, so checkpoints are the
// same.
#pragma once

#include <torch/nn/cloneable.h>
#include <torch/types.h>

#include <functional>

namespace faster::models {

// Sums a tensor in place over all ranks (blocking for the caller's stream order).
using AllReduceSum = std::function<void(torch::Tensor&)>;

class SyncBatchNorm2dImpl : public torch::nn::Cloneable<SyncBatchNorm2dImpl> {
 public:
  SyncBatchNorm2dImpl(int64_t features, AllReduceSum all_reduce, double eps = 1e-5,
                      double momentum = 0.1);
  void reset() override;
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  int64_t features_;
  AllReduceSum all_reduce_;
  double eps_, momentum_;
};
TORCH_MODULE(SyncBatchNorm2d);

}  // namespace faster::models

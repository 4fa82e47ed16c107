// ThinNet, the seed's model: stages of 3x3 convolutions (no padding, no bias), each followed by
// ReLU then BatchNorm; AdaptiveAvgPool to 2x2; Linear to the classes.  Parameter names match the
// Python reference (features.<i>.0.weight, features.<i>.2.running_mean, ..., fc.weight), so a saved
// state_dict loads in PyTorch.
#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include <string>
#include <vector>

#include "faster/models/model.h"
#include "faster/models/sync_batchnorm.h"

namespace faster::models {

struct ThinNetOptions {
  int in_channels = 1;
  int classes = 10;
  std::vector<int> filters{32, 64, 128};
  // Duplicate convs per stage after the stage's entry conv; 3,3,2 = the seed table's 11 conv
  // layers.
  std::vector<int> blocks{3, 3, 2};
  // Normalization after each conv+ReLU (kSync: over the ranks of a DDP job, through
  // sync_all_reduce).
  Norm norm = Norm::kBatch;
  AllReduceSum sync_all_reduce;
  // ReLU + BatchNorm as faster's fused CUDA kernels where they apply (norm_activation.h); false:
  // LibTorch's ReLU and BatchNorm2d everywhere.
  bool fused = true;

  int conv_layers() const;
  // Smallest input side that still leaves a 1x1 map after the unpadded convs.
  int min_input_size() const { return 2 * conv_layers() + 1; }
};

// Cloneable, so DataParallel can replicate it onto several GPUs.
class ThinNetImpl : public torch::nn::Cloneable<ThinNetImpl>, public Classifier {
 public:
  explicit ThinNetImpl(const ThinNetOptions& options);
  void reset() override;
  torch::Tensor forward(torch::Tensor x) override;

  const ThinNetOptions& options() const { return options_; }

 private:
  ThinNetOptions options_;
  torch::nn::Sequential features_{nullptr};
  torch::nn::AdaptiveAvgPool2d avg_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ThinNet);

// Parses "3,3,2" into {3,3,2}; throws faster::UsageError on anything else.
std::vector<int> parse_int_list(const std::string& text, const std::string& what);

// --blocks and --filters as given: as many of each, blocks 0..64, filters 1..4096 (UsageError).
void validate_thinnet_shape(const std::vector<int>& blocks, const std::vector<int>& filters);

}  // namespace faster::models

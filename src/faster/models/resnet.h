// torchvision's ResNets (resnet18/34/50/101/152), ResNeXts (resnext50_32x4d, resnext101_32x8d,
// resnext101_64x4d) and wide ResNets (wide_resnet50_2, wide_resnet101_2) as torchvision builds them
// (torchvision/models/resnet.py, "v1.5": a Bottleneck strides on its 3x3 conv).  Module names,
// state names and shapes, initialisation and forward are torchvision's, so a state_dict saved here
// loads into torchvision.models.resnetNN(num_classes=K) with strict=True, and one saved there loads
// here.
#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include <array>
#include <string>
#include <vector>

#include "faster/models/model.h"
#include "faster/models/sync_batchnorm.h"

namespace faster::models {

struct ResNetOptions {
  std::string arch = "resnet50";  // one of resnet_names()
  int classes = 1000;
  int in_channels = 3;
  // Zero the last BatchNorm weight of every residual block, so each block starts as the identity.
  bool zero_init_residual = false;
  // Every normalization layer: BatchNorm2d or SyncBatchNorm over the ranks of a DDP job (through
  // sync_all_reduce); Norm::kNone is refused.  The state names are the same either way.
  Norm norm = Norm::kBatch;
  AllReduceSum sync_all_reduce;
  // BatchNorm -> (+ residual) -> ReLU as cuDNN's fused kernels where they apply (fp16, or bf16
  // where cuDNN runs it, channels-last training on CUDA, models/batchnorm_relu.h); false:
  // LibTorch's ops one by one everywhere.  Off by default until it has passed its GPU tests and
  // been measured (see BENCHMARKS.md).
  bool fused = false;
};

// Whether the ResNet step's speed-up `lever` is on: those named in the environment's
// FASTER_RESNET_LEVERS (a comma-separated list; empty: none), else the defaults,
// "input,stem,pool,bf16,shortcut".
//   input  a GPU step's uint8 batches normalized straight into autocast's type
//          (takes_autocast_input, registry.h)
//   stem   the stem convolution fed 4 channels (ResNetImpl::stem)
//   pool   the stem's max-pool through faster's kernels (models/max_pool.h)
//   bf16   cuDNN's fused BatchNorm + add + ReLU in bf16 as in fp16 (models/batchnorm_relu.h)
//   shortcut  an identity block's shortcut gradient added inside its first convolution's
//          data-gradient pass (conv_and_shortcut, models/batchnorm_relu.h: cuDNN's beta = 1),
//          not by autograd after; shortcut_add: the same sum in the pass's epilogue
// pool is on: bit for bit LibTorch's (GPU tests, H100), and it took the fp16 step from 14.65 to
// 12.77 ms (ResNet-18) and 44.9 to 42.9 ms (ResNet-50) on an H100 (2026-12-07, BENCHMARKS.md).
// shortcut is on: through cuDNN's graph API it took ResNet-50's fp16 step from 42.8 to 41.9 ms
// on an H100 (6,051 to 6,189 img/s; 12 of the 17 additions gone, the data gradients 1.1 ms
// slower), its GPU tests passing (2026-12-07, BENCHMARKS.md); shortcut_add timed the same (6,186)
// and stays off.  Through the legacy API the same sum had been 4x slower.
// bf16 is on: its tests pass there, and it took the bf16 step's GPU time from 53.7 to 39.9 ms
// (ResNet-50) on an H200 (BENCHMARKS.md).
// Naming a list is also how each lever's gain is measured.
// Read at every call (a few per forward pass; none inside a replayed CUDA graph).
bool resnet_lever(const std::string& lever);

// Cloneable, as is every block inside it, so DataParallel can replicate it onto several GPUs.
class ResNetImpl : public torch::nn::Cloneable<ResNetImpl>, public Classifier {
 public:
  explicit ResNetImpl(const ResNetOptions& options);
  void reset() override;
  torch::Tensor forward(torch::Tensor x) override;

  const ResNetOptions& options() const { return options_; }
  // The stem's 7x7 convolution alone (conv1, padded to 4 channels where the "stem" lever applies).
  torch::Tensor stem(const torch::Tensor& x);

 private:
  ResNetOptions options_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::AnyModule bn1_;  // BatchNorm2d or SyncBatchNorm2d
  torch::nn::MaxPool2d maxpool_{nullptr};
  std::array<torch::nn::Sequential, 4> layers_{nullptr, nullptr, nullptr, nullptr};  // layer1..4
  torch::nn::AdaptiveAvgPool2d avgpool_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet);

// The architectures faster builds, by torchvision's names: "resnet18", ..., "wide_resnet101_2".
std::vector<std::string> resnet_names();
// The name of the architecture with these blocks per layer and 3x3 groups and width per group
// (what a state_dict's shapes tell); empty where none has them.
std::string resnet_name_of(bool bottleneck, const std::array<int, 4>& blocks, int groups,
                           int width_per_group);

}  // namespace faster::models

// SpeedNet, the network of `faster train --recipe speedrun`: an airbench-like net for small images
// (Fashion-MNIST, MNIST, CIFAR-10).  A 3x3 stem of 2 x 9 x C channels, or 2 x stem_dims (it may
// start as the patch whitening of the training data: positive and negative whitened directions,
// and stay so), then per stage a 3x3 conv, 2x2 max-pool, BatchNorm, GELU and `blocks` more
// conv-BN-GELU at the pooled size; global max-pool and a linear classifier without bias.  Pooling
// before BatchNorm keeps the memory-bound work on a quarter of the conv output.
//
// Work per 28x28x1 image, filters 64/128/256, blocks 1/1/1 (multiply-adds, forward):
//   stem 1->18 @28: 0.13 M; stage 1 18->64 @28 8.13 M, 64->64 @14 7.23 M; stage 2 64->128 @14
//   14.45 M, 128->128 @7 7.23 M; stage 3 128->256 @7 14.45 M, 256->256 @3 5.31 M; fc 2.6 k:
//   56.9 M MAC = 114 MFLOP forward, about 341 MFLOP per trained image (forward and two backward
//   products).  speednet_macs() counts it for any widths and size.
//
// State names: stem.weight, stem.bias, stages.<i>.conv<j>.weight, stages.<i>.bn<j>.{weight, bias,
// running_mean, running_var, num_batches_tracked}, fc.weight.
#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <vector>

#include "faster/models/model.h"

namespace faster::models {

struct SpeedNetOptions {
  int in_channels = 1;
  int classes = 10;
  std::vector<int> filters{64, 128, 256};  // per stage
  std::vector<int> blocks{1, 1, 1};        // conv-BN-GELU per stage after its pooled entry conv
  // Directions of the 3x3 patches the stem keeps, each as two channels (+ and -); 0 = all 9 x C.
  // Whitened, they are the patches' principal directions of largest variance: 8 of Fashion-MNIST's
  // 9 makes the stem 16 channels, which cuDNN's kernels take without padding (18 it pads).
  int stem_dims = 0;
  // BatchNorm -> GELU as faster's fused CUDA kernels where they apply (norm_activation.h); false:
  // LibTorch's modules always.
  bool fused = true;

  int patch_dims() const { return 9 * in_channels; }
  int stem_channels() const { return 2 * (stem_dims > 0 ? stem_dims : patch_dims()); }
  // Each stage halves the side (floor): the smallest side that leaves 1x1 after the last.
  int min_input_size() const { return 1 << filters.size(); }
};

// Multiply-adds of one forward pass of a height x width image.
int64_t speednet_macs(const SpeedNetOptions& o, int height, int width);

class SpeedNetImpl : public torch::nn::Cloneable<SpeedNetImpl>, public Classifier {
 public:
  explicit SpeedNetImpl(const SpeedNetOptions& options);
  void reset() override;
  torch::Tensor forward(torch::Tensor x) override;

  // Sets the stem to whiten the 3x3 patches of `images` ([n, C, H, W] float, as the network sees
  // them): row r of the weight is the covariance's eigenvector v_r / sqrt(lambda_r + eps) for the
  // stem's dims largest eigenvalues lambda_r, then their negations; the bias centres the patches.
  // The stem's outputs over these patches then have covariance [[I, -I], [-I, I]] (up to eps).
  void init_whitening(const torch::Tensor& images, double eps = 5e-4);

  const SpeedNetOptions& options() const { return options_; }
  const torch::nn::Conv2d& stem() const { return stem_; }

 private:
  SpeedNetOptions options_;
  torch::nn::Conv2d stem_{nullptr};
  torch::nn::Sequential stages_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(SpeedNet);

}  // namespace faster::models

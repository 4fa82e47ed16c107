// SpeedNet implementation.
#include "faster/models/speednet.h"

#include <torch/torch.h>

#include <string>

#include "faster/core/error.h"
#include "faster/models/max_pool.h"
#include "faster/models/norm_activation.h"

namespace faster::models {
namespace nn = torch::nn;

namespace {

nn::Conv2d conv3x3(int in, int out, bool bias) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 3).padding(1).bias(bias));
}

// conv0 -> max-pool 2 -> bn0 -> GELU, then (conv<j> -> bn<j> -> GELU) for j = 1..blocks.
class StageImpl : public nn::Cloneable<StageImpl> {
 public:
  StageImpl(int in, int out, int blocks, bool fused)
      : in_(in), out_(out), blocks_(blocks), fused_(fused) {
    reset();
  }
  void reset() override {
    convs_.clear(), bns_.clear();
    for (int j = 0; j <= blocks_; ++j) {
      const auto n = std::to_string(j);
      convs_.push_back(register_module("conv" + n, conv3x3(j == 0 ? in_ : out_, out_, false)));
      bns_.push_back(register_module("bn" + n, nn::BatchNorm2d(out_)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    for (size_t j = 0; j < convs_.size(); ++j) {
      x = convs_[j]->forward(x);
      if (j == 0) x = max_pool(x, 2, 2);
      auto& bn = *bns_[j];
      x = fused_ && fused_batch_norm_gelu_applies(x, bn) ? fused_batch_norm_gelu(x, bn)
                                                         : torch::gelu(bn.forward(x));
    }
    return x;
  }

 private:
  int in_, out_, blocks_;
  bool fused_;
  std::vector<nn::Conv2d> convs_;
  std::vector<nn::BatchNorm2d> bns_;
};
TORCH_MODULE(Stage);

}  // namespace

int64_t speednet_macs(const SpeedNetOptions& o, int height, int width) {
  const auto conv = [](int64_t h, int64_t w, int64_t in, int64_t out) {
    return h * w * in * out * 9;
  };
  int64_t h = height, w = width;
  int64_t c = o.stem_channels();
  int64_t macs = conv(h, w, o.in_channels, c);
  for (size_t s = 0; s < o.filters.size(); ++s) {
    macs += conv(h, w, c, o.filters[s]);
    c = o.filters[s], h /= 2, w /= 2;
    macs += o.blocks[s] * conv(h, w, c, c);
  }
  return macs + c * o.classes;
}

SpeedNetImpl::SpeedNetImpl(const SpeedNetOptions& options) : options_(options) {
  if (options.filters.size() != options.blocks.size() || options.filters.empty())
    FASTER_THROW("SpeedNet: ", options.filters.size(), " stages of filters but ",
                 options.blocks.size(), " block counts");
  if (options.in_channels < 1 || options.classes < 2)
    FASTER_THROW("SpeedNet: needs at least 1 input channel and 2 classes");
  if (options.stem_dims < 0 || options.stem_dims > options.patch_dims())
    FASTER_THROW("SpeedNet: --stem-dims must be 1..", options.patch_dims(),
                 " (the values of a 3x3 patch), or 0 for all; got ", options.stem_dims);
  for (size_t s = 0; s < options.filters.size(); ++s)
    if (options.filters[s] < 1 || options.blocks[s] < 0) FASTER_THROW("SpeedNet: bad stage ", s);
  reset();
}

void SpeedNetImpl::reset() {
  const auto& o = options_;
  stem_ = register_module("stem", conv3x3(o.in_channels, o.stem_channels(), true));
  stages_ = nn::Sequential();
  int c = o.stem_channels();
  for (size_t s = 0; s < o.filters.size(); ++s) {
    stages_->push_back(Stage(c, o.filters[s], o.blocks[s], o.fused));
    c = o.filters[s];
  }
  stages_ = register_module("stages", stages_);
  fc_ = register_module("fc", nn::Linear(nn::LinearOptions(c, o.classes).bias(false)));
}

torch::Tensor SpeedNetImpl::forward(torch::Tensor x) {
  x = stages_->forward(torch::gelu(stem_->forward(x)));
  // Global max-pool: amax over the map (any side, 1x1 included).
  return fc_->forward(x.amax({2, 3}));
}

void SpeedNetImpl::init_whitening(const torch::Tensor& images, double eps) {
  torch::NoGradGuard no_grad;
  FASTER_CHECK(images.dim() == 4 && images.size(1) == options_.in_channels,
               "init_whitening: images [n, ", options_.in_channels, ", H, W]");
  const int64_t k = options_.patch_dims();
  const int64_t dims = options_.stem_channels() / 2;
  // [n, k, H*W] -> one row per patch, in double: the eigenvalues span several decades.
  const auto patches = nn::functional::unfold(images.to(torch::kFloat),
                                              nn::functional::UnfoldFuncOptions({3, 3}).padding(1))
                           .transpose(1, 2)
                           .reshape({-1, k})
                           .to(torch::kDouble);
  const auto mean = patches.mean(0);
  const auto centered = patches - mean;
  const auto cov = centered.t().mm(centered) / std::max<int64_t>(1, patches.size(0) - 1);
  // A k x k eigenproblem on the host: on a GPU it would load cuSOLVER, a second of start-up.
  auto [values, vectors] = torch::linalg_eigh(cov.cpu(), "L");
  // Ascending eigenvalues: the largest `dims` are the last columns.
  values = values.narrow(0, k - dims, dims).to(cov.device());
  vectors = vectors.narrow(1, k - dims, dims).to(cov.device());
  const auto w = vectors.t() / (values + eps).sqrt().unsqueeze(1);  // row r: v_r / sqrt(l_r)
  const auto both = torch::cat({w, -w});                            // [2 dims, k]
  const auto bias = -both.mv(mean);
  auto& weight = stem_->weight;
  weight.copy_(both.view(weight.sizes()).to(weight.dtype()));
  stem_->bias.copy_(bias.to(stem_->bias.dtype()));
}

}  // namespace faster::models

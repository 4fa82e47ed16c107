// ThinNet implementation.
#include "faster/models/thinnet.h"

#include <numeric>
#include <sstream>

#include "faster/core/error.h"
#include "faster/models/norm_activation.h"

namespace faster::models {
namespace nn = torch::nn;

int ThinNetOptions::conv_layers() const {
  return static_cast<int>(filters.size()) + std::accumulate(blocks.begin(), blocks.end(), 0);
}

namespace {
// conv -> ReLU -> norm, registered as "0", "1", "2" like the reference's nn.Sequential.
class ConvBlockImpl : public torch::nn::Cloneable<ConvBlockImpl> {
 public:
  ConvBlockImpl(int in, int out, const ThinNetOptions& o) : in_(in), out_(out), options_(o) {
    reset();
  }
  void reset() override {
    conv_ = register_module("0", nn::Conv2d(nn::Conv2dOptions(in_, out_, 3).bias(false)));
    relu_ = register_module("1", nn::ReLU(nn::ReLUOptions().inplace(true)));
    if (options_.norm == Norm::kBatch) bn_ = register_module("2", nn::BatchNorm2d(out_));
    if (options_.norm == Norm::kSync)
      sync_bn_ = register_module("2", SyncBatchNorm2d(out_, options_.sync_all_reduce));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = conv_->forward(x);
    if (bn_ && options_.fused && fused_relu_batch_norm_applies(x, *bn_))
      return fused_relu_batch_norm(x, *bn_);
    x = relu_->forward(x);
    if (bn_) return bn_->forward(x);
    if (sync_bn_) return sync_bn_->forward(x);
    return x;
  }

 private:
  int in_, out_;
  ThinNetOptions options_;
  nn::Conv2d conv_{nullptr};
  nn::ReLU relu_{nullptr};
  nn::BatchNorm2d bn_{nullptr};
  SyncBatchNorm2d sync_bn_{nullptr};
};
TORCH_MODULE(ConvBlock);
}  // namespace

ThinNetImpl::ThinNetImpl(const ThinNetOptions& options) : options_(options) {
  if (options.filters.size() != options.blocks.size())
    FASTER_THROW("ThinNet: ", options.filters.size(), " stages of filters but ",
                 options.blocks.size(), " block counts");
  if (options.in_channels < 1 || options.classes < 2)
    FASTER_THROW("ThinNet: needs at least 1 input channel and 2 classes");
  if (options.norm == Norm::kSync && !options.sync_all_reduce)
    FASTER_THROW("ThinNet: SyncBatchNorm needs a distributed job");
  reset();
}

void ThinNetImpl::reset() {
  const auto& o = options_;
  features_ = nn::Sequential();
  int c = o.in_channels;
  for (size_t s = 0; s < o.filters.size(); ++s) {
    const int f = o.filters[s];
    if (f < 1 || o.blocks[s] < 0) FASTER_THROW("ThinNet: bad stage ", s);
    features_->push_back(ConvBlock(c, f, o));
    c = f;
    for (int b = 0; b < o.blocks[s]; ++b) features_->push_back(ConvBlock(f, f, o));
  }
  features_ = register_module("features", features_);
  avg_ = register_module("avg", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({2, 2})));
  fc_ = register_module("fc", nn::Linear(c * 4, o.classes));
}

torch::Tensor ThinNetImpl::forward(torch::Tensor x) {
  return fc_->forward(torch::flatten(avg_->forward(features_->forward(x)), 1));
}

std::vector<int> parse_int_list(const std::string& text, const std::string& what) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int v = -1;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 0)
      FASTER_USAGE_ERROR(what, ": '", text,
                         "' is not a comma-separated list of non-negative integers");
    out.push_back(v);
  }
  if (out.empty()) FASTER_USAGE_ERROR(what, ": empty list");
  return out;
}

void validate_thinnet_shape(const std::vector<int>& blocks, const std::vector<int>& filters) {
  if (blocks.size() != filters.size())
    FASTER_USAGE_ERROR("--blocks has ", blocks.size(), " stages but --filters ", filters.size());
  for (int b : blocks) check_range("--blocks", b, 0, 64);
  for (int f : filters) check_range("--filters", f, 1, 4096);
}

}  // namespace faster::models

// ResNet implementation, following torchvision's resnet.py: the same modules registered in the same
// order, so named_parameters() and named_buffers() list torchvision's state_dict names.
#include "faster/models/resnet.h"

#include <torch/nn/functional/conv.h>
#include <torch/nn/functional/padding.h>
#include <torch/nn/init.h>

#include <cstdlib>
#include <string>

#include "faster/core/error.h"
#include "faster/models/batchnorm_relu.h"
#include "faster/models/max_pool.h"

namespace faster::models {
namespace nn = torch::nn;

namespace {

// torchvision's table: the block type, the block counts of layer1..layer4, and a Bottleneck's
// 3x3 convolution's groups and width per group (ResNeXt's cardinality and width, a wide ResNet's
// doubled width; 1 and 64 for plain ResNets).
struct Architecture {
  const char* name;
  bool bottleneck;
  std::array<int, 4> blocks;
  int groups = 1, width_per_group = 64;
};
constexpr Architecture kArchitectures[] = {
    {"resnet18", false, {2, 2, 2, 2}},
    {"resnet34", false, {3, 4, 6, 3}},
    {"resnet50", true, {3, 4, 6, 3}},
    {"resnet101", true, {3, 4, 23, 3}},
    {"resnet152", true, {3, 8, 36, 3}},
    {"resnext50_32x4d", true, {3, 4, 6, 3}, 32, 4},
    {"resnext101_32x8d", true, {3, 4, 23, 3}, 32, 8},
    {"resnext101_64x4d", true, {3, 4, 23, 3}, 64, 4},
    {"wide_resnet50_2", true, {3, 4, 6, 3}, 1, 128},
    {"wide_resnet101_2", true, {3, 4, 23, 3}, 1, 128},
};

const Architecture& architecture(const std::string& name) {
  std::string names;
  for (const auto& a : kArchitectures) {
    if (name == a.name) return a;
    names += (names.empty() ? "" : ", ") + std::string(a.name);
  }
  FASTER_THROW("unknown ResNet '", name, "' (", names, ")");
}

// A bias-free convolution padded to keep the size at stride 1 (torchvision's conv1, conv3x3 and
// conv1x1), initialised as torchvision does: kaiming_normal_(mode='fan_out', nonlinearity='relu').
nn::Conv2d conv(int in, int out, int kernel, int stride, int groups = 1) {
  nn::Conv2d c(nn::Conv2dOptions(in, out, kernel)
                   .stride(stride)
                   .padding(kernel / 2)
                   .groups(groups)
                   .bias(false));
  nn::init::kaiming_normal_(c->weight, 0, torch::kFanOut, torch::kReLU);
  return c;
}

// torchvision's norm_layer: BatchNorm2d, or SyncBatchNorm2d in a DDP job (weight 1, bias 0).
nn::AnyModule norm_layer(int channels, const ResNetOptions& o) {
  if (o.norm == Norm::kSync) return nn::AnyModule(SyncBatchNorm2d(channels, o.sync_all_reduce));
  return nn::AnyModule(nn::BatchNorm2d(channels));
}

// The shortcut of a block that changes shape: a strided 1x1 conv and a norm, named downsample.0
// and downsample.1 like torchvision's nn.Sequential.  Empty where the shortcut is the identity.
nn::Sequential downsample(int in, int out, int stride, const ResNetOptions& o) {
  if (stride == 1 && in == out) return nullptr;
  return nn::Sequential(conv(in, out, 1, stride), norm_layer(out, o));
}

// The norm as cuDNN's fused batch norm takes it, for x and residual; null where that does not
// apply.
nn::BatchNorm2dImpl* fused_norm(nn::AnyModule& norm, const torch::Tensor& x,
                                const torch::Tensor& residual, const ResNetOptions& o) {
  if (!o.fused) return nullptr;
  auto* bn = norm.ptr()->as<nn::BatchNorm2dImpl>();
  return bn && (x.scalar_type() != torch::kBFloat16 || resnet_lever("bf16")) &&
                 fused_batch_norm_relu_applies(x, *bn, residual)
             ? bn
             : nullptr;
}

// relu(norm(x) + residual) (no residual: relu(norm(x))): cuDNN's fused batch norm where it
// applies, else the norm, the in-place add and the in-place ReLU as torchvision runs them.
torch::Tensor norm_add_relu(nn::AnyModule& norm, const torch::Tensor& x,
                            const torch::Tensor& residual, const ResNetOptions& o) {
  if (auto* bn = fused_norm(norm, x, residual, o)) return fused_batch_norm_relu(x, *bn, residual);
  auto out = norm.forward(x);
  if (residual.defined()) out += residual;
  return out.relu_();
}

// What the two blocks share: their shape, registering norms, and the shortcut.  Block is the
// derived class, for Cloneable.
template <typename Block>
class ResidualBlock : public nn::Cloneable<Block> {
 protected:
  ResidualBlock(int in, int planes, int stride, const ResNetOptions& o)
      : in_(in), planes_(planes), stride_(stride), options_(o) {}

  nn::AnyModule add_norm(const std::string& name, int channels) {
    auto norm = norm_layer(channels, options_);
    this->register_module(name, norm.ptr());
    return norm;
  }
  // Last in reset(): the downsample where the shape changes to `out` channels, and
  // zero_init_residual, which zeroes the weight of the block's last norm.
  void add_shortcut(int out, const nn::AnyModule& last_norm) {
    downsample_ = downsample(in_, out, stride_, options_);
    if (downsample_) this->register_module("downsample", downsample_);
    if (options_.zero_init_residual)
      nn::init::zeros_(last_norm.ptr()->named_parameters(/*recurse=*/false)["weight"]);
  }
  torch::Tensor shortcut(const torch::Tensor& x) {
    return downsample_ ? downsample_->forward(x) : x;
  }
  // The block's first convolution of x, and (where the "shortcut" or "shortcut_add" lever
  // applies) the identity shortcut whose gradient that convolution's backward adds in
  // (conv_and_shortcut): an identity shortcut, in a pass that records gradients, into a last norm
  // that runs fused (its backward gives the shortcut's gradient a buffer of its own).  Elsewhere
  // the shortcut is undefined and the block takes shortcut(x) where it always has.
  std::pair<torch::Tensor, torch::Tensor> enter(nn::Conv2d& first, nn::AnyModule& last_norm,
                                                const torch::Tensor& x) {
    const bool beta = resnet_lever("shortcut"), epilogue = !beta && resnet_lever("shortcut_add");
    if (!downsample_ && (beta || epilogue) && torch::GradMode::is_enabled() &&
        fused_norm(last_norm, x, x, options_) && conv_and_shortcut_applies(x, *first))
      return conv_and_shortcut(x, *first, epilogue);
    return {first->forward(x), {}};
  }

  int in_, planes_, stride_;
  ResNetOptions options_;
  nn::Sequential downsample_{nullptr};
};

// ResNet-18/34's block: two 3x3 convs; the first carries the stride.
class BasicBlockImpl : public ResidualBlock<BasicBlockImpl> {
 public:
  static constexpr int kExpansion = 1;
  BasicBlockImpl(int in, int planes, int stride, const ResNetOptions& o)
      : ResidualBlock(in, planes, stride, o) {
    reset();
  }
  void reset() override {
    conv1_ = register_module("conv1", conv(in_, planes_, 3, stride_));
    bn1_ = add_norm("bn1", planes_);
    conv2_ = register_module("conv2", conv(planes_, planes_, 3, 1));
    bn2_ = add_norm("bn2", planes_);
    add_shortcut(planes_ * kExpansion, bn2_);
  }
  torch::Tensor forward(torch::Tensor x) {
    auto [first, skip] = enter(conv1_, bn2_, x);
    auto out = norm_add_relu(bn1_, first, {}, options_);
    return norm_add_relu(bn2_, conv2_->forward(out), skip.defined() ? skip : shortcut(x), options_);
  }

 private:
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  nn::AnyModule bn1_, bn2_;
};
TORCH_MODULE(BasicBlock);

// ResNet-50's block: 1x1 reduce, 3x3 (with the stride: v1.5), 1x1 expand to 4x the planes.  The
// 3x3 works at planes x width_per_group / 64 x groups channels, in `groups` groups (ResNeXt, wide
// ResNets), as torchvision's Bottleneck.
class BottleneckImpl : public ResidualBlock<BottleneckImpl> {
 public:
  static constexpr int kExpansion = 4;
  BottleneckImpl(int in, int planes, int stride, const ResNetOptions& o)
      : ResidualBlock(in, planes, stride, o) {
    reset();
  }
  void reset() override {
    const int out = planes_ * kExpansion;
    const auto& arch = architecture(options_.arch);
    const int width = planes_ * arch.width_per_group / 64 * arch.groups;
    conv1_ = register_module("conv1", conv(in_, width, 1, 1));
    bn1_ = add_norm("bn1", width);
    conv2_ = register_module("conv2", conv(width, width, 3, stride_, arch.groups));
    bn2_ = add_norm("bn2", width);
    conv3_ = register_module("conv3", conv(width, out, 1, 1));
    bn3_ = add_norm("bn3", out);
    add_shortcut(out, bn3_);
  }
  torch::Tensor forward(torch::Tensor x) {
    auto [first, skip] = enter(conv1_, bn3_, x);
    auto out = norm_add_relu(bn1_, first, {}, options_);
    out = norm_add_relu(bn2_, conv2_->forward(out), {}, options_);
    return norm_add_relu(bn3_, conv3_->forward(out), skip.defined() ? skip : shortcut(x), options_);
  }

 private:
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  nn::AnyModule bn1_, bn2_, bn3_;
};
TORCH_MODULE(Bottleneck);

// torchvision's _make_layer: the first block strides (and changes the width), the rest keep it.
// `in` is the channel count entering the layer; it leaves as the layer's output width.
template <typename Block>
nn::Sequential make_layer(int& in, int planes, int blocks, int stride, const ResNetOptions& o) {
  nn::Sequential layer;
  layer->push_back(Block(in, planes, stride, o));
  in = planes * Block::Impl::kExpansion;
  for (int b = 1; b < blocks; ++b) layer->push_back(Block(in, planes, 1, o));
  return layer;
}

}  // namespace

ResNetImpl::ResNetImpl(const ResNetOptions& options) : options_(options) {
  architecture(options.arch);  // throws on an unknown name
  if (options.classes < 2)
    FASTER_THROW("ResNet: needs at least 2 classes (got ", options.classes, ")");
  if (options.in_channels < 1)
    FASTER_THROW("ResNet: needs at least 1 input channel (got ", options.in_channels, ")");
  if (options.norm == Norm::kNone) FASTER_THROW("ResNet: norm must be batch or sync (got none)");
  if (options.norm == Norm::kSync && !options.sync_all_reduce)
    FASTER_THROW("ResNet: SyncBatchNorm needs a distributed job");
  reset();
}

void ResNetImpl::reset() {
  const auto& o = options_;
  const auto& arch = architecture(o.arch);
  conv1_ = register_module("conv1", conv(o.in_channels, 64, 7, 2));
  bn1_ = norm_layer(64, o);
  register_module("bn1", bn1_.ptr());
  maxpool_ =
      register_module("maxpool", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
  int channels = 64;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const int planes = 64 << i, stride = i == 0 ? 1 : 2;
    layers_[i] = arch.bottleneck
                     ? make_layer<Bottleneck>(channels, planes, arch.blocks[i], stride, o)
                     : make_layer<BasicBlock>(channels, planes, arch.blocks[i], stride, o);
    register_module("layer" + std::to_string(i + 1), layers_[i]);
  }
  avgpool_ =
      register_module("avgpool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({1, 1})));
  fc_ = register_module("fc", nn::Linear(channels, o.classes));
}

// The stem's 7x7 convolution.  With the fused ops on CUDA, an RGB fp16 or bf16 channels-last batch
// goes in as 4 channels, x and the weight each padded with a channel of zeros (the same sums), as
// MLPerf's NHWC ResNets feed it: cuDNN's NHWC kernels for 3 channels are slower (on an H200 the
// step's convolutions took 0.19 ms less per batch of 256 for ResNet-18, 0.29 for ResNet-50, the
// padding 0.1 more; BENCHMARKS.md, issue 36).
torch::Tensor ResNetImpl::stem(const torch::Tensor& x) {
  const bool pad = options_.fused && x.is_cuda() && x.dim() == 4 && x.size(1) == 3 &&
                   (x.scalar_type() == torch::kHalf || x.scalar_type() == torch::kBFloat16) &&
                   x.is_contiguous(torch::MemoryFormat::ChannelsLast);
  if (!pad || !resnet_lever("stem")) return conv1_->forward(x);
  namespace F = torch::nn::functional;
  const auto one_more = F::PadFuncOptions({0, 0, 0, 0, 0, 1});  // dim 1: none before, one after
  const auto cl = torch::MemoryFormat::ChannelsLast;
  const auto& conv = conv1_->options;
  return F::conv2d(F::pad(x, one_more).contiguous(cl),
                   F::pad(conv1_->weight, one_more).contiguous(cl),
                   F::Conv2dFuncOptions().stride(conv.stride()).padding(conv.padding()));
}

torch::Tensor ResNetImpl::forward(torch::Tensor x) {
  x = norm_add_relu(bn1_, stem(x), {}, options_);
  // The module's window (torchvision's maxpool) through faster's kernels where they apply (the
  // "pool" lever; LibTorch's elsewhere): the same values and gradients as LibTorch's, in a
  // fraction of its time (models/max_pool.h).
  const auto& pool = maxpool_->options;
  x = !resnet_lever("pool")
          ? maxpool_->forward(x)
          : max_pool(x, static_cast<int>((*pool.kernel_size())[0]),
                     static_cast<int>((*pool.stride())[0]), static_cast<int>((*pool.padding())[0]));
  for (auto& layer : layers_) x = layer->forward(x);
  x = torch::flatten(avgpool_->forward(x), 1);
  return fc_->forward(x);
}

bool resnet_lever(const std::string& lever) {
  const char* named = std::getenv("FASTER_RESNET_LEVERS");
  const std::string on = "," + std::string(named ? named : "input,stem,pool,bf16,shortcut") + ",";
  return on.find("," + lever + ",") != std::string::npos;
}

std::vector<std::string> resnet_names() {
  std::vector<std::string> names;
  for (const auto& a : kArchitectures) names.push_back(a.name);
  return names;
}

std::string resnet_name_of(bool bottleneck, const std::array<int, 4>& blocks, int groups,
                           int width_per_group) {
  for (const auto& a : kArchitectures)
    if (a.bottleneck == bottleneck && a.blocks == blocks &&
        (!bottleneck || (a.groups == groups && a.width_per_group == width_per_group)))
      return a.name;
  return "";
}

}  // namespace faster::models

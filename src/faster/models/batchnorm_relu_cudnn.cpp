// The fused batch norm, and the block's first convolution with its shortcut's gradient, through
// cuDNN.  Their entry points are looked up by name in the cuDNN that LibTorch has already loaded,
// so faster and LibTorch share one cuDNN (and its handle) and faster links none of its own; where
// they are missing the ops say they do not apply.
#include <ATen/cudnn/Handle.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <torch/torch.h>

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <variant>

#include "faster/core/error.h"
#include "faster/core/log.h"
#include "faster/models/batchnorm_relu.h"

// The BN_ACTIVATION / BN_ADD_ACTIVATION ops are in cuDNN 9's legacy API, marked deprecated.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace faster::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

#define FASTER_CUDNN_API(X)                                   \
  X(cudnnGetErrorString)                                      \
  X(cudnnCreateTensorDescriptor)                              \
  X(cudnnDestroyTensorDescriptor)                             \
  X(cudnnSetTensor4dDescriptor)                               \
  X(cudnnDeriveBNTensorDescriptor)                            \
  X(cudnnCreateActivationDescriptor)                          \
  X(cudnnDestroyActivationDescriptor)                         \
  X(cudnnSetActivationDescriptor)                             \
  X(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize) \
  X(cudnnGetBatchNormalizationBackwardExWorkspaceSize)        \
  X(cudnnGetBatchNormalizationTrainingExReserveSpaceSize)     \
  X(cudnnBatchNormalizationForwardTrainingEx)                 \
  X(cudnnBatchNormalizationBackwardEx)

// The data-gradient convolution (conv_and_shortcut).
#define FASTER_CUDNN_CONV_API(X)                  \
  X(cudnnCreateFilterDescriptor)                  \
  X(cudnnDestroyFilterDescriptor)                 \
  X(cudnnSetFilter4dDescriptor)                   \
  X(cudnnCreateConvolutionDescriptor)             \
  X(cudnnDestroyConvolutionDescriptor)            \
  X(cudnnSetConvolution2dDescriptor)              \
  X(cudnnSetConvolutionMathType)                  \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)  \
  X(cudnnFindConvolutionBackwardDataAlgorithmEx)  \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
  X(cudnnConvolutionBackwardData)

// The functions, from the process's cuDNN (null members: not there).  complete: the batch norm's
// are all there; conv_complete: the convolution's (and the descriptors' they share) too.
struct Cudnn {
#define FASTER_CUDNN_MEMBER(name) decltype(&::name) name = nullptr;
  FASTER_CUDNN_API(FASTER_CUDNN_MEMBER)
  FASTER_CUDNN_CONV_API(FASTER_CUDNN_MEMBER)
#undef FASTER_CUDNN_MEMBER
  bool complete = false, conv_complete = false;
};

const Cudnn& cudnn() {
  static Cudnn api;
  static std::once_flag once;
  std::call_once(once, [] {
    bool all = true;
#define FASTER_CUDNN_LOAD(name)                                                 \
  api.name = reinterpret_cast<decltype(&::name)>(::dlsym(RTLD_DEFAULT, #name)); \
  all = all && api.name != nullptr;
    FASTER_CUDNN_API(FASTER_CUDNN_LOAD)
    api.complete = all;
    FASTER_CUDNN_CONV_API(FASTER_CUDNN_LOAD)
#undef FASTER_CUDNN_LOAD
    api.conv_complete = all;
    if (!api.complete)
      log::warn("cuDNN's fused batch norm is not available: ResNets run it unfused");
  });
  return api;
}

void check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS)
    FASTER_THROW("cuDNN ", what, " failed: ", cudnn().cudnnGetErrorString(status));
}

constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;

// cuDNN's name for an fp16 or bf16 tensor's type.
cudnnDataType_t cudnn_type(const torch::Tensor& t) {
  return t.scalar_type() == torch::kBFloat16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
}

// d: t's shape (N, C, H, W) and type, laid out NHWC.
void set_nhwc(cudnnTensorDescriptor_t d, const torch::Tensor& t) {
  check(cudnn().cudnnSetTensor4dDescriptor(
            d, CUDNN_TENSOR_NHWC, cudnn_type(t), static_cast<int>(t.size(0)),
            static_cast<int>(t.size(1)), static_cast<int>(t.size(2)), static_cast<int>(t.size(3))),
        "NHWC descriptor");
}

// The descriptors of one call: x (and y, z, dy, dx, dz: the same shape) as NHWC fp16 or bf16, the
// derived per-channel float descriptor, and ReLU.
class Descriptors {
 public:
  explicit Descriptors(const torch::Tensor& x) {
    const auto& api = cudnn();
    check(api.cudnnCreateTensorDescriptor(&x_), "tensor descriptor");
    check(api.cudnnCreateTensorDescriptor(&bn_), "tensor descriptor");
    check(api.cudnnCreateActivationDescriptor(&relu_), "activation descriptor");
    set_nhwc(x_, x);
    check(api.cudnnDeriveBNTensorDescriptor(bn_, x_, kMode), "batch norm descriptor");
    check(api.cudnnSetActivationDescriptor(relu_, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
          "ReLU descriptor");
  }
  ~Descriptors() {
    const auto& api = cudnn();
    api.cudnnDestroyActivationDescriptor(relu_);
    api.cudnnDestroyTensorDescriptor(bn_);
    api.cudnnDestroyTensorDescriptor(x_);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  cudnnTensorDescriptor_t x_ = nullptr, bn_ = nullptr;
  cudnnActivationDescriptor_t relu_ = nullptr;
};

torch::Tensor bytes(size_t n, const torch::Tensor& like) {
  return torch::empty(
      {static_cast<int64_t>(std::max<size_t>(n, 1))},
      like.options().dtype(torch::kUInt8).memory_format(torch::MemoryFormat::Contiguous));
}

struct BatchNormReluFunction : torch::autograd::Function<BatchNormReluFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               const torch::Tensor& residual, torch::Tensor running_mean,
                               torch::Tensor running_var, double momentum, double eps) {
    const auto& api = cudnn();
    const bool add = residual.numel() > 0;  // "no residual" arrives as an empty tensor
    const auto ops =
        add ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION : CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
    const Descriptors d(x);
    cudnnHandle_t handle = at::native::getCudnnHandle();  // on the current stream
    auto y = torch::empty_like(x, torch::MemoryFormat::ChannelsLast);
    auto save_mean = torch::empty_like(weight), save_invstd = torch::empty_like(weight);
    size_t work_size = 0, reserve_size = 0;
    check(api.cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
              handle, kMode, ops, d.x_, add ? d.x_ : nullptr, d.x_, d.bn_, d.relu_, &work_size),
          "forward workspace size");
    check(api.cudnnGetBatchNormalizationTrainingExReserveSpaceSize(handle, kMode, ops, d.relu_,
                                                                   d.x_, &reserve_size),
          "reserve space size");
    auto work = bytes(work_size, x), reserve = bytes(reserve_size, x);
    const float one = 1, zero = 0;
    check(api.cudnnBatchNormalizationForwardTrainingEx(
              handle, kMode, ops, &one, &zero, d.x_, x.data_ptr(), add ? d.x_ : nullptr,
              add ? residual.data_ptr() : nullptr, d.x_, y.data_ptr(), d.bn_, weight.data_ptr(),
              bias.data_ptr(), momentum, running_mean.data_ptr(), running_var.data_ptr(), eps,
              save_mean.data_ptr(), save_invstd.data_ptr(), d.relu_, work.data_ptr(), work_size,
              reserve.data_ptr(), reserve_size),
          "batch norm forward");
    ctx->save_for_backward({x, y, weight, bias, save_mean, save_invstd, reserve});
    ctx->saved_data["add"] = add;
    ctx->saved_data["eps"] = eps;
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto& api = cudnn();
    const auto s = ctx->get_saved_variables();
    const auto &x = s[0], &y = s[1], &weight = s[2], &bias = s[3], &save_mean = s[4],
               &save_invstd = s[5], &reserve = s[6];
    const bool add = ctx->saved_data["add"].toBool();
    const double eps = ctx->saved_data["eps"].toDouble();
    const auto ops =
        add ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION : CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
    const auto dy = grads[0].contiguous(torch::MemoryFormat::ChannelsLast);
    const Descriptors d(x);
    cudnnHandle_t handle = at::native::getCudnnHandle();
    auto dx = torch::empty_like(x, torch::MemoryFormat::ChannelsLast);
    torch::Tensor dz =
        add ? torch::empty_like(x, torch::MemoryFormat::ChannelsLast) : torch::Tensor();
    auto dweight = torch::empty_like(weight), dbias = torch::empty_like(bias);
    size_t work_size = 0;
    check(api.cudnnGetBatchNormalizationBackwardExWorkspaceSize(handle, kMode, ops, d.x_, d.x_,
                                                                d.x_, add ? d.x_ : nullptr, d.x_,
                                                                d.bn_, d.relu_, &work_size),
          "backward workspace size");
    auto work = bytes(work_size, x);
    const float one = 1, zero = 0;
    check(api.cudnnBatchNormalizationBackwardEx(
              handle, kMode, ops, &one, &zero, &one, &zero, d.x_, x.data_ptr(), d.x_, y.data_ptr(),
              d.x_, dy.data_ptr(), add ? d.x_ : nullptr, add ? dz.data_ptr() : nullptr, d.x_,
              dx.data_ptr(), d.bn_, weight.data_ptr(), bias.data_ptr(), dweight.data_ptr(),
              dbias.data_ptr(), eps, save_mean.data_ptr(), save_invstd.data_ptr(), d.relu_,
              work.data_ptr(), work_size, reserve.data_ptr(), static_cast<size_t>(reserve.numel())),
          "batch norm backward");
    return {dx, dweight, dbias, dz, {}, {}, {}, {}};
  }
};

// x's type and shape, channels-last on x's device.
bool nhwc_like(const torch::Tensor& t, const torch::Tensor& x) {
  return t.defined() && t.is_cuda() && t.device() == x.device() &&
         t.scalar_type() == x.scalar_type() && t.dim() == 4 && t.sizes() == x.sizes() &&
         t.is_contiguous(torch::MemoryFormat::ChannelsLast);
}

// Whether this cuDNN runs the fused ops on bf16 (not every version does): a forward and backward
// pass of a small batch on `device`, once per process.  Not while a CUDA graph is being captured
// (the trainer's eager warm-up steps ask first).
bool bf16_runs(const torch::Device& device) {
  static std::once_flag once;
  static std::atomic<int> tried{-1};  // -1: not yet; else whether it ran
  if (const int t = tried.load(); t >= 0) return t == 1;
  if (c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None)
    return false;
  std::call_once(once, [&] {
    bool runs = false;
    try {
      torch::AutoGradMode grad(true);
      const auto f = torch::TensorOptions().device(device);
      const auto x = torch::randn({2, 8, 4, 4}, f)
                         .to(torch::kBFloat16)
                         .contiguous(torch::MemoryFormat::ChannelsLast)
                         .requires_grad_(true);
      const auto weight = torch::ones({8}, f).requires_grad_(true);
      const auto bias = torch::zeros({8}, f).requires_grad_(true);
      const auto y = BatchNormReluFunction::apply(x, weight, bias, x.detach(), torch::zeros({8}, f),
                                                  torch::ones({8}, f), 0.1, 1e-5);
      y.sum().backward();
      runs = true;
    } catch (const std::exception& e) {
      log::warn("cuDNN's fused batch norm does not run on bf16 here (", e.what(),
                "): bf16 ResNets run it unfused");
    }
    tried.store(runs ? 1 : 0);
  });
  return tried.load() == 1;
}

// The descriptors of a data-gradient convolution: dy (N, K, P, Q) and dx (N, C, H, W) NHWC, the
// filter (K, C, R, R) KRSC (channels-last), a square window with one stride and padding.
class ConvDescriptors {
 public:
  ConvDescriptors(const torch::Tensor& dx, const torch::Tensor& dy, const torch::Tensor& w,
                  int stride, int padding) {
    const auto& api = cudnn();
    check(api.cudnnCreateTensorDescriptor(&dx_), "tensor descriptor");
    check(api.cudnnCreateTensorDescriptor(&dy_), "tensor descriptor");
    check(api.cudnnCreateFilterDescriptor(&w_), "filter descriptor");
    check(api.cudnnCreateConvolutionDescriptor(&conv_), "convolution descriptor");
    set_nhwc(dx_, dx);
    set_nhwc(dy_, dy);
    check(api.cudnnSetFilter4dDescriptor(w_, cudnn_type(w), CUDNN_TENSOR_NHWC,
                                         static_cast<int>(w.size(0)), static_cast<int>(w.size(1)),
                                         static_cast<int>(w.size(2)), static_cast<int>(w.size(3))),
          "filter descriptor");
    check(api.cudnnSetConvolution2dDescriptor(conv_, padding, padding, stride, stride, 1, 1,
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "convolution descriptor");
  }
  ~ConvDescriptors() {
    const auto& api = cudnn();
    api.cudnnDestroyConvolutionDescriptor(conv_);
    api.cudnnDestroyFilterDescriptor(w_);
    api.cudnnDestroyTensorDescriptor(dy_);
    api.cudnnDestroyTensorDescriptor(dx_);
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;

  cudnnTensorDescriptor_t dx_ = nullptr, dy_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
};

// The data-gradient algorithm of one shape, as cuDNN times them (cudnnFind...Ex) the first time
// the shape is seen outside a CUDA graph's capture (the trainer's eager warm-up steps), as its
// heuristics rank them inside one; kept for the process.
struct DgradAlgorithm {
  cudnnConvolutionBwdDataAlgo_t algo;
  cudnnMathType_t math;
  size_t workspace;
};

DgradAlgorithm dgrad_algorithm(cudnnHandle_t handle, const ConvDescriptors& d,
                               const torch::Tensor& dx, const torch::Tensor& dy,
                               const torch::Tensor& w, int stride, int padding) {
  using Key = std::array<int64_t, 11>;
  static std::mutex mutex;
  static std::map<Key, DgradAlgorithm> known;
  const Key key{dx.size(0),
                dx.size(1),
                dx.size(2),
                dx.size(3),
                w.size(0),
                w.size(2),
                stride,
                padding,
                dy.size(2),
                dx.get_device(),
                static_cast<int64_t>(dx.scalar_type())};
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  const auto& api = cudnn();
  constexpr int kWanted = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  cudnnConvolutionBwdDataAlgoPerf_t perf[kWanted];
  int found = 0;
  const bool capturing =
      c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None;
  if (capturing) {
    check(api.cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, d.w_, d.dy_, d.conv_, d.dx_,
                                                          kWanted, &found, perf),
          "data-gradient heuristics");
  } else {
    constexpr size_t kTrialWorkspace = size_t{256} << 20;
    auto scratch = torch::empty_like(dx, torch::MemoryFormat::ChannelsLast);
    auto work = bytes(kTrialWorkspace, dx);
    check(api.cudnnFindConvolutionBackwardDataAlgorithmEx(
              handle, d.w_, w.data_ptr(), d.dy_, dy.data_ptr(), d.conv_, d.dx_, scratch.data_ptr(),
              kWanted, &found, perf, work.data_ptr(), kTrialWorkspace),
          "data-gradient timing");
  }
  for (int i = 0; i < found; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) {
      const DgradAlgorithm a{perf[i].algo, perf[i].mathType, perf[i].memory};
      if (!capturing) known.emplace(key, a);
      return a;
    }
  FASTER_THROW("cuDNN has no data-gradient convolution for this shape");
}

// y = conv(x, w) (no bias, square window, one stride and padding, one group), and x itself as the
// block's shortcut.  Backward: the weight's gradient through LibTorch; x's gradient is the
// shortcut's gradient with the data-gradient convolution added onto it by cuDNN itself (its beta
// = 1), where autograd would add the two in a separate pass.  The shortcut's gradient is written
// in place: it is the buffer the fused batch norm's backward made for this edge alone (the only
// consumer conv_and_shortcut's callers give the shortcut).
struct ConvShortcutFunction : torch::autograd::Function<ConvShortcutFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               int64_t stride, int64_t padding) {
    auto y =
        at::convolution(x, w, {}, {stride, stride}, {padding, padding}, {1, 1}, false, {0, 0}, 1);
    ctx->save_for_backward({x, w});
    ctx->saved_data["stride"] = stride;
    ctx->saved_data["padding"] = padding;
    return {y, x};  // x as is: autograd returns a view of it whose history is this function
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const auto &x = s[0], &w = s[1];
    const int stride = static_cast<int>(ctx->saved_data["stride"].toInt());
    const int padding = static_cast<int>(ctx->saved_data["padding"].toInt());
    const auto cl = torch::MemoryFormat::ChannelsLast;
    // Both gradients are defined: autograd materializes a missing one as zeros (its default).
    const auto dy = grads[0].contiguous(cl);
    torch::Tensor dw, dx;
    if (ctx->needs_input_grad(1))
      dw = std::get<1>(at::convolution_backward(dy, x, w, c10::nullopt, {stride, stride},
                                                {padding, padding}, {1, 1}, false, {0, 0}, 1,
                                                {false, true, false}));
    if (ctx->needs_input_grad(0)) {
      const auto& shortcut = grads[1];
      dx =
          nhwc_like(shortcut, x) ? shortcut : shortcut.to(x.scalar_type()).contiguous(cl).clone(cl);
      const auto wc = w.contiguous(cl);
      const ConvDescriptors d(dx, dy, wc, stride, padding);
      cudnnHandle_t handle = at::native::getCudnnHandle();
      const auto algorithm = dgrad_algorithm(handle, d, dx, dy, wc, stride, padding);
      const auto& api = cudnn();
      check(api.cudnnSetConvolutionMathType(d.conv_, algorithm.math), "math type");
      auto work = bytes(algorithm.workspace, x);
      const float one = 1;  // dx = one * dgrad(dy) + one * dx: the shortcut's gradient added
      check(api.cudnnConvolutionBackwardData(
                handle, &one, d.w_, wc.data_ptr(), d.dy_, dy.data_ptr(), d.conv_, algorithm.algo,
                work.data_ptr(), algorithm.workspace, &one, d.dx_, dx.data_ptr()),
            "data-gradient convolution");
    }
    return {dx, dw, {}, {}};
  }
};

// A convolution's padding given as numbers (not "same" or "valid"), and whether it pads with
// zeros; std::variant in LibTorch 2, c10::variant before (found by argument-dependent lookup).
template <class Padding>
const torch::ExpandingArray<2>* square_padding(const Padding& padding) {
  using std::get_if;
  return get_if<torch::ExpandingArray<2>>(&padding);
}
template <class Mode>
bool zero_padded(const Mode& mode) {
  using std::get_if;
  return get_if<torch::enumtype::kZeros>(&mode) != nullptr;
}

}  // namespace

bool fused_batch_norm_relu_applies(const torch::Tensor& x, const torch::nn::BatchNorm2dImpl& bn,
                                   const torch::Tensor& residual) {
  if (!x.defined() || !x.is_cuda() || x.dim() != 4 ||
      !x.is_contiguous(torch::MemoryFormat::ChannelsLast) || x.size(1) % 4 != 0 || x.numel() == 0 ||
      !bn.is_training())
    return false;
  if (x.scalar_type() != torch::kHalf && x.scalar_type() != torch::kBFloat16) return false;
  if (residual.defined() && !nhwc_like(residual, x)) return false;
  const auto& o = bn.options;
  if (!o.affine() || !o.track_running_stats() || !o.momentum().has_value() ||
      o.eps() < CUDNN_BN_MIN_EPSILON)
    return false;
  for (const auto* t : {&bn.weight, &bn.bias, &bn.running_mean, &bn.running_var})
    if (!t->is_cuda() || t->device() != x.device() || t->scalar_type() != torch::kFloat ||
        t->numel() != x.size(1) || !t->is_contiguous())
      return false;
  return cudnn().complete && (x.scalar_type() == torch::kHalf || bf16_runs(x.device()));
}

torch::Tensor fused_batch_norm_relu(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn,
                                    const torch::Tensor& residual) {
  FASTER_CHECK(fused_batch_norm_relu_applies(x, bn, residual), "fused batch norm does not apply");
  {
    torch::NoGradGuard no_grad;
    bn.num_batches_tracked.add_(1);
  }
  // Every tensor a custom autograd function takes must be defined: "no residual" is an empty one.
  const auto z = residual.defined() ? residual : torch::empty({0}, x.options());
  return BatchNormReluFunction::apply(x, bn.weight, bn.bias, z, bn.running_mean, bn.running_var,
                                      *bn.options.momentum(), bn.options.eps());
}

bool conv_and_shortcut_applies(const torch::Tensor& x, const torch::nn::Conv2dImpl& conv) {
  const auto& o = conv.options;
  const auto &k = *o.kernel_size(), &st = *o.stride(), &dl = *o.dilation();
  const auto* pad = square_padding(o.padding());
  if (!x.defined() || !x.is_cuda() || x.dim() != 4 || x.numel() == 0 ||
      !x.is_contiguous(torch::MemoryFormat::ChannelsLast) || x.size(1) != o.in_channels() ||
      (x.scalar_type() != torch::kHalf && x.scalar_type() != torch::kBFloat16))
    return false;
  if (o.groups() != 1 || o.bias() || k[0] != k[1] || st[0] != st[1] || dl[0] != 1 || dl[1] != 1 ||
      !pad || (**pad)[0] != (**pad)[1] || !zero_padded(o.padding_mode()) ||
      !conv.weight.is_cuda() || conv.weight.device() != x.device())
    return false;
  return cudnn().conv_complete;
}

std::pair<torch::Tensor, torch::Tensor> conv_and_shortcut(const torch::Tensor& x,
                                                          torch::nn::Conv2dImpl& conv) {
  FASTER_CHECK(conv_and_shortcut_applies(x, conv), "conv_and_shortcut does not apply");
  const auto& o = conv.options;
  // The weight in x's type, as autocast would hand it to the convolution (differentiable: its
  // gradient reaches the float32 weight).
  const auto w = conv.weight.to(x.scalar_type());
  const auto out =
      ConvShortcutFunction::apply(x, w, (*o.stride())[0], (**square_padding(o.padding()))[0]);
  return {out[0], out[1]};
}

}  // namespace faster::models

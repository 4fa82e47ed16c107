// The fused batch norm through cuDNN.  Its entry points are looked up by name in the cuDNN that
// LibTorch has already loaded, so faster and LibTorch share one cuDNN (and its handle) and faster
// links none of its own; where they are missing the op says it does not apply.
#include <ATen/cudnn/Handle.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <torch/torch.h>

#include <atomic>
#include <mutex>

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

// The functions, from the process's cuDNN (null members: not there).
struct Cudnn {
#define FASTER_CUDNN_MEMBER(name) decltype(&::name) name = nullptr;
  FASTER_CUDNN_API(FASTER_CUDNN_MEMBER)
#undef FASTER_CUDNN_MEMBER
  bool complete = false;
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
#undef FASTER_CUDNN_LOAD
    api.complete = all;
    if (!all) log::warn("cuDNN's fused batch norm is not available: ResNets run it unfused");
  });
  return api;
}

void check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS)
    FASTER_THROW("cuDNN ", what, " failed: ", cudnn().cudnnGetErrorString(status));
}

constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;

// The descriptors of one call: x (and y, z, dy, dx, dz: the same shape) as NHWC fp16 or bf16, the
// derived per-channel float descriptor, and ReLU.
class Descriptors {
 public:
  explicit Descriptors(const torch::Tensor& x) {
    const auto& api = cudnn();
    check(api.cudnnCreateTensorDescriptor(&x_), "tensor descriptor");
    check(api.cudnnCreateTensorDescriptor(&bn_), "tensor descriptor");
    check(api.cudnnCreateActivationDescriptor(&relu_), "activation descriptor");
    const auto type = x.scalar_type() == torch::kBFloat16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
    check(api.cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NHWC, type, static_cast<int>(x.size(0)),
                                         static_cast<int>(x.size(1)), static_cast<int>(x.size(2)),
                                         static_cast<int>(x.size(3))),
          "NHWC descriptor");
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

}  // namespace faster::models

// The fused batch norm, and the block's first convolution with its shortcut's gradient, through
// cuDNN.  Their entry points are looked up by name in the cuDNN that LibTorch has already loaded,
// so faster and LibTorch share one cuDNN (and its handle) and faster links none of its own; where
// they are missing the ops say they do not apply.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cudnn/Handle.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <variant>
#include <vector>

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

// The data-gradient convolution (conv_and_shortcut), through cuDNN's graph API (the backend
// descriptors LibTorch's own convolutions go through, and so the same engines).
#define FASTER_CUDNN_CONV_API(X)   \
  X(cudnnBackendCreateDescriptor)  \
  X(cudnnBackendDestroyDescriptor) \
  X(cudnnBackendSetAttribute)      \
  X(cudnnBackendGetAttribute)      \
  X(cudnnBackendFinalize)          \
  X(cudnnBackendExecute)

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

// One descriptor of cuDNN's graph API (its backend C API), destroyed with its owner.
class Backend {
 public:
  explicit Backend(cudnnBackendDescriptorType_t type) {
    check(cudnn().cudnnBackendCreateDescriptor(type, &d_), "backend descriptor");
  }
  ~Backend() {
    if (d_) cudnn().cudnnBackendDestroyDescriptor(d_);
  }
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  template <class T>
  Backend& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values,
               int64_t count = 1) {
    // const void* in cuDNN 9, void* before
    auto* v = const_cast<void*>(static_cast<const void*>(values));
    check(cudnn().cudnnBackendSetAttribute(d_, name, type, count, v), "backend attribute");
    return *this;
  }
  Backend& set(cudnnBackendAttributeName_t name, const Backend& other) {
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &other.d_);
  }
  Backend& finalize(const char* what) {
    check(cudnn().cudnnBackendFinalize(d_), what);
    return *this;
  }
  cudnnBackendDescriptor_t get() const { return d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// How the shortcut's gradient R joins the data gradient dX = dgrad(dY, W): the operation's beta
// (dX = dgrad + dX, R's buffer written in place: the "shortcut" lever), or an addition in its
// epilogue (dX = dgrad + R into a new buffer: "shortcut_add").
enum class ShortcutAdd : int64_t { kBeta = 0, kEpilogue = 1 };

enum Uid : int64_t { kDx = 1, kW, kDy, kShortcut, kDgradSum = 100 };

// The data-gradient graph of one shape, its fastest execution plan, and that plan's workspace.
struct DgradPlan {
  std::vector<std::unique_ptr<Backend>> parts;  // the descriptors the plan was built from
  std::unique_ptr<Backend> config, plan;        // the engine configuration, and its plan
  int64_t workspace = 0;
  std::vector<int64_t> uids;
};

// A new descriptor kept with the plan.
Backend& part(DgradPlan& p, cudnnBackendDescriptorType_t type) {
  return *p.parts.emplace_back(std::make_unique<Backend>(type));
}

// A graph tensor of dims (N, C, H, W), or a filter's (K, C, R, S), laid out NHWC (KRSC), its data
// aligned to 16 bytes.
Backend& graph_tensor(DgradPlan& p, int64_t uid, const std::array<int64_t, 4>& dims,
                      cudnnDataType_t type, bool is_virtual = false) {
  const std::array<int64_t, 4> strides{dims[1] * dims[2] * dims[3], 1, dims[3] * dims[1], dims[1]};
  const int64_t alignment = 16;
  return part(p, CUDNN_BACKEND_TENSOR_DESCRIPTOR)
      .set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type)
      .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), 4)
      .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), 4)
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment)
      .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &is_virtual)
      .finalize("graph tensor");
}

std::array<int64_t, 4> dims(const torch::Tensor& t) {
  return {t.size(0), t.size(1), t.size(2), t.size(3)};
}

bool aligned(const torch::Tensor& t) {
  return reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0;
}

// Runs a plan on the handle's stream: dx, w, dy (and r, in the epilogue's graph) by unique id.
void execute(cudnnHandle_t handle, const DgradPlan& p, const torch::Tensor& dx,
             const torch::Tensor& w, const torch::Tensor& dy, const torch::Tensor& r) {
  auto work = bytes(static_cast<size_t>(p.workspace), dx);
  void* workspace = work.data_ptr();
  std::vector<void*> data{dx.data_ptr(), w.data_ptr(), dy.data_ptr()};
  if (p.uids.size() > 3) data.push_back(r.data_ptr());
  Backend pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, p.uids.data(),
           static_cast<int64_t>(p.uids.size()))
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, data.data(),
           static_cast<int64_t>(data.size()))
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace)
      .finalize("variant pack");
  check(cudnn().cudnnBackendExecute(handle, p.plan->get(), pack.get()),
        "data-gradient convolution");
}

// The data gradient's graph for dx (N, C, H, W), w (K, C, R, R), dy (N, K, P, Q), with the
// shortcut's gradient joined as `add` says, and its plan: of the engine configurations cuDNN's
// heuristics rank, the fastest of the first few timed on scratch buffers; null where none runs.
// Not inside a CUDA graph's capture (the engines may compile and load kernels).
std::unique_ptr<DgradPlan> build_dgrad(cudnnHandle_t handle, const torch::Tensor& dx,
                                       const torch::Tensor& w, const torch::Tensor& dy,
                                       const torch::Tensor& r, int64_t stride, int64_t padding,
                                       ShortcutAdd add) {
  auto p = std::make_unique<DgradPlan>();
  const auto type = cudnn_type(dx);
  const bool epilogue = add == ShortcutAdd::kEpilogue;
  cudnnDataType_t fp32 = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2;
  const std::array<int64_t, 2> ones{1, 1}, strides{stride, stride}, pads{padding, padding};
  auto& conv = part(*p, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &fp32)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode)
      .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &spatial)
      .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, ones.data(), 2)
      .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, strides.data(), 2)
      .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, pads.data(), 2)
      .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, pads.data(), 2)
      .finalize("convolution descriptor");
  auto& out = graph_tensor(*p, kDx, dims(dx), type);
  auto& sum = epilogue ? graph_tensor(*p, kDgradSum, dims(dx), fp32, true) : out;
  auto& wt = graph_tensor(*p, kW, dims(w), type);
  auto& dyt = graph_tensor(*p, kDy, dims(dy), type);
  const float alpha = 1, beta = epilogue ? 0 : 1;
  auto& dgrad = part(*p, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
  dgrad.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, sum)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, wt)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, dyt)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, conv)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, &alpha)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, &beta)
      .finalize("data-gradient operation");
  std::vector<cudnnBackendDescriptor_t> ops{dgrad.get()};
  p->uids = {kDx, kW, kDy};
  if (epilogue) {
    auto& rt = graph_tensor(*p, kShortcut, dims(dx), type);
    cudnnPointwiseMode_t plus = CUDNN_POINTWISE_ADD;
    auto& add_desc = part(*p, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    add_desc.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &plus)
        .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &fp32)
        .finalize("addition descriptor");
    auto& add_op = part(*p, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    add_op.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, add_desc)
        .set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, sum)
        .set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, rt)
        .set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, out)
        .finalize("addition operation");
    ops.push_back(add_op.get());
    p->uids.push_back(kShortcut);
  }
  auto& graph = part(*p, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle)
      .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops.data(),
           static_cast<int64_t>(ops.size()))
      .finalize("operation graph");
  cudnnBackendHeurMode_t heur_mode = CUDNN_HEUR_MODE_INSTANT;
  Backend heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
      .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &heur_mode)
      .finalize("engine heuristics");
  constexpr int64_t kMaxConfigs = 8, kTimed = 4;
  std::vector<std::unique_ptr<Backend>> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < kMaxConfigs; ++i) {
    configs.push_back(std::make_unique<Backend>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back()->get());
  }
  int64_t count = 0;
  check(cudnn().cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, kMaxConfigs, &count,
                                         raw.data()),
        "engine configurations");
  count = std::min(count, kMaxConfigs);
  // Scratch for the timed runs: a beta = 1 run adds onto its output.
  const auto scratch = torch::empty_like(dx);
  float best_ms = 0;
  int timed = 0;
  for (int64_t i = 0; i < count && timed < kTimed; ++i) {
    auto plan = std::make_unique<Backend>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &handle)
        .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *configs[i]);
    if (cudnn().cudnnBackendFinalize(plan->get()) != CUDNN_STATUS_SUCCESS) continue;
    DgradPlan candidate;
    candidate.plan = std::move(plan);
    candidate.uids = p->uids;
    int64_t got = 0;
    check(cudnn().cudnnBackendGetAttribute(candidate.plan->get(),
                                           CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                           CUDNN_TYPE_INT64, 1, &got, &candidate.workspace),
          "plan workspace");
    float ms = 0;
    try {
      execute(handle, candidate, scratch, w, dy, r);  // warm-up
      at::cuda::CUDAEvent start(cudaEventDefault), end(cudaEventDefault);
      const auto stream = at::cuda::getCurrentCUDAStream();
      start.record(stream);
      for (int k = 0; k < 3; ++k) execute(handle, candidate, scratch, w, dy, r);
      end.record(stream);
      end.synchronize();
      ms = start.elapsed_time(end);
    } catch (const std::exception&) {
      continue;  // a configuration that builds but does not run here
    }
    if (timed++ == 0 || ms < best_ms) {
      best_ms = ms, p->plan = std::move(candidate.plan), p->workspace = candidate.workspace;
      p->config = std::move(configs[i]);  // kept while its plan is
    }
  }
  return p->plan ? std::move(p) : nullptr;
}

// dx = dgrad(dy, w) joined with the shortcut's gradient r as `add` says (kBeta: dx is r's buffer,
// added onto), through the plan of this shape, built the first time the shape is seen on this
// thread (plans are not shared between handles, as LibTorch's are not) outside a CUDA graph's
// capture (the trainer's eager warm-up steps build them), and kept for the process.  Where no plan
// runs (or a new shape arrives inside a capture): LibTorch's data gradient, then the sum.
void data_gradient(const torch::Tensor& dx, const torch::Tensor& x, const torch::Tensor& w,
                   const torch::Tensor& dy, const torch::Tensor& r, int64_t stride, int64_t padding,
                   ShortcutAdd add) {
  using Key = std::array<int64_t, 13>;
  // Never destroyed: descriptors outlive the process's CUDA teardown otherwise.
  static thread_local auto* known = new std::map<Key, std::unique_ptr<DgradPlan>>;
  const Key key{dx.size(0),
                dx.size(1),
                dx.size(2),
                dx.size(3),
                w.size(0),
                w.size(2),
                dy.size(2),
                dy.size(3),
                stride,
                padding,
                dx.get_device(),
                static_cast<int64_t>(dx.scalar_type()),
                static_cast<int64_t>(add)};
  cudnnHandle_t handle = at::native::getCudnnHandle();  // on the current stream
  auto it = known->find(key);
  if (it == known->end()) {
    const bool capturing =
        c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None;
    auto plan = capturing ? nullptr : build_dgrad(handle, dx, w, dy, r, stride, padding, add);
    // Said once per shape: a lever measured while it falls back would measure LibTorch's path.
    if (!plan)
      log::warn("the shortcut lever: no cuDNN data-gradient plan for ", dx.sizes(), " from ",
                w.sizes(), capturing ? " (first seen inside a CUDA graph's capture)" : "",
                ": LibTorch's data gradient and the sum instead");
    if (!capturing) it = known->emplace(key, std::move(plan)).first;
  }
  if (it != known->end() && it->second) return execute(handle, *it->second, dx, w, dy, r);
  const auto g = std::get<0>(at::convolution_backward(dy, x, w, c10::nullopt, {stride, stride},
                                                      {padding, padding}, {1, 1}, false, {0, 0}, 1,
                                                      {true, false, false}));
  if (add == ShortcutAdd::kBeta)
    dx.add_(g);
  else
    torch::add_out(const_cast<torch::Tensor&>(dx), r, g);
}

// y = conv(x, w) (no bias, square window, one stride and padding, one group), and x itself as the
// block's shortcut.  Backward: the weight's gradient through LibTorch; x's gradient is the
// data-gradient convolution with the shortcut's gradient joined by cuDNN itself (data_gradient),
// where autograd would add the two in a separate pass.  With kBeta the shortcut's gradient is
// written in place: it is the buffer the fused batch norm's backward made for this edge alone (the
// only consumer conv_and_shortcut's callers give the shortcut).
struct ConvShortcutFunction : torch::autograd::Function<ConvShortcutFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               int64_t stride, int64_t padding, int64_t add) {
    auto y =
        at::convolution(x, w, {}, {stride, stride}, {padding, padding}, {1, 1}, false, {0, 0}, 1);
    ctx->save_for_backward({x, w});
    ctx->saved_data["stride"] = stride;
    ctx->saved_data["padding"] = padding;
    ctx->saved_data["add"] = add;
    return {y, x};  // x as is: autograd returns a view of it whose history is this function
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const auto &x = s[0], &w = s[1];
    const int64_t stride = ctx->saved_data["stride"].toInt();
    const int64_t padding = ctx->saved_data["padding"].toInt();
    const auto add = static_cast<ShortcutAdd>(ctx->saved_data["add"].toInt());
    const auto cl = torch::MemoryFormat::ChannelsLast;
    // x's type, channels-last, 16-byte aligned (what the graph's tensors say), sharing its
    // memory with no other tensor (no view of it elsewhere sees the in-place sum): t itself where
    // it is, else a copy of it that is.
    const auto own = [&](const torch::Tensor& t) {
      return nhwc_like(t, x) && aligned(t) && t.storage().use_count() == 1
                 ? t
                 : torch::empty_like(x, cl).copy_(t);
    };
    // t channels-last and 16-byte aligned (copied where it is not).
    const auto aligned_nhwc = [&](const torch::Tensor& t) {
      auto c = t.contiguous(cl);
      return aligned(c) ? c : c.clone(cl);
    };
    // Both gradients are defined: autograd materializes a missing one as zeros (its default).
    const auto dy = aligned_nhwc(grads[0]);
    torch::Tensor dw, dx;
    if (ctx->needs_input_grad(1))
      dw = std::get<1>(at::convolution_backward(dy, x, w, c10::nullopt, {stride, stride},
                                                {padding, padding}, {1, 1}, false, {0, 0}, 1,
                                                {false, true, false}));
    if (ctx->needs_input_grad(0)) {
      const auto r = own(grads[1]);
      dx = add == ShortcutAdd::kBeta ? r : torch::empty_like(x, cl);
      data_gradient(dx, x, aligned_nhwc(w), dy, r, stride, padding, add);
      dx.unsafeGetTensorImpl()->bump_version();  // written behind autograd's back
    }
    return {dx, dw, {}, {}, {}};
  }
};

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
                                                          torch::nn::Conv2dImpl& conv,
                                                          bool add_in_epilogue) {
  FASTER_CHECK(conv_and_shortcut_applies(x, conv), "conv_and_shortcut does not apply");
  const auto& o = conv.options;
  // The weight in x's type, as autocast would hand it to the convolution (differentiable: its
  // gradient reaches the float32 weight).
  const auto w = conv.weight.to(x.scalar_type());
  const auto out = ConvShortcutFunction::apply(
      x, w, (*o.stride())[0], (**square_padding(o.padding()))[0],
      static_cast<int64_t>(add_in_epilogue ? ShortcutAdd::kEpilogue : ShortcutAdd::kBeta));
  return {out[0], out[1]};
}

}  // namespace faster::models

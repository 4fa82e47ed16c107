// max_pool on CUDA: max_pool.cu's kernels as LibTorch autograd functions, queued on the current
// stream (CUDA-graph capture records them like any LibTorch op); LibTorch's max_pool2d where they
// do not apply.
#include <c10/cuda/CUDAGuard.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include <cstdint>

#include "faster/models/cuda_tensor.h"
#include "faster/models/max_pool.h"
#include "faster/models/max_pool_kernels.h"

namespace faster::models {
namespace {
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

kernels::PoolShape shape_of(const torch::Tensor& x) {
  kernels::PoolShape s;
  s.n = x.size(0), s.c = x.size(1), s.h = x.size(2), s.w = x.size(3);
  kernels::element_type(x.scalar_type(), s.type);
  return s;
}

torch::Tensor aligned_channels_last(const torch::Tensor& t) {
  auto c = t.contiguous(torch::MemoryFormat::ChannelsLast);
  return aligned16(c) ? c : c.clone(torch::MemoryFormat::ChannelsLast);
}

// 2x2, stride 2: the input is kept, and each window's largest found again backward.
class MaxPool2x2Function : public torch::autograd::Function<MaxPool2x2Function> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x) {
    const c10::cuda::CUDAGuard on(x.device());  // the kernels read the SM count of the current one
    const auto s = shape_of(x);
    auto y = torch::empty({s.n, s.c, s.h / 2, s.w / 2},
                          x.options().memory_format(torch::MemoryFormat::ChannelsLast));
    kernels::max_pool2x2_forward(s, x.data_ptr(), y.data_ptr(), stream_of(x));
    ctx->save_for_backward({x});
    return y;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto x = ctx->get_saved_variables()[0];
    const c10::cuda::CUDAGuard on(x.device());
    const auto s = shape_of(x);
    const auto dy = aligned_channels_last(grads[0]);
    // An odd side leaves a last row or column outside every window: its gradient is 0.
    auto dx = s.h % 2 || s.w % 2 ? torch::zeros_like(x) : torch::empty_like(x);
    kernels::max_pool2x2_backward(s, x.data_ptr(), dy.data_ptr(), dx.data_ptr(), stream_of(x));
    return {dx};
  }
};

// Other windows: each output's place in its window is kept (a byte per value).
class MaxPoolFunction : public torch::autograd::Function<MaxPoolFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t kernel,
                               int64_t stride, int64_t padding) {
    const c10::cuda::CUDAGuard on(x.device());
    const auto s = shape_of(x);
    const kernels::Window win{static_cast<int>(kernel), static_cast<int>(stride),
                              static_cast<int>(padding)};
    const int64_t ho = win.out(s.h), wo = win.out(s.w);
    auto y = torch::empty({s.n, s.c, ho, wo},
                          x.options().memory_format(torch::MemoryFormat::ChannelsLast));
    auto where = torch::empty({s.n, ho, wo, s.c}, x.options().dtype(torch::kByte));
    kernels::max_pool_forward(s, win, x.data_ptr(), y.data_ptr(), where.data_ptr<uint8_t>(),
                              stream_of(x));
    ctx->save_for_backward({where});
    ctx->saved_data["shape"] = x.sizes().vec();
    ctx->saved_data["window"] = std::vector<int64_t>{kernel, stride, padding};
    return y;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto where = ctx->get_saved_variables()[0];
    const auto shape = ctx->saved_data["shape"].toIntVector();
    const auto w = ctx->saved_data["window"].toIntVector();
    const c10::cuda::CUDAGuard on(where.device());
    const auto dy = aligned_channels_last(grads[0]);
    auto dx = torch::empty(shape, dy.options().memory_format(torch::MemoryFormat::ChannelsLast));
    const kernels::Window win{static_cast<int>(w[0]), static_cast<int>(w[1]),
                              static_cast<int>(w[2])};
    kernels::max_pool_backward(shape_of(dx), win, where.data_ptr<uint8_t>(), dy.data_ptr(),
                               dx.data_ptr(), stream_of(dx));
    return {dx, {}, {}, {}};
  }
};

}  // namespace

bool max_pool_kernel_applies(const torch::Tensor& x, int kernel, int stride, int padding) {
  kernels::ElementType type;
  if (!x.defined() || !x.is_cuda() || x.dim() != 4 || !kernels::element_type(x.scalar_type(), type))
    return false;
  if (!x.is_contiguous(torch::MemoryFormat::ChannelsLast)) return false;
  // A tensor with c == 1 or 1x1 pixels is contiguous in both orders: the kernels need NHWC strides.
  if (x.stride(1) != 1) return false;
  if (kernel == 2 && stride == 2 && padding == 0)
    return kernels::max_pool2x2_supported(shape_of(x), x.data_ptr());
  return kernels::max_pool_supported(shape_of(x), {kernel, stride, padding}, x.data_ptr());
}

torch::Tensor max_pool(const torch::Tensor& x, int kernel, int stride, int padding) {
  if (!max_pool_kernel_applies(x, kernel, stride, padding))
    return torch::max_pool2d(x, kernel, stride, padding);
  if (kernel == 2 && stride == 2 && padding == 0) return MaxPool2x2Function::apply(x);
  return MaxPoolFunction::apply(x, kernel, stride, padding);
}

}  // namespace faster::models

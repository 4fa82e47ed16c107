// max_pool2x2 on CUDA: max_pool.cu's kernels as a LibTorch autograd function, queued on the current
// stream (CUDA-graph capture records them like any LibTorch op); LibTorch's max_pool2d where they
// do not apply.
#include <c10/cuda/CUDAGuard.h>
#include <torch/autograd.h>

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
    auto dy = grads[0].contiguous(torch::MemoryFormat::ChannelsLast);
    if (!aligned16(dy)) dy = dy.clone(torch::MemoryFormat::ChannelsLast);
    // An odd side leaves a last row or column outside every window: its gradient is 0.
    auto dx = s.h % 2 || s.w % 2 ? torch::zeros_like(x) : torch::empty_like(x);
    kernels::max_pool2x2_backward(s, x.data_ptr(), dy.data_ptr(), dx.data_ptr(), stream_of(x));
    return {dx};
  }
};

}  // namespace

bool max_pool2x2_kernel_applies(const torch::Tensor& x) {
  kernels::ElementType type;
  if (!x.defined() || !x.is_cuda() || x.dim() != 4 || !kernels::element_type(x.scalar_type(), type))
    return false;
  if (!x.is_contiguous(torch::MemoryFormat::ChannelsLast)) return false;
  // A tensor with c == 1 or 1x1 pixels is contiguous in both orders: the kernels need NHWC strides.
  return x.stride(1) == 1 && kernels::max_pool2x2_supported(shape_of(x), x.data_ptr());
}

torch::Tensor max_pool2x2(const torch::Tensor& x) {
  if (!max_pool2x2_kernel_applies(x)) return torch::max_pool2d(x, 2);
  return MaxPool2x2Function::apply(x);
}

}  // namespace faster::models

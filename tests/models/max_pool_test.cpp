// max_pool's CUDA kernels (CUDA builds, run on the GPU machine; skipped where no GPU is visible)
// against LibTorch's max_pool2d on the same device and input: the output and the input gradient
// bit for bit, SpeedNet's 2x2 windows at its three map sizes (28, 14 and the odd 7) and ResNet's
// 3x3 stride-2 padded stem pool (112 -> 56, odd sides, other windows), float/half/bfloat16, on
// inputs with many ties (a window's gradient goes to its first largest value; overlapping windows
// add theirs) and with NaNs; and the cases the kernels leave to LibTorch.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <limits>
#include <utility>

#include "faster/models/max_pool.h"
#include "support/test_support.h"

namespace faster::models {
namespace {

struct Case {
  int64_t n, c, h, w;
  torch::ScalarType type;
  int kernel = 2, stride = 2, padding = 0;
};

// Output and input gradient of `pool` for x (a leaf copy) and the output gradient g.
std::pair<torch::Tensor, torch::Tensor> run(const std::function<torch::Tensor(torch::Tensor)>& pool,
                                            const torch::Tensor& x, const torch::Tensor& g) {
  auto leaf = x.detach().clone(torch::MemoryFormat::ChannelsLast).requires_grad_(true);
  auto y = pool(leaf);
  y.backward(g);
  return {y.detach(), leaf.grad()};
}

void check_case(const Case& k, bool ties, bool nans) {
  SCOPED_TRACE(::testing::Message()
               << "n=" << k.n << " c=" << k.c << " " << k.h << "x" << k.w << " " << k.type
               << " window " << k.kernel << "/" << k.stride << "/" << k.padding
               << (ties ? " ties" : "") << (nans ? " NaNs" : ""));
  torch::manual_seed(3);
  const auto cl = torch::MemoryFormat::ChannelsLast;
  // Ties: values from {0, 1, 2}, so most windows hold their largest value more than once.
  auto x = ties ? torch::randint(0, 3, {k.n, k.c, k.h, k.w}, torch::kFloat)
                : torch::randn({k.n, k.c, k.h, k.w});
  if (nans) x.masked_fill_(torch::rand_like(x) < 0.01, std::numeric_limits<float>::quiet_NaN());
  x = x.to(k.type).to(torch::kCUDA).contiguous(cl);
  ASSERT_TRUE(max_pool_kernel_applies(x, k.kernel, k.stride, k.padding));
  const auto out = [&](int64_t side) { return (side + 2 * k.padding - k.kernel) / k.stride + 1; };
  const auto g =
      torch::randn({k.n, k.c, out(k.h), out(k.w)}).to(k.type).to(torch::kCUDA).contiguous(cl);
  const auto [y, dx] =
      run([&](torch::Tensor t) { return max_pool(t, k.kernel, k.stride, k.padding); }, x, g);
  const auto [y_ref, dx_ref] = run(
      [&](torch::Tensor t) { return torch::max_pool2d(t, k.kernel, k.stride, k.padding); }, x, g);
  EXPECT_EQ(y.sizes(), y_ref.sizes());
  EXPECT_TRUE(y.is_contiguous(cl));
  // Bit for bit, NaNs in the same places (equal_nan).
  EXPECT_TRUE(torch::allclose(y.to(torch::kFloat), y_ref.to(torch::kFloat), 0, 0, true));
  EXPECT_TRUE(torch::equal(dx.to(torch::kFloat), dx_ref.to(torch::kFloat)));
  if (k.kernel == 2 && k.h % 2) EXPECT_EQ(dx.select(2, k.h - 1).abs().sum().item<double>(), 0);
}

TEST(MaxPool2x2, MatchesLibTorchBitForBit) {
  SKIP_WITHOUT_GPU();
  for (const auto type : {torch::kBFloat16, torch::kHalf, torch::kFloat})
    for (const Case& k : {Case{8, 64, 28, 28, type}, Case{8, 128, 14, 14, type},
                          Case{8, 256, 7, 7, type}, Case{3, 16, 5, 8, type}})
      for (const bool ties : {false, true}) check_case(k, ties, false);
  check_case({4, 64, 28, 28, torch::kBFloat16}, false, true);
  check_case({4, 64, 28, 28, torch::kFloat}, true, true);
}

// ResNet's stem pool, 3x3 stride 2 padded by 1, and other windows the indexed kernels take.
TEST(MaxPool, WindowsMatchLibTorchBitForBit) {
  SKIP_WITHOUT_GPU();
  for (const auto type : {torch::kHalf, torch::kBFloat16, torch::kFloat}) {
    for (const Case& k : {Case{4, 64, 112, 112, type, 3, 2, 1}, Case{3, 16, 9, 7, type, 3, 2, 1},
                          Case{2, 32, 10, 10, type, 3, 1, 1}, Case{2, 16, 11, 13, type, 5, 3, 2},
                          Case{2, 16, 8, 8, type, 3, 2, 0}})
      for (const bool ties : {false, true}) check_case(k, ties, false);
    check_case({4, 64, 56, 56, type, 3, 2, 1}, true, true);
  }
}

// Under a CUDA graph (as the speedrun's step runs), replays give what eager calls give.
TEST(MaxPool2x2, ReplaysInACudaGraph) {
  SKIP_WITHOUT_GPU();
  const auto cl = torch::MemoryFormat::ChannelsLast;
  auto x = torch::randn({16, 64, 28, 28}, torch::kCUDA).to(torch::kBFloat16).contiguous(cl);
  auto y = torch::empty({16, 64, 14, 14}, x.options()).contiguous(cl);
  y.copy_(max_pool(x, 2, 2));  // once eagerly: the kernels are loaded before the capture
  torch::cuda::synchronize();
  at::cuda::CUDAGraph graph;
  auto stream = at::cuda::getStreamFromPool();
  {
    at::cuda::CUDAStreamGuard guard(stream);
    graph.capture_begin();
    y.copy_(max_pool(x, 2, 2));
    graph.capture_end();
  }
  for (int i = 0; i < 2; ++i) {
    x.copy_(torch::randn_like(x, torch::kFloat).to(torch::kBFloat16));
    graph.replay();
    EXPECT_TRUE(torch::equal(y, torch::max_pool2d(x, 2)));
  }
}

TEST(MaxPool2x2, LeavesOtherCasesToLibTorch) {
  SKIP_WITHOUT_GPU();
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  const auto cl = torch::MemoryFormat::ChannelsLast;
  for (const int kernel : {2, 3}) {
    const int stride = 2, padding = kernel / 2;
    SCOPED_TRACE(kernel);
    const auto applies = [&](const torch::Tensor& t) {
      return max_pool_kernel_applies(t, kernel, stride, padding);
    };
    EXPECT_FALSE(applies(torch::randn({2, 64, 8, 8}, cuda)));  // NCHW
    // 6 channels: not a multiple of a 16-byte pack (4 floats, 8 halves).
    EXPECT_FALSE(applies(torch::randn({2, 6, 8, 8}, cuda).contiguous(cl)));
    EXPECT_FALSE(applies(torch::randn({2, 12, 8, 8}, cuda.dtype(torch::kHalf)).contiguous(cl)));
    EXPECT_FALSE(applies(torch::randn({2, 64, 8, 8}, cuda.dtype(torch::kDouble)).contiguous(cl)));
    EXPECT_FALSE(applies(torch::randn({2, 64, 8, 8}).contiguous(cl)));  // CPU
    // Where they do not apply, the result is still max_pool2d's.
    const auto x = torch::randn({2, 12, 9, 9}, cuda);
    EXPECT_TRUE(torch::equal(max_pool(x, kernel, stride, padding),
                             torch::max_pool2d(x, kernel, stride, padding)));
  }
  // Windows beyond a byte's places, or padded past half the window.
  const auto x = torch::randn({2, 64, 40, 40}, cuda).contiguous(cl);
  EXPECT_FALSE(max_pool_kernel_applies(x, 16, 2, 0));
  EXPECT_FALSE(max_pool_kernel_applies(x, 3, 2, 2));
}

}  // namespace
}  // namespace faster::models

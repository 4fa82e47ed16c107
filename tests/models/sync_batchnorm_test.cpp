// SyncBatchNorm against LibTorch's BatchNorm2d: with one rank it must be the same function
// (forward, input/weight/bias gradients, running statistics), in double precision so that only
// rounding differs.  Two ranks against the combined batch are in ddp_test.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "faster/models/sync_batchnorm.h"

namespace faster::models {
namespace {

struct Result {
  torch::Tensor y, dx, dw, db, mean, var;
};

Result reference(const torch::Tensor& x0, const torch::Tensor& dy) {
  torch::nn::BatchNorm2d bn(x0.size(1));
  bn->to(torch::kDouble);
  bn->weight.data().uniform_(0.5, 1.5);
  bn->bias.data().uniform_(-0.5, 0.5);
  auto x = x0.clone().requires_grad_();
  auto y = bn->forward(x);
  y.backward(dy);
  return {y.detach(),      x.grad(),         bn->weight.grad(),
          bn->bias.grad(), bn->running_mean, bn->running_var};
}

TEST(SyncBatchNorm, OneRankIsBatchNorm2d) {
  torch::manual_seed(1);
  auto x0 = torch::randn({6, 5, 7, 7}, torch::kDouble) * 3 + 2;
  auto dy = torch::randn_like(x0);
  torch::manual_seed(2);
  const auto ref = reference(x0, dy);
  SyncBatchNorm2d sbn(5, [](torch::Tensor&) {});
  sbn->to(torch::kDouble);
  torch::manual_seed(2);
  sbn->weight.data().uniform_(0.5, 1.5);
  sbn->bias.data().uniform_(-0.5, 0.5);
  auto x = x0.clone().requires_grad_();
  auto y = sbn->forward(x);
  y.backward(dy);
  const double tol = 1e-10;  // double precision: the same formula up to rounding
  EXPECT_TRUE(torch::allclose(y, ref.y, tol, tol)) << (y - ref.y).abs().max();
  EXPECT_TRUE(torch::allclose(x.grad(), ref.dx, tol, tol)) << (x.grad() - ref.dx).abs().max();
  EXPECT_TRUE(torch::allclose(sbn->weight.grad(), ref.dw, tol, tol));
  EXPECT_TRUE(torch::allclose(sbn->bias.grad(), ref.db, tol, tol));
  EXPECT_TRUE(torch::allclose(sbn->running_mean, ref.mean, tol, tol));
  EXPECT_TRUE(torch::allclose(sbn->running_var, ref.var, tol, tol));
  EXPECT_EQ(sbn->num_batches_tracked.item<int64_t>(), 1);
}

}  // namespace
}  // namespace faster::models

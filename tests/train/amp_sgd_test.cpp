// The grad scaler (torch.cuda.amp.GradScaler semantics) and flat SGD (torch.optim.SGD semantics),
// each against a reference: LibTorch's own SGD, and the scaler rules written out step by step.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "faster/train/amp.h"
#include "faster/train/sgd.h"

namespace faster::train {
namespace {

std::vector<torch::Tensor> make_params(int64_t seed) {
  torch::manual_seed(seed);
  // A conv weight in channels_last layout exercises the flat buffer's stride handling.
  auto w = torch::randn({4, 3, 3, 3}).contiguous(torch::MemoryFormat::ChannelsLast);
  return {w.requires_grad_(), torch::randn({7}).requires_grad_(),
          torch::randn({2, 5}).requires_grad_()};
}

void set_grads(std::vector<torch::Tensor>& ps, int64_t step) {
  for (size_t i = 0; i < ps.size(); ++i) {
    torch::manual_seed(100 * step + i);
    ps[i].mutable_grad() = torch::randn(ps[i].sizes()).contiguous(ps[i].suggest_memory_format());
  }
}

void expect_same_as_torch_sgd(SgdOptions o) {
  auto mine = make_params(1), ref = make_params(1);
  FlatSgd sgd(mine, o);
  torch::optim::SGD torch_sgd(ref, torch::optim::SGDOptions(o.lr)
                                       .momentum(o.momentum)
                                       .weight_decay(o.weight_decay)
                                       .nesterov(o.nesterov));
  for (int64_t step = 0; step < 5; ++step) {
    set_grads(mine, step);
    set_grads(ref, step);
    sgd.step(sgd.flat_grad());
    torch_sgd.step();
  }
  for (size_t i = 0; i < mine.size(); ++i)
    EXPECT_TRUE(torch::allclose(mine[i], ref[i], 1e-6, 1e-6)) << "param " << i;
}

TEST(FlatSgd, MatchesTorchSgdWithMomentum) {
  expect_same_as_torch_sgd({0.1, 0.9, 0.0, false});
}
TEST(FlatSgd, MatchesTorchSgdWithNesterovAndWeightDecay) {
  expect_same_as_torch_sgd({0.05, 0.8, 1e-2, true});
}
TEST(FlatSgd, MatchesTorchSgdWithoutMomentum) {
  expect_same_as_torch_sgd({0.2, 0.0, 0.0, false});
}

TEST(FlatSgd, KeepsShapesAndLayoutsAndSkipsOnFoundInf) {
  auto ps = make_params(2);
  const auto before = ps[0].clone();
  FlatSgd sgd(ps, {0.1, 0.9, 0.0, false});
  EXPECT_TRUE(ps[0].is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::equal(ps[0], before));
  set_grads(ps, 0);
  const auto snapshot = sgd.flat_params().clone();
  sgd.step(sgd.flat_grad(), torch::ones({}));  // skipped: nothing moves
  EXPECT_TRUE(torch::equal(sgd.flat_params(), snapshot));
  sgd.step(sgd.flat_grad(), torch::zeros({}));
  EXPECT_FALSE(torch::equal(sgd.flat_params(), snapshot));
  sgd.zero_grad();
  for (const auto& p : ps) EXPECT_FALSE(p.grad().defined());
}

// A checkpoint's flat momentum written by a run of the other memory format (a --fast GPU run
// resumed without it, say) lands on the same values per parameter, both ways.
TEST(FlatSgd, ReordersAFlatBufferOfTheOtherMemoryFormat) {
  auto last = make_params(3);  // the conv weight channels-last
  std::vector<torch::Tensor> plain;
  for (const auto& p : last) plain.push_back(p.detach().contiguous().clone().requires_grad_());
  const FlatSgd cl(last, {0.1, 0.9, 0.0, false}), nchw(plain, {0.1, 0.9, 0.0, false});
  ASSERT_FALSE(torch::equal(cl.flat_params(), nchw.flat_params()));  // the orders differ
  auto buffer = nchw.flat_params().clone();
  cl.reorder_from(buffer, /*channels_last=*/false);
  EXPECT_TRUE(torch::equal(buffer, cl.flat_params()));
  buffer = cl.flat_params().clone();
  nchw.reorder_from(buffer, /*channels_last=*/true);
  EXPECT_TRUE(torch::equal(buffer, nchw.flat_params()));
}

TEST(GradScaler, InfGradientSkipsStepAndHalvesScale) {
  auto ps = make_params(3);
  FlatSgd sgd(ps, {0.1, 0.9, 0.0, false});
  GradScaler scaler(torch::kCPU, {1024.0, 2.0, 0.5, 3});
  set_grads(ps, 0);
  ps[1].mutable_grad()[3] = std::numeric_limits<float>::infinity();
  const auto snapshot = sgd.flat_params().clone();
  auto g = sgd.flat_grad();
  auto found = scaler.unscale_(g);
  EXPECT_EQ(found.item<float>(), 1.0f);
  sgd.step(g, found);
  scaler.update(found);
  EXPECT_TRUE(torch::equal(sgd.flat_params(), snapshot));
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 512.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  // NaN is treated the same way.
  set_grads(ps, 1);
  ps[2].mutable_grad()[0][0] = std::numeric_limits<float>::quiet_NaN();
  g = sgd.flat_grad();
  found = scaler.unscale_(g);
  scaler.update(found);
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 256.0);
}

TEST(GradScaler, FiniteStepsUnscaleAndGrowAfterInterval) {
  GradScaler scaler(torch::kCPU, {8.0, 2.0, 0.5, 3});
  auto loss = torch::tensor(1.5f);
  EXPECT_FLOAT_EQ(scaler.scale(loss).item<float>(), 12.0f);
  std::vector<double> scales;
  for (int step = 0; step < 7; ++step) {
    auto g = torch::full({4}, 16.0f);
    auto found = scaler.unscale_(g);
    EXPECT_EQ(found.item<float>(), 0.0f);
    EXPECT_FLOAT_EQ(g[0].item<float>(), 16.0f / float(scaler.current_scale()));
    scaler.update(found);
    scales.push_back(scaler.current_scale());
  }
  // Grows on the 3rd and 6th finite step in a row, as torch's _amp_update_scale_.
  EXPECT_EQ(scales, (std::vector<double>{8, 8, 16, 16, 16, 32, 32}));
  EXPECT_EQ(scaler.growth_tracker(), 1);
}

TEST(Autocast, Bf16ScopeOnCpuCastsMatmulsAndRestores) {
  auto a = torch::randn({8, 8}), b = torch::randn({8, 8});
  {
    AutocastScope scope(c10::DeviceType::CPU, Precision::kBFloat16);
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat);
  AutocastScope off(c10::DeviceType::CPU, Precision::kFloat32);
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat);
}

}  // namespace
}  // namespace faster::train

// SpeedNet: output shapes, state names (and the registry reading them back), its multiply-add
// count against a hand count, and the whitening stem against its definition.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "faster/core/error.h"
#include "faster/models/registry.h"
#include "faster/models/speednet.h"

namespace faster::models {
namespace {

TEST(SpeedNet, ShapesForFashionMnistAndCifar) {
  SpeedNet gray(SpeedNetOptions{});
  EXPECT_EQ(gray->forward(torch::randn({3, 1, 28, 28})).sizes(), (std::vector<int64_t>{3, 10}));
  SpeedNetOptions o;
  o.in_channels = 3, o.classes = 7, o.filters = {8, 16}, o.blocks = {0, 2};
  SpeedNet rgb(o);
  EXPECT_EQ(rgb->forward(torch::randn({2, 3, 32, 32})).sizes(), (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(o.min_input_size(), 4);
  rgb->eval();  // one 1x1 value per channel: BatchNorm needs its running statistics
  EXPECT_EQ(rgb->forward(torch::randn({1, 3, 4, 4})).sizes(), (std::vector<int64_t>{1, 7}));
}

TEST(SpeedNet, StateNamesAndTheRegistryReadsThemBack) {
  ModelOptions mo;
  mo.name = "speednet";
  mo.filters = {8, 16, 32}, mo.blocks = {1, 0, 2};
  auto m = make_model(mo);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& p : m->named_parameters()) shapes[p.key()] = p.value().sizes().vec();
  for (const auto& b : m->named_buffers()) shapes[b.key()] = b.value().sizes().vec();
  for (const char* name :
       {"stem.weight", "stem.bias", "stages.0.conv0.weight", "stages.0.bn0.weight",
        "stages.0.bn0.bias", "stages.0.bn0.running_mean", "stages.0.bn0.running_var",
        "stages.0.bn0.num_batches_tracked", "stages.0.conv1.weight", "stages.0.bn1.weight",
        "stages.1.conv0.weight", "stages.2.conv2.weight", "fc.weight"})
    EXPECT_TRUE(shapes.count(name)) << name;
  EXPECT_FALSE(shapes.count("fc.bias"));
  EXPECT_FALSE(shapes.count("stages.1.conv1.weight"));
  EXPECT_EQ(shapes["stem.weight"], (std::vector<int64_t>{18, 1, 3, 3}));
  EXPECT_EQ(shapes["stages.2.conv2.weight"], (std::vector<int64_t>{32, 32, 3, 3}));
  const auto back = infer_model_options(shapes, "test");
  EXPECT_EQ(back.name, "speednet");
  EXPECT_EQ(back.filters, mo.filters);
  EXPECT_EQ(back.blocks, mo.blocks);
  EXPECT_EQ(back.in_channels, 1);
  EXPECT_EQ(back.classes, 10);
  EXPECT_EQ(family("speednet"), Family::kSpeedNet);
  EXPECT_EQ(default_widths("speednet").filters, (std::vector<int>{64, 128, 256}));
  EXPECT_EQ(default_widths("thinnet").blocks, (std::vector<int>{3, 3, 2}));
}

// The count in speednet.h, by hand: stem 784*18*9; stage 1: 784*64*18*9 + 196*64*64*9; stage 2:
// 196*128*64*9 + 49*128*128*9; stage 3: 49*256*128*9 + 9*256*256*9; fc 256*10.
TEST(SpeedNet, MultiplyAddsOfTheDefaultNetAt28) {
  const int64_t hand = 784 * 18 * 9 + 784 * 64 * 18 * 9 + 196 * 64 * 64 * 9 + 196 * 128 * 64 * 9 +
                       49 * 128 * 128 * 9 + 49 * 256 * 128 * 9 + 9 * 256 * 256 * 9 + 256 * 10;
  EXPECT_EQ(speednet_macs(SpeedNetOptions{}, 28, 28), hand);
  EXPECT_EQ(hand, 56918560);
}

TEST(SpeedNet, RefusesBadWidths) {
  SpeedNetOptions o;
  o.blocks = {1, 1};
  EXPECT_THROW(SpeedNet{o}, Error);
  ModelOptions mo;
  mo.name = "speednet";
  mo.norm = Norm::kNone;
  EXPECT_THROW(make_model(mo), Error);
}

// Whitened: over the patches it was fitted on, the stem's first 9 outputs (before GELU) have mean 0
// and identity covariance; the other 9 are their negation.
TEST(SpeedNet, WhiteningStemDecorrelatesThePatches) {
  torch::manual_seed(1);
  // Correlated pixels: smoothed noise (neighbours share most of their value).
  auto images = torch::avg_pool2d(torch::rand({64, 1, 18, 18}), 3, 1);
  ModelOptions mo;
  mo.name = "speednet";
  auto m = make_model(mo);
  const auto set = init_from_data(m, images);
  ASSERT_EQ(set.size(), 2u);  // the stem's weight and bias
  EXPECT_TRUE(set[0].is_same(m->named_parameters()["stem.weight"]));
  EXPECT_TRUE(set[1].is_same(m->named_parameters()["stem.bias"]));
  auto& net = dynamic_cast<SpeedNetImpl&>(m.module());
  net.init_whitening(images, /*eps=*/1e-10);
  torch::NoGradGuard no_grad;
  auto params = m->named_parameters();
  const auto out =
      torch::conv2d(images.to(torch::kDouble), params["stem.weight"].to(torch::kDouble),
                    params["stem.bias"].to(torch::kDouble), 1, 1);
  const auto rows = out.permute({0, 2, 3, 1}).reshape({-1, 18});
  const auto first = rows.narrow(1, 0, 9);
  EXPECT_LT(first.mean(0).abs().max().item<double>(), 1e-3);
  const auto centered = first - first.mean(0);
  const auto cov = centered.t().mm(centered) / (first.size(0) - 1);
  EXPECT_LT((cov - torch::eye(9, cov.options())).abs().max().item<double>(), 1e-3);
  EXPECT_TRUE(torch::allclose(rows.narrow(1, 9, 9), -first, 1e-4, 1e-5));
  // ThinNet has no data-initialised layer.
  ModelOptions thin;
  auto t = make_model(thin);
  EXPECT_TRUE(init_from_data(t, images).empty());
}

// --stem-dims K keeps the K directions of largest variance: the stem is the full whitening's last K
// rows (ascending eigenvalues) and their negations, and the state names say K back.
TEST(SpeedNet, StemDimsKeepTheLargestVarianceDirections) {
  torch::manual_seed(2);
  const auto images = torch::avg_pool2d(torch::rand({32, 1, 18, 18}), 3, 1);
  ModelOptions mo;
  mo.name = "speednet";
  auto full = make_model(mo);
  mo.stem_dims = 4;
  auto four = make_model(mo);
  init_from_data(full, images);
  init_from_data(four, images);
  const auto w9 = full->named_parameters()["stem.weight"].view({18, 9});
  const auto w4 = four->named_parameters()["stem.weight"].view({8, 9});
  EXPECT_TRUE(torch::allclose(w4.narrow(0, 0, 4), w9.narrow(0, 5, 4), 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(w4.narrow(0, 4, 4), -w9.narrow(0, 5, 4), 1e-6, 1e-6));
  // The kept directions are those of largest variance (ascending order, the last 4 of 9): each
  // kept row is shorter than any dropped one (whitened rows are v / sqrt(lambda)).
  EXPECT_LT(w4.narrow(0, 0, 4).norm(2, 1).max().item<double>(),
            w9.narrow(0, 0, 5).norm(2, 1).min().item<double>() + 1e-9);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& p : four->named_parameters()) shapes[p.key()] = p.value().sizes().vec();
  EXPECT_EQ(infer_model_options(shapes, "test").stem_dims, 4);
  EXPECT_EQ(four.forward(images.narrow(0, 0, 2)).sizes(), (std::vector<int64_t>{2, 10}));
  mo.stem_dims = 10;  // a 3x3 patch of one channel has 9 values
  EXPECT_THROW(make_model(mo), Error);
}

}  // namespace
}  // namespace faster::models

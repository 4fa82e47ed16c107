// Device-side shift and flip against a per-pixel reference, its draws, and the device-resident
// loader serving every training image shifted and flipped by the draws of its index.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "faster/data/augment/shift_flip.h"
#include "faster/data/loader/loader.h"

namespace faster::data {
namespace {

// out[i, c, y, x] = image[i, c, y + dy - pad, x' + dx - pad], x' = flip ? W - 1 - x : x, and 0
// outside the image: the definition, one pixel at a time.
torch::Tensor reference(const torch::Tensor& images, const torch::Tensor& params, int pad) {
  const int64_t n = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  auto out = torch::zeros_like(images);
  auto in = images.accessor<uint8_t, 4>();
  auto o = out.accessor<uint8_t, 4>();
  auto p = params.accessor<int64_t, 2>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          const int64_t sy = y + p[i][0] - pad;
          const int64_t sx = (p[i][2] ? w - 1 - x : x) + p[i][1] - pad;
          if (sy >= 0 && sy < h && sx >= 0 && sx < w) o[i][ch][y][x] = in[i][ch][sy][sx];
        }
  return out;
}

TEST(ShiftFlip, EqualsThePerPixelDefinition) {
  torch::manual_seed(3);
  const auto images = torch::randint(1, 256, {40, 2, 5, 7}, torch::kLong).to(torch::kUInt8);
  for (int pad : {0, 1, 3}) {
    ShiftFlipOptions o{pad, true};
    std::vector<int64_t> idx(40);
    for (int64_t i = 0; i < 40; ++i) idx[i] = 100 + i;
    const auto params = shift_flip_params(idx, o, 7, 2);
    const auto padded = torch::constant_pad_nd(images, {pad, pad, pad, pad}, 0);
    EXPECT_TRUE(torch::equal(shift_flip(padded, params, pad), reference(images, params, pad)))
        << "pad " << pad;
  }
}

TEST(ShiftFlip, DrawsStayInRangeAndAreSeededPerEpochAndIndex) {
  std::vector<int64_t> idx(2000);
  for (int64_t i = 0; i < 2000; ++i) idx[i] = i;
  const auto a = shift_flip_params(idx, {2, true}, 1, 0);
  EXPECT_EQ(a.select(1, 0).min().item<int64_t>(), 0);
  EXPECT_EQ(a.select(1, 0).max().item<int64_t>(), 4);
  EXPECT_EQ(a.select(1, 1).max().item<int64_t>(), 4);
  const double flipped = a.select(1, 2).to(torch::kDouble).mean().item<double>();
  EXPECT_NEAR(flipped, 0.5, 0.05);
  EXPECT_TRUE(torch::equal(a, shift_flip_params(idx, {2, true}, 1, 0)));
  EXPECT_FALSE(torch::equal(a, shift_flip_params(idx, {2, true}, 1, 1)));  // another epoch
  // No flip asked: no flips; the shifts are the same draws.
  const auto b = shift_flip_params(idx, {2, false}, 1, 0);
  EXPECT_EQ(b.select(1, 2).sum().item<int64_t>(), 0);
  EXPECT_TRUE(torch::equal(b.narrow(1, 0, 2), a.narrow(1, 0, 2)));
}

// Alternating flips: epoch 0 flips as the random coin does; every odd epoch flips exactly the
// images that even epochs do not, so each image is seen both ways every two epochs; the shifts
// stay each epoch's own draws.
TEST(ShiftFlip, AlternatingFlipsInvertEpochZerosCoinInOddEpochs) {
  std::vector<int64_t> idx(2000);
  for (int64_t i = 0; i < 2000; ++i) idx[i] = i;
  ShiftFlipOptions alt{2, true, true};
  const auto coin = shift_flip_params(idx, {2, true}, 5, 0).select(1, 2);
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    const auto a = shift_flip_params(idx, alt, 5, epoch);
    const auto expected = epoch % 2 ? 1 - coin : coin;
    EXPECT_TRUE(torch::equal(a.select(1, 2), expected)) << epoch;
    EXPECT_TRUE(torch::equal(a.narrow(1, 0, 2),
                             shift_flip_params(idx, {2, true}, 5, epoch).narrow(1, 0, 2)))
        << epoch;
  }
  EXPECT_NEAR(coin.to(torch::kDouble).mean().item<double>(), 0.5, 0.05);
  // Without flips asked, none.
  EXPECT_EQ(shift_flip_params(idx, {2, false, true}, 5, 1).select(1, 2).sum().item<int64_t>(), 0);
}

TEST(ShiftFlip, DeviceLoaderServesEachImageWithTheDrawsOfItsIndex) {
  // 16 images whose pixels name them: image i holds i * 16 + k, k = 1..15 (the corner is 0).
  ArrayDataset d;
  d.n = 16, d.channels = 1, d.height = 4, d.width = 4, d.classes = 2;
  for (int64_t i = 0; i < d.n; ++i) {
    for (int k = 0; k < 16; ++k) d.images.push_back(static_cast<uint8_t>(k == 0 ? 0 : i * 16 + k));
    d.labels.push_back(i % 2);
  }
  LoaderOptions lo;
  lo.batch = 5;
  lo.sampler.seed = 9;
  lo.sampler.shuffle = true;
  lo.shift_flip = {1, true};
  auto loader = make_device_loader(d, lo);
  const auto all = torch::from_blob(d.images.data(), {16, 1, 4, 4}, torch::kUInt8);
  // In order (each epoch's draws made while the one before is served), restarted, and out of
  // order: each epoch's own draws whatever was asked before it.
  for (int64_t epoch : {0, 1, 1, 3, 2, 0}) {
    loader->start_epoch(epoch);
    std::set<int64_t> seen;
    while (auto b = loader->next()) {
      for (int64_t r = 0; r < b->size; ++r) {
        const auto img = b->images[r];
        const int64_t i = img.max().item<int64_t>() / 16;  // the pixels that remain name it
        seen.insert(i);
        const auto params = shift_flip_params({i}, lo.shift_flip, lo.sampler.seed, epoch);
        EXPECT_TRUE(torch::equal(img.unsqueeze(0), reference(all.narrow(0, i, 1), params, 1)))
            << "epoch " << epoch << " image " << i;
        EXPECT_EQ(b->labels[r].item<int64_t>(), i % 2);
      }
    }
    EXPECT_EQ(seen.size(), 16u);
  }
}

}  // namespace
}  // namespace faster::data

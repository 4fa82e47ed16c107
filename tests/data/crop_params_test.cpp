// Crop parameters follow torchvision's distribution: compared with the distribution computed by
// numerical integration of RandomResizedCrop's rejection sampling, with 4-sigma tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "faster/data/augment/crop_params.h"

namespace faster::data {
namespace {

// One try draws s ~ U(0.08, 1) (area fraction) and t ~ U(log 3/4, log 4/3) (log ratio); it is kept
// when the crop fits: s*r <= W/H and s/r <= H/W.  Integrates over a fine grid.
struct Analytic {
  double accept = 0, mean_s = 0, mean_t = 0, var_t = 0;
  std::vector<double> cdf_s;  // P(s <= 0.1 k | accepted), k = 1..10
};

Analytic integrate(double W, double H) {
  const int n = 1000;
  const double t0 = std::log(3.0 / 4), t1 = std::log(4.0 / 3);
  Analytic a;
  a.cdf_s.assign(10, 0);
  double mass = 0, ss = 0, st = 0, stt = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double s = 0.08 + 0.92 * (i + 0.5) / n, t = t0 + (t1 - t0) * (j + 0.5) / n;
      const double r = std::exp(t);
      if (s * r > W / H || s / r > H / W) continue;
      mass += 1, ss += s, st += t, stt += t * t;
      for (int k = 0; k < 10; ++k)
        if (s <= 0.1 * (k + 1)) a.cdf_s[k] += 1;
    }
  a.accept = mass / (double(n) * n);
  a.mean_s = ss / mass, a.mean_t = st / mass, a.var_t = stt / mass - (st / mass) * (st / mass);
  for (auto& c : a.cdf_s) c /= mass;
  return a;
}

TEST(CropParams, RandomResizedCropFollowsTorchvisionDistribution) {
  const int W = 1200, H = 900, N = 20000;
  const Analytic a = integrate(W, H);
  double ss = 0, st = 0;
  std::vector<double> cdf(10, 0);
  int fallbacks = 0;
  RandomResizedCropOptions o;
  for (int i = 0; i < N; ++i) {
    SampleRng rng(5, 0, i);
    bool fell_back;
    const Rect r = random_resized_crop(W, H, o, rng, &fell_back);
    ASSERT_TRUE(r.x >= 0 && r.y >= 0 && r.x + r.width <= W && r.y + r.height <= H);
    fallbacks += fell_back;
    const double s = double(r.width) * r.height / (double(W) * H);
    ss += s;
    st += std::log(double(r.width) / r.height);
    for (int k = 0; k < 10; ++k) cdf[k] += s <= 0.1 * (k + 1);
  }
  EXPECT_EQ(fallbacks, 0) << "with acceptance " << a.accept << " per try, 10 misses are ~1e-7";
  const double sd_s = 0.27, sd_t = std::sqrt(a.var_t);  // sd of U(0.08, 1) is 0.266
  EXPECT_NEAR(ss / N, a.mean_s, 4 * sd_s / std::sqrt(N));
  EXPECT_NEAR(st / N, a.mean_t, 4 * sd_t / std::sqrt(N) + 0.002);  // + rounding of w, h
  for (int k = 0; k < 10; ++k)  // binomial sd <= 0.5/sqrt(N) = 0.0035; 4 sd plus rounding
    EXPECT_NEAR(cdf[k] / N, a.cdf_s[k], 0.016) << "P(area fraction <= " << 0.1 * (k + 1) << ")";
}

// A 10:1 panorama rejects most tries, so the fallback is taken often: at the rate (1 - p)^10, and
// it is the central crop clamped to the largest allowed ratio (4/3).
TEST(CropParams, FallbackRateAndCenterCrop) {
  const int W = 2000, H = 200, N = 20000;
  const double p = integrate(W, H).accept;
  const double q = std::pow(1 - p, 10);
  int fallbacks = 0;
  for (int i = 0; i < N; ++i) {
    SampleRng rng(9, 1, i);
    bool fell_back;
    const Rect r = random_resized_crop(W, H, {}, rng, &fell_back);
    if (!fell_back) continue;
    ++fallbacks;
    EXPECT_EQ(r.width, 267);  // round(200 * 4/3)
    EXPECT_EQ(r.height, 200);
    EXPECT_EQ(r.x, (2000 - 267) / 2);
    EXPECT_EQ(r.y, 0);
  }
  EXPECT_GT(q, 0.05) << "the test needs a sizeable fallback rate";
  EXPECT_NEAR(double(fallbacks) / N, q, 4 * std::sqrt(q * (1 - q) / N) + 0.005);
  // A tall image falls back to ratio 3/4: width kept, height round(w / (3/4)).
  SampleRng rng(0, 0, 0);
  RandomResizedCropOptions never;
  never.tries = 0;
  const Rect tall = random_resized_crop(100, 1000, never, rng);
  EXPECT_EQ(tall.width, 100);
  EXPECT_EQ(tall.height, 133);
  EXPECT_EQ(tall.y, (1000 - 133) / 2);
}

TEST(CropParams, FlipIsAFairCoinAndDrawsAreReproducible) {
  const int N = 20000;
  int flips = 0;
  for (int i = 0; i < N; ++i) flips += train_crop(500, 375, {}, 3, 0, i).flip;
  EXPECT_NEAR(double(flips) / N, 0.5, 4 * 0.5 / std::sqrt(N));
  const TrainCrop a = train_crop(500, 375, {}, 3, 2, 17), b = train_crop(500, 375, {}, 3, 2, 17);
  EXPECT_TRUE(a.crop.x == b.crop.x && a.crop.y == b.crop.y && a.crop.width == b.crop.width &&
              a.flip == b.flip);
  int same = 0;
  for (int e = 0; e < 50; ++e) {
    const TrainCrop c = train_crop(500, 375, {}, 3, e + 3, 17);
    same += c.crop.x == a.crop.x && c.crop.width == a.crop.width && c.crop.y == a.crop.y;
  }
  EXPECT_LE(same, 1) << "other epochs draw other crops";
  // --flip off: no crop is mirrored, and the crops are those of a flipping run.
  RandomResizedCropOptions no_flip;
  no_flip.flip = false;
  for (int i = 0; i < 200; ++i) {
    const TrainCrop on = train_crop(500, 375, {}, 3, 0, i),
                    off = train_crop(500, 375, no_flip, 3, 0, i);
    EXPECT_FALSE(off.flip);
    EXPECT_TRUE(on.crop.x == off.crop.x && on.crop.y == off.crop.y &&
                on.crop.width == off.crop.width && on.crop.height == off.crop.height);
  }
}

// torchvision: Resize(256) of 500x375 gives 341x256; CenterCrop(224) at left 58, top 16.
TEST(CropParams, ValCenterCropMatchesTorchvision) {
  const RegionF r = center_crop_region(500, 375, 256, 224);
  const double sx = 500.0 / 341, sy = 375.0 / 256;
  EXPECT_NEAR(r.x, 58 * sx, 1e-9);
  EXPECT_NEAR(r.y, 16 * sy, 1e-9);
  EXPECT_NEAR(r.width, 224 * sx, 1e-9);
  EXPECT_NEAR(r.height, 224 * sy, 1e-9);
  const RegionF p = center_crop_region(375, 500, 256, 224);  // portrait: 256x341, top 58
  EXPECT_NEAR(p.y, 58 * 500.0 / 341, 1e-9);
  const Rect e = enclosing_rect(r, 500, 375);
  EXPECT_TRUE(e.x <= r.x && e.x + e.width >= r.x + r.width && e.width <= r.width + 2);
}

}  // namespace
}  // namespace faster::data

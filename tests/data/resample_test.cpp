// Resampler against references: a double-precision transcription of torchvision's crop-then-resize
// (antialias=True, PIL's formulas) and OpenCV's INTER_AREA; the store into a batch's slot against
// its definition.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "data/jpeg_fixtures.h"
#include "faster/data/augment/resample.h"
#include "faster/data/augment/store.h"

#ifdef FASTER_HAVE_OPENCV
#include <opencv2/imgproc.hpp>
#endif

namespace faster::data {
namespace {

// Reference: resize the (already cropped) image `src` to out_w x out_h the way torchvision does for
// antialias=True: triangle filter of support max(scale, 1), weights normalised per output pixel,
// taps clamped to the image, rounding once at the end.
std::vector<double> reference_weights(int in, int out, std::vector<int>& first) {
  const double scale = double(in) / out, fs = std::max(scale, 1.0), support = fs;
  std::vector<double> w(size_t(out) * in, 0.0);
  first.assign(out, 0);
  for (int i = 0; i < out; ++i) {
    const double center = (i + 0.5) * scale;
    const int lo = std::max(0, int(std::floor(center - support + 0.5)));
    const int hi = std::min(in, int(std::floor(center + support + 0.5)));
    double total = 0;
    for (int x = lo; x < hi; ++x)
      total += w[size_t(i) * in + x] = std::max(0.0, 1 - std::fabs((x + 0.5 - center) / fs));
    for (int x = lo; x < hi; ++x) w[size_t(i) * in + x] /= total;
  }
  return w;
}

void reference_antialias(const ImageView& src, ImageBuffer& dst, int out_w, int out_h) {
  std::vector<int> f;
  const auto wx = reference_weights(src.width, out_w, f),
             wy = reference_weights(src.height, out_h, f);
  dst.reshape(out_w, out_h, 3);
  for (int y = 0; y < out_h; ++y)
    for (int x = 0; x < out_w; ++x)
      for (int c = 0; c < 3; ++c) {
        double acc = 0;
        for (int sy = 0; sy < src.height; ++sy) {
          const double a = wy[size_t(y) * src.height + sy];
          if (a == 0) continue;
          for (int sx = 0; sx < src.width; ++sx)
            acc += a * wx[size_t(x) * src.width + sx] * src.row(sy)[sx * 3 + c];
        }
        dst.row(y)[x * 3 + c] = static_cast<uint8_t>(std::clamp(std::floor(acc + 0.5), 0.0, 255.0));
      }
}

// Tolerance 1 LSB: float accumulation against the double reference.
TEST(Resample, AntialiasMatchesTorchvisionCropThenResize) {
  ImageBuffer img, ref, got;
  test::photo(180, 140, img);
  Resampler r;
  const Rect crops[] = {{0, 0, 180, 140}, {13, 7, 120, 100}, {50, 20, 31, 90}, {3, 3, 20, 20}};
  for (const Rect& c : crops)
    for (auto [w, h] : {std::pair{56, 56}, std::pair{100, 37}, std::pair{64, 128}}) {
      reference_antialias(test::crop_view(img.view(), c.x, c.y, c.width, c.height), ref, w, h);
      got.reshape(w, h, 3);
      r.resample(img.view(), {double(c.x), double(c.y), double(c.width), double(c.height)},
                 got.mutable_view(), Filter::kAntialias);
      EXPECT_LE(test::max_abs_diff(got.view(), ref.view()), 1)
          << "crop " << c.x << "," << c.y << " " << c.width << "x" << c.height << " -> " << w << "x"
          << h;
    }
}

// Pixels outside the region never influence the result (crop-then-resize semantics).
// store_uint8 / store_float against their definition, pixel by pixel: output channel c of pixel
// (x, y) is source pixel (flip ? W-1-x : x, y), channel c (a gray source's one channel for each),
// at c*H*W + y*W + x (NCHW) or (y*W + x)*C + c (NHWC); odd widths, both layouts, both flips.
TEST(Store, EveryLayoutFlipAndChannelCountMatchesItsDefinition) {
  std::mt19937 rng(3);
  const Normalization norm;
  for (int width : {1, 7, 37, 224})
    for (int in : {1, 3})
      for (int out : {1, 3}) {
        if (in == 3 && out == 1) continue;  // not a conversion store makes
        const int height = 5;
        std::vector<uint8_t> pixels(size_t(width) * height * in);
        for (auto& v : pixels) v = static_cast<uint8_t>(rng());
        const ImageView src{pixels.data(), width, height, in, size_t(width) * in};
        for (Layout layout : {Layout::kNCHW, Layout::kNHWC})
          for (bool flip : {false, true}) {
            SCOPED_TRACE(::testing::Message() << width << " px, " << in << " -> " << out
                                              << (layout == Layout::kNCHW ? " nchw" : " nhwc")
                                              << (flip ? " flipped" : ""));
            std::vector<uint8_t> got(size_t(width) * height * out);
            std::vector<float> got_float(got.size());
            store_uint8(src, flip, layout, got.data(), out);
            store_float(src, flip, layout, norm, got_float.data(), out);
            for (int y = 0; y < height; ++y)
              for (int x = 0; x < width; ++x)
                for (int c = 0; c < out; ++c) {
                  const int sx = flip ? width - 1 - x : x;
                  const uint8_t want = pixels[(size_t(y) * width + sx) * in + (in == 1 ? 0 : c)];
                  const size_t at = layout == Layout::kNCHW ? (size_t(c) * height + y) * width + x
                                                            : (size_t(y) * width + x) * out + c;
                  ASSERT_EQ(got[at], want) << x << "," << y << " channel " << c;
                  ASSERT_NEAR(got_float[at], (want / 255.0 - norm.mean[c]) / norm.std[c], 1e-5);
                }
          }
      }
}

TEST(Resample, NeverReadsOutsideTheRegion) {
  ImageBuffer img, a, b;
  test::photo(100, 80, img);
  a.reshape(30, 20, 3);
  b.reshape(30, 20, 3);
  const RegionF region{10, 12, 60, 50};
  Resampler r;
  r.resample(img.view(), region, a.mutable_view(), Filter::kAntialias);
  for (int y = 0; y < 80; ++y)
    for (int x = 0; x < 100; ++x)
      if (x < 10 || x >= 70 || y < 12 || y >= 62) std::fill_n(img.row(y) + 3 * x, 3, 255);
  r.resample(img.view(), region, b.mutable_view(), Filter::kAntialias);
  EXPECT_EQ(test::max_abs_diff(a.view(), b.view()), 0);
}

TEST(Resample, SameSizeIsACopy) {
  ImageBuffer img, out;
  test::photo(64, 48, img);
  out.reshape(64, 48, 3);
  Resampler r;
  for (Filter f : {Filter::kAntialias, Filter::kArea}) {
    r.resample(img.view(), {0, 0, 64, 48}, out.mutable_view(), f);
    EXPECT_EQ(test::max_abs_diff(out.view(), img.view()), 0);
  }
}

#ifdef FASTER_HAVE_OPENCV
// INTER_AREA against OpenCV, integer and fractional factors.  Tolerance 1 LSB (OpenCV rounds its
// fixed-point/float sums slightly differently).
TEST(Resample, AreaMatchesOpenCvInterArea) {
  ImageBuffer img, got;
  test::photo(500, 375, img);
  const cv::Mat src(375, 500, CV_8UC3, img.data());
  Resampler r;
  for (auto [w, h] : {std::pair{250, 125}, std::pair{160, 120}, std::pair{213, 160},
                      std::pair{499, 374}, std::pair{37, 300}}) {
    cv::Mat ref;
    cv::resize(src, ref, cv::Size(w, h), 0, 0, cv::INTER_AREA);
    got.reshape(w, h, 3);
    r.resample(img.view(), {0, 0, 500, 375}, got.mutable_view(), Filter::kArea);
    const ImageView want{ref.data, w, h, 3, ref.step[0]};
    EXPECT_LE(test::max_abs_diff(got.view(), want), 1) << w << "x" << h;
  }
}
#endif

// Any factor: a 1,500-fold area downscale (faster resize --max-size 2 of a 3000-pixel-high photo;
// it once stopped at 500x with an internal check) averages each half exactly.
TEST(Resample, AreaDownscalesByAnyFactor) {
  ImageBuffer img, out;
  img.reshape(4, 3000, 1);
  for (int y = 0; y < 3000; ++y)
    for (int x = 0; x < 4; ++x) img.row(y)[x] = static_cast<uint8_t>(y < 1500 ? 10 : 200);
  out.reshape(2, 2, 1);
  Resampler().resample(img.view(), {0, 0, 4, 3000}, out.mutable_view(), Filter::kArea);
  for (int x = 0; x < 2; ++x) {
    EXPECT_EQ(out.row(0)[x], 10);
    EXPECT_EQ(out.row(1)[x], 200);
  }
}

TEST(Resample, GrayAndFourChannels) {
  for (int channels : {1, 4}) {
    ImageBuffer img, out;
    img.reshape(40, 30, channels);
    for (int y = 0; y < 30; ++y)
      for (int x = 0; x < 40 * channels; ++x) img.row(y)[x] = static_cast<uint8_t>(x * 3 + y);
    out.reshape(20, 15, channels);
    Resampler().resample(img.view(), {0, 0, 40, 30}, out.mutable_view(), Filter::kArea);
    // a 2x box average of a ramp: exact up to the 0.5 rounding
    for (int c = 0; c < channels; ++c) {
      const double want =
          (img.row(0)[c] + img.row(0)[channels + c] + img.row(1)[c] + img.row(1)[channels + c]) /
          4.0;
      EXPECT_NEAR(out.row(0)[c], want, 0.5 + 1e-9);
    }
  }
}

}  // namespace
}  // namespace faster::data

// JPEG decoder against libjpeg's own full decode: region-of-interest decoding, DCT scaling, colour
// spaces, and every kind of bad input the loader must survive.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "data/jpeg_fixtures.h"
#include "data/jpeg_mutations.h"
#include "faster/core/error.h"
#include "faster/data/augment/resample.h"
#include "faster/data/decode/jpeg_decoder.h"

namespace faster::data {
namespace {

using test::make_jpeg;

struct Layout {
  ChromaSubsampling sampling;
  bool progressive;
};

class RoiDecode : public ::testing::TestWithParam<Layout> {};

// Tolerance: exact.  The decoder keeps a margin of decoded pixels around the region, so chroma
// upsampling at the region's edges sees the same neighbours as in a full decode.
TEST_P(RoiDecode, EqualsCropOfFullDecode) {
  JpegEncodeOptions opts;
  opts.subsampling = GetParam().sampling;
  opts.progressive = GetParam().progressive;
  const auto jpeg = make_jpeg(333, 251, 3, opts);
  JpegDecoder decoder;
  ImageBuffer full, roi;
  decoder.decode_all(jpeg.data(), jpeg.size(), full);
  ASSERT_EQ(full.width(), 333);
  ASSERT_EQ(full.height(), 251);
  std::mt19937 rng(1);
  for (int t = 0; t < 40; ++t) {
    const int w = 1 + rng() % 333, h = 1 + rng() % 251;
    const Rect r{static_cast<int>(rng() % (334 - w)), static_cast<int>(rng() % (252 - h)), w, h};
    decoder.open(jpeg.data(), jpeg.size());
    const Decoded d = decoder.decode(r, 0, 0, roi);
    ASSERT_EQ(d.scale_num, 8);
    ASSERT_EQ(d.region.width, w);
    const int rx = static_cast<int>(d.region.x), ry = static_cast<int>(d.region.y);
    ASSERT_EQ(rx, d.region.x);
    EXPECT_LE(roi.width(), 333);
    const auto got = test::crop_view(roi.view(), rx, ry, w, h);
    const auto want = test::crop_view(full.view(), r.x, r.y, w, h);
    EXPECT_EQ(test::max_abs_diff(got, want), 0)
        << "roi " << r.x << "," << r.y << " " << w << "x" << h;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, RoiDecode,
                         ::testing::Values(Layout{ChromaSubsampling::k420, false},
                                           Layout{ChromaSubsampling::k444, false},
                                           Layout{ChromaSubsampling::k422, false},
                                           Layout{ChromaSubsampling::k420, true}));

// DCT-domain scaling then antialiased resize, against a full decode then the same resize: the
// scaled IDCT is a different (box-like) low-pass, so the bound is PSNR >= 30 dB, not equality.
TEST(JpegDecoder, DctScaledDecodeCloseToFullDecodePlusResize) {
  const auto jpeg = make_jpeg(500, 375);
  JpegDecoder decoder;
  Resampler resampler;
  ImageBuffer full, scaled, a, b;
  decoder.decode_all(jpeg.data(), jpeg.size(), full);
  const Rect rois[] = {{0, 0, 500, 375}, {37, 21, 400, 300}, {100, 50, 250, 260}};
  for (const Rect& r : rois) {
    for (int out : {64, 112}) {
      decoder.open(jpeg.data(), jpeg.size());
      const Decoded d = decoder.decode(r, out, out, scaled);
      EXPECT_LT(d.scale_num, 8) << "a region at least twice the output is DCT-scaled";
      EXPECT_GE(d.region.width, out);
      EXPECT_GE(d.region.height, out);
      a.reshape(out, out, 3);
      b.reshape(out, out, 3);
      resampler.resample(scaled.view(), d.region, a.mutable_view(), Filter::kAntialias);
      resampler.resample(full.view(), {double(r.x), double(r.y), double(r.width), double(r.height)},
                         b.mutable_view(), Filter::kAntialias);
      EXPECT_GE(test::psnr(a.view(), b.view()), 30.0)
          << "scale " << d.scale_num << "/8 out " << out;
    }
  }
}

TEST(JpegDecoder, ChoosesCoarsestScaleThatCoversOutput) {
  JpegDecoder pow2;
  EXPECT_EQ(pow2.choose_scale(500, 400, 224, 224), 8);  // < 2x: full scale
  EXPECT_EQ(pow2.choose_scale(448, 448, 224, 224), 4);
  EXPECT_EQ(pow2.choose_scale(900, 900, 224, 224), 2);
  EXPECT_EQ(pow2.choose_scale(1792, 2000, 224, 224), 1);
  EXPECT_EQ(pow2.choose_scale(1792, 2000, 0, 0), 8);
  JpegDecoderOptions any;
  any.power_of_two_scales = false;
  EXPECT_EQ(JpegDecoder(any).choose_scale(300, 300, 224, 224), 6);
}

TEST(JpegDecoder, HeaderInfo) {
  JpegEncodeOptions prog;
  prog.progressive = true;
  const auto jpeg = make_jpeg(40, 30, 3, prog);
  JpegDecoder decoder;
  const JpegInfo& info = decoder.open(jpeg.data(), jpeg.size());
  EXPECT_EQ(info.width, 40);
  EXPECT_EQ(info.height, 30);
  EXPECT_EQ(info.components, 3);
  EXPECT_EQ(info.color, JpegColor::kYCbCr);
  EXPECT_TRUE(info.progressive);
}

TEST(JpegDecoder, GrayscaleComesOutAsRgb) {
  const auto jpeg = make_jpeg(64, 48, 1);
  JpegDecoder decoder;
  ImageBuffer out;
  decoder.decode_all(jpeg.data(), jpeg.size(), out);
  EXPECT_EQ(decoder.info().color, JpegColor::kGray);
  ASSERT_EQ(out.channels(), 3);
  for (int y = 0; y < 48; ++y)
    for (int x = 0; x < 64; ++x) {
      const uint8_t* p = out.row(y) + 3 * x;
      ASSERT_TRUE(p[0] == p[1] && p[1] == p[2]) << x << "," << y;
    }
}

// With options.gray: one channel.  A gray file's samples as they are (its RGB decode repeats them);
// a colour file's luma, libjpeg's Y, within 2 grey levels of BT.601's luma of its RGB decode where
// that decode clipped nothing to 0 or 255 (the RGB values are rounded); CMYK within PSNR 30 dB of
// the same content as YCbCr.
TEST(JpegDecoder, GrayOutputIsTheLuma) {
  JpegDecoderOptions gray_options;
  gray_options.gray = true;
  JpegDecoder gray(gray_options), rgb;
  ImageBuffer g, c;
  const auto one = make_jpeg(64, 48, 1);
  gray.decode_all(one.data(), one.size(), g);
  rgb.decode_all(one.data(), one.size(), c);
  ASSERT_EQ(g.channels(), 1);
  for (int y = 0; y < 48; ++y)
    for (int x = 0; x < 64; ++x) ASSERT_EQ(g.row(y)[x], c.row(y)[3 * x]) << x << "," << y;
  const auto colour = make_jpeg(96, 64, 3);
  gray.decode_all(colour.data(), colour.size(), g);
  rgb.decode_all(colour.data(), colour.size(), c);
  ASSERT_EQ(g.channels(), 1);
  int worst = 0, compared = 0;
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 96; ++x) {
      const uint8_t* p = c.row(y) + 3 * x;
      if (*std::min_element(p, p + 3) == 0 || *std::max_element(p, p + 3) == 255) continue;
      const double luma = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
      worst = std::max(worst, static_cast<int>(std::lround(std::abs(g.row(y)[x] - luma))));
      ++compared;
    }
  EXPECT_LE(worst, 2);
  EXPECT_GT(compared, 96 * 64 / 4);
  // A region, DCT-scaled, of one channel too.
  gray.open(colour.data(), colour.size());
  EXPECT_EQ(gray.decode({10, 10, 64, 40}, 16, 10, g).scale_num, 2);
  EXPECT_EQ(g.channels(), 1);
  const auto cmyk = make_jpeg(96, 64, 4);
  ImageBuffer k;
  gray.decode_all(cmyk.data(), cmyk.size(), k);
  gray.decode_all(colour.data(), colour.size(), g);
  ASSERT_EQ(k.channels(), 1);
  EXPECT_GE(test::psnr(k.view(), g.view()), 30.0);
}

// An Adobe CMYK file encoding (r, g, b) as inverted CMYK without black decodes back to (r, g, b),
// up to JPEG loss: PSNR against the same content encoded as YCbCr at the same quality >= 30 dB.
TEST(JpegDecoder, CmykComesOutAsRgb) {
  const auto cmyk = make_jpeg(96, 64, 4);
  const auto rgb = make_jpeg(96, 64, 3);
  JpegDecoder decoder;
  ImageBuffer a, b;
  decoder.decode_all(cmyk.data(), cmyk.size(), a);
  EXPECT_EQ(decoder.info().color, JpegColor::kYcck);
  decoder.decode_all(rgb.data(), rgb.size(), b);
  ASSERT_EQ(a.channels(), 3);
  EXPECT_GE(test::psnr(a.view(), b.view()), 30.0);
  // and a region of it, DCT-scaled, works too
  decoder.open(cmyk.data(), cmyk.size());
  const Decoded d = decoder.decode({10, 10, 64, 40}, 16, 10, a);
  EXPECT_EQ(d.scale_num, 2);
}

void expect_refused(const std::vector<uint8_t>& bytes, const std::string& why) {
  JpegDecoder decoder;
  ImageBuffer out;
  try {
    decoder.decode_all(bytes.data(), bytes.size(), out);
    ADD_FAILURE() << "decoded without error; expected: " << why;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
  // The decoder stays usable after any failure.
  const auto good = make_jpeg(32, 24);
  decoder.decode_all(good.data(), good.size(), out);
  EXPECT_EQ(out.width(), 32);
}

TEST(JpegDecoder, RefusesBadInput) {
  expect_refused({}, "not a JPEG: an empty file");
  std::vector<uint8_t> random(5000);
  std::mt19937 rng(3);
  for (auto& b : random) b = static_cast<uint8_t>(rng());
  random[0] = 0x12;
  expect_refused(random, "not a JPEG");
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13};
  expect_refused(png, "a PNG image");
  auto jpeg = make_jpeg(200, 150);
  expect_refused({jpeg.begin(), jpeg.begin() + 100}, "corrupt JPEG");  // cut inside the headers
  expect_refused({jpeg.begin(), jpeg.begin() + jpeg.size() / 2}, "corrupt JPEG");  // in the data
  random[0] = 0xFF, random[1] = 0xD8;  // a JPEG signature followed by garbage
  expect_refused(random, "corrupt JPEG");
}

// A header claiming 60000x60000 is refused right after parsing the header: quickly, and before
// libjpeg allocates image-sized memory (which would take gigabytes).
TEST(JpegDecoder, RefusesDecompressionBomb) {
  for (bool progressive : {false, true}) {
    JpegEncodeOptions opts;
    opts.progressive = progressive;
    auto jpeg = make_jpeg(64, 64, 3, opts);
    test::patch_dimensions(jpeg, 60000, 60000);
    const auto start = std::chrono::steady_clock::now();
    expect_refused(jpeg, "decompression bomb");
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(ms, 200.0);
  }
}

// 9999x9999 is under the pixel cap, so a small file claiming it got as far as allocating for the
// claimed size before the data ran out (issue 16: 8 such files cost `load` 2.9 s and 449 MB).  A
// scan too short for the blocks its header claims is refused by open(), before any allocation.
TEST(JpegDecoder, RefusesHeadersClaimingMoreBlocksThanTheDataHolds) {
  double open_ms = 0;
  for (int channels : {1, 3})
    for (bool progressive : {false, true}) {
      JpegEncodeOptions opts;
      opts.progressive = progressive;
      opts.quality = 98;
      auto jpeg = make_jpeg(480, 360, channels, opts);
      ASSERT_GT(jpeg.size(), 50'000u);  // tens of KB, as in the issue
      test::patch_dimensions(jpeg, 9999, 9999);
      JpegDecoder decoder;
      const auto start = std::chrono::steady_clock::now();
      try {
        decoder.open(jpeg.data(), jpeg.size());
        ADD_FAILURE() << "opened " << channels << " channels, progressive " << progressive;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("claims 9999x9999 pixels"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("the file has " + std::to_string(jpeg.size())),
                  std::string::npos)
            << e.what();
      }
      open_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count();
    }
  // Headers only (microseconds each): nothing image-sized was allocated or zeroed.
  EXPECT_LT(open_ms, 40.0);
}

// 200 seeded mutations of two valid files (data/jpeg_mutations.h): each decodes whole at the size
// its header gives, or is refused with a faster::Error of one line; never a crash, another
// exception, or a decode slower than a second (a valid one takes about a millisecond).  A
// truncated file is always refused.  Memory: a mutated header can only claim what the block check
// lets a file of about 20 KB claim (a few megapixels: 40 MB at most for a progressive file's
// coefficients and pixels), so the peak grows by less than 64 MB.
TEST(JpegDecoder, DecodesOrRefusesEveryMutationQuickly) {
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  JpegDecoder decoder;
  ImageBuffer out;
  int decoded = 0, refused = 0;
  double slowest_ms = 0;
  for (uint32_t seed = 0; seed < test::kMutations; ++seed) {
    SCOPED_TRACE("mutation " + std::to_string(seed));
    const std::vector<uint8_t> bytes = test::mutate_jpeg(seed);
    const auto start = std::chrono::steady_clock::now();
    try {
      decoder.decode_all(bytes.data(), bytes.size(), out);
      EXPECT_EQ(out.width(), decoder.info().width);
      EXPECT_EQ(out.height(), decoder.info().height);
      EXPECT_EQ(out.channels(), 3);
      EXPECT_NE(test::mutation_kind(seed), test::Mutation::kTruncate);
      ++decoded;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_FALSE(what.empty());
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      ++refused;
    }
    slowest_ms =
        std::max(slowest_ms,
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  getrusage(RUSAGE_SELF, &after);
  EXPECT_EQ(decoded + refused, static_cast<int>(test::kMutations));
  EXPECT_GE(decoded, 20);  // both outcomes well represented: the mix tests both paths
  EXPECT_GE(refused, 20);
  EXPECT_LT(slowest_ms, 1000.0);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "KB";
}

// The bound is a true lower bound: with optimized Huffman tables a flat image spends exactly one
// bit on each block's DC and one on its end-of-block, and still opens and decodes.
TEST(JpegDecoder, FlatImagesAtTheMinimumBitsPerBlockDecode) {
  ImageBuffer flat, out;
  flat.reshape(1024, 1024, 3);
  for (int y = 0; y < 1024; ++y) std::fill(flat.row(y), flat.row(y) + 3 * 1024, uint8_t{128});
  for (bool progressive : {false, true}) {
    JpegEncodeOptions opts;
    opts.optimize_huffman = true;
    opts.progressive = progressive;
    std::vector<uint8_t> jpeg;
    JpegEncoder().encode(flat.view(), opts, jpeg);
    EXPECT_LT(jpeg.size(), 10'000u) << progressive;  // about 2 bits for each of 24576 blocks
    JpegDecoder decoder;
    decoder.decode_all(jpeg.data(), jpeg.size(), out);
    EXPECT_EQ(out.width(), 1024);
  }
}

TEST(JpegEncoder, ReusesOutputAndRoundTrips) {
  ImageBuffer img, out;
  test::photo(120, 80, img);
  JpegEncoder encoder;
  std::vector<uint8_t> bytes;
  JpegEncodeOptions q95;
  q95.quality = 95;
  encoder.encode(img.view(), q95, bytes);
  const auto* first = bytes.data();
  const size_t size95 = bytes.size();
  JpegEncodeOptions q50;
  q50.quality = 50;
  encoder.encode(img.view(), q50, bytes);
  EXPECT_EQ(bytes.data(), first) << "a smaller output reuses the vector's memory";
  EXPECT_LT(bytes.size(), size95);
  JpegDecoder decoder;
  decoder.decode_all(bytes.data(), bytes.size(), out);
  // Quality 50 on the synth texture (fine noise, the hardest content for JPEG): >= 20 dB.
  EXPECT_GE(test::psnr(out.view(), img.view()), 20.0);
  EXPECT_THROW(encoder.encode(img.view(), JpegEncodeOptions{0}, bytes), Error);
}

TEST(JpegEncoder, PlainEncodeAfterAnOptimizedOneIsTheSameAsAFreshEncoders) {
  ImageBuffer a, b;
  test::photo(96, 64, a, 1);
  test::photo(64, 48, b, 2);
  JpegEncodeOptions optimized, plain;
  optimized.optimize_huffman = true;
  std::vector<uint8_t> reused, fresh;
  JpegEncoder encoder;
  encoder.encode(a.view(), optimized, reused);
  encoder.encode(b.view(), plain, reused);  // once written with a's optimized tables: corrupt
  JpegEncoder().encode(b.view(), plain, fresh);
  EXPECT_EQ(reused, fresh);
  encoder.encode(b.view(), optimized, reused);
  JpegEncoder().encode(b.view(), optimized, fresh);
  EXPECT_EQ(reused, fresh);
}

}  // namespace
}  // namespace faster::data

// GPU decoding (CUDA builds, run on the GPU machine; skipped where no GPU is visible): the GPU
// crop/resize against Resampler on identical pixels, nvJPEG against libjpeg-turbo, and the
// loader with --decode nvjpeg against the CPU loader on the same seed, every kind of bad input
// (data/bad_jpegs.h) and the 200 seeded mutations included.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <iterator>

#include "data/image_trees.h"
#include "data/jpeg_fixtures.h"
#include "data/jpeg_mutations.h"
#include "faster/core/error.h"
#include "faster/data/augment/crop_resize_gpu.h"
#include "faster/data/loader/image_loader.h"
#include "support/test_support.h"

namespace faster::data {
namespace {

// Image i of a [n, 3, s, s] uint8 batch (any device) as an HWC buffer.
void to_hwc(const torch::Tensor& batch, int i, ImageBuffer& out) {
  const auto t = batch[i].permute({1, 2, 0}).contiguous().cpu();
  out.reshape(static_cast<int>(t.size(1)), static_cast<int>(t.size(0)), 3);
  std::memcpy(out.data(), t.data_ptr<uint8_t>(), t.numel());
}

struct Case {
  int width, height;
  RegionF region;
  bool flip;
};

const Case kCases[] = {
    {160, 120, {0, 0, 160, 120}, false},         // whole image, 2.5x / 1.9x down
    {160, 120, {17.5, 9.25, 61.0, 80.5}, true},  // fractional crop, flipped
    {97, 203, {3, 150, 40, 30}, false},          // upscaling crop
    {640, 480, {100, 40, 500, 420}, true},       // 7.8x down: wide support
};

// Same pixels in, the GPU kernel against Resampler + store_uint8: at most 1 level apart (float
// summation order), in both layouts.
TEST(GpuCropResize, MatchesResamplerOnTheSamePixels) {
  SKIP_WITHOUT_GPU();
  const int s = 64;
  for (bool nchw : {true, false}) {
    const int n = static_cast<int>(std::size(kCases));
    std::vector<torch::Tensor> sources;
    std::vector<GpuCrop> crops;
    std::vector<std::vector<uint8_t>> want;
    for (int i = 0; i < n; ++i) {
      const Case& c = kCases[i];
      ImageBuffer img, resized;
      test::photo(c.width, c.height, img, i);
      sources.push_back(
          torch::from_blob(img.data(), {c.height, c.width, 3}, torch::kUInt8).to(torch::kCUDA));
      GpuCrop g;
      g.src = sources.back().data_ptr<uint8_t>();
      g.width = c.width, g.height = c.height, g.pitch = 3 * c.width;
      g.x = c.region.x, g.y = c.region.y, g.w = c.region.width, g.h = c.region.height;
      g.flip = c.flip, g.position = i;
      crops.push_back(g);
      resized.reshape(s, s, 3);
      Resampler().resample(img.view(), c.region, resized.mutable_view(), Filter::kAntialias);
      want.emplace_back(3 * s * s);
      store_uint8(resized.view(), c.flip, nchw ? Layout::kNCHW : Layout::kNHWC, want.back().data());
    }
    auto dev = torch::from_blob(crops.data(), {int64_t(sizeof(GpuCrop) * n)}, torch::kUInt8)
                   .to(torch::kCUDA);
    auto out =
        torch::zeros({n, 3 * s * s}, torch::TensorOptions(torch::kUInt8).device(torch::kCUDA));
    crop_resize_gpu(reinterpret_cast<const GpuCrop*>(dev.data_ptr<uint8_t>()), n, s, nchw,
                    out.data_ptr<uint8_t>(), nullptr);
    const auto got = out.cpu();
    for (int i = 0; i < n; ++i) {
      const uint8_t* g = got[i].data_ptr<uint8_t>();
      int worst = 0;
      for (int k = 0; k < 3 * s * s; ++k) worst = std::max(worst, std::abs(g[k] - want[i][k]));
      EXPECT_LE(worst, 1) << "case " << i << " nchw " << nchw;
    }
  }
}

// nvJPEG + GPU resize against libjpeg-turbo + Resampler: different IDCTs and chroma upsampling,
// so not equal; PSNR at least 30 dB per image (measured values are printed).
TEST(NvjpegDecoder, CloseToTheCpuPipeline) {
  SKIP_WITHOUT_GPU();
  const int s = 64;
  JpegEncodeOptions s444;
  s444.subsampling = ChromaSubsampling::k444;
  std::vector<std::vector<uint8_t>> files = {
      test::make_jpeg(160, 120), test::make_jpeg(160, 120, 3, s444), test::make_jpeg(97, 203, 1),
      test::make_jpeg(640, 480)};
  NvjpegDecoder dec(torch::kCUDA, 8);
  std::printf("decoder: %s\n", dec.describe().c_str());
  std::vector<GpuJpeg> jobs;
  for (size_t i = 0; i < files.size(); ++i) {
    const Case& c = kCases[i];
    GpuJpeg j;
    j.data = files[i].data(), j.size = files[i].size();
    j.width = c.width, j.height = c.height, j.region = c.region, j.flip = c.flip;
    j.position = static_cast<int>(i);
    jobs.push_back(j);
  }
  std::vector<int> refused;
  auto out = dec.new_batch(static_cast<int>(jobs.size()), s, Layout::kNCHW);
  dec.decode(jobs, Layout::kNCHW, out, refused);
  EXPECT_TRUE(refused.empty());
  for (size_t i = 0; i < files.size(); ++i) {
    const Case& c = kCases[i];
    ImageBuffer full, resized, got;
    JpegDecoder().decode_all(files[i].data(), files[i].size(), full);
    resized.reshape(s, s, 3);
    Resampler().resample(full.view(), c.region, resized.mutable_view(), Filter::kAntialias);
    std::vector<uint8_t> chw(3 * s * s);
    store_uint8(resized.view(), c.flip, Layout::kNCHW, chw.data());
    const auto want = torch::from_blob(chw.data(), {1, 3, s, s}, torch::kUInt8);
    ImageBuffer a, b;
    to_hwc(want, 0, a);
    to_hwc(out, static_cast<int>(i), b);
    const double p = test::psnr(a.view(), b.view());
    std::printf("image %zu: PSNR %.1f dB, max diff %d\n", i, p,
                test::max_abs_diff(a.view(), b.view()));
    EXPECT_GE(p, 30.0) << "image " << i;
  }
  // A progressive file is refused (the CPU decodes it), the others still decode.
  JpegEncodeOptions prog;
  prog.progressive = true;
  files.push_back(test::make_jpeg(160, 120, 3, prog));
  GpuJpeg j = jobs[0];
  j.data = files.back().data(), j.size = files.back().size(), j.position = 4;
  jobs.push_back(j);
  auto nhwc = dec.new_batch(5, s, Layout::kNHWC);
  dec.decode(jobs, Layout::kNHWC, nhwc, refused);
  if (dec.hardware()) EXPECT_EQ(refused, std::vector<int>{4});
  // A decoder whose bound holds the first three images' pixels (with 256-byte alignment) but
  // not the 640x480 one leaves that one to the CPU; the others are decoded as before.
  jobs.pop_back();
  const size_t three = 2 * (160 * 120 * 3 + 256) + 97 * 203 * 3 + 256;
  NvjpegDecoder bounded(torch::kCUDA, 8, three);
  auto part = bounded.new_batch(4, s, Layout::kNCHW);
  bounded.decode(jobs, Layout::kNCHW, part, refused);
  EXPECT_EQ(refused, std::vector<int>{3});
  EXPECT_TRUE(torch::equal(part.narrow(0, 0, 3).cpu(), out.narrow(0, 0, 3).cpu()));
}

// A source that counts its reads: an image nvJPEG refuses must not be read from disk again.
class CountingSource : public Source {
 public:
  explicit CountingSource(std::shared_ptr<const Source> s) : s_(std::move(s)) {}
  int64_t size() const override { return s_->size(); }
  void get(int64_t i, Sample& out) const override {
    ++reads_;
    s_->get(i, out);
  }
  int label(int64_t i) const override { return s_->label(i); }
  const std::vector<std::string>& classes() const override { return s_->classes(); }
  std::string name(int64_t i) const override { return s_->name(i); }
  std::string describe() const override { return s_->describe(); }
  int64_t reads() const { return reads_; }

 private:
  std::shared_ptr<const Source> s_;
  mutable std::atomic<int64_t> reads_{0};
};

LoaderOptions small(DecodeOn decode) {
  LoaderOptions o;
  o.batch = 5, o.workers = 2, o.size = 32, o.val_resize = 40, o.val_size = 32;
  o.device = torch::Device(torch::kCUDA, 0);
  o.decode = decode;
  o.normalize_on_device = false;
  return o;
}

// Runs a CPU and an nvJPEG loader over `src` for two epochs and compares them: the same samples,
// labels and skips, and as many reads (a refused image is decoded from the bytes read before).
// `o` is both loaders' options (the nvJPEG fields only matter to the second).  Images are compared
// (PSNR at least 25 dB) unless `damaged` says the file is damaged: libjpeg and nvJPEG decode
// damaged bits to different pixels.  25 dB, not the decoder test's 30: the CPU decodes a large
// crop at a reduced DCT scale and nvJPEG at full size, so these 32 px outputs differ more
// (27.9-30+ dB measured on an H200, 2026-12-03); another image gives 10-15 dB.  Padding rows of
// the nvJPEG batches are zero, labelled kPadLabel.
template <typename Damaged>
void expect_loaders_agree(std::shared_ptr<const Source> source, LoaderOptions o, Damaged damaged) {
  auto cpu_src = std::make_shared<CountingSource>(source);
  auto gpu_src = std::make_shared<CountingSource>(source);
  LoaderOptions og = o;
  o.decode = DecodeOn::kCpu, og.decode = DecodeOn::kNvjpeg;
  ImageLoader cpu(cpu_src, o), gpu(gpu_src, og);
  for (int e = 0; e < 2; ++e) {
    cpu.start_epoch(e), gpu.start_epoch(e);
    int batches = 0;
    while (auto a = cpu.next()) {
      auto b = gpu.next();
      ASSERT_TRUE(b.has_value());
      ASSERT_EQ(a->indices, b->indices);
      ASSERT_EQ(a->images.sizes(), b->images.sizes());
      EXPECT_TRUE(torch::equal(a->labels.cpu(), b->labels.cpu()));
      for (int i = 0; i < b->size; ++i) {
        const std::string name = source->name(a->indices[i]);
        if (damaged(name)) continue;
        ImageBuffer x, y;
        to_hwc(a->images, i, x);
        to_hwc(b->images, i, y);
        EXPECT_GE(test::psnr(x.view(), y.view()), 25.0) << name;
      }
      const int64_t pad = b->images.size(0) - b->size;
      if (pad > 0) EXPECT_EQ(b->images.narrow(0, b->size, pad).count_nonzero().item<int64_t>(), 0);
      ++batches;
    }
    EXPECT_FALSE(gpu.next().has_value());
    EXPECT_GT(batches, 0);
  }
  EXPECT_EQ(cpu.stats().skipped, gpu.stats().skipped);
  EXPECT_EQ(cpu.stats().images, gpu.stats().images);
  EXPECT_EQ(cpu.stats().bytes, gpu.stats().bytes);
  EXPECT_EQ(cpu_src->reads(), gpu_src->reads());
  EXPECT_GT(gpu.stats().gpu_images, 0);
}

LoaderOptions agree_options(bool train, double cpu_share) {
  LoaderOptions o = small(DecodeOn::kNvjpeg);
  o.transform = train ? Transform::kTrain : Transform::kVal;
  o.cpu_share.value = cpu_share;
  return o;
}

// Same seed, same crops: the nvJPEG loader delivers the same samples, labels and skips as the CPU
// loader, and images within 30 dB PSNR, on a tree with every kind of bad input of bad_jpegs.h
// (b/: refused, e/: damaged bits that decode) and unusual valid files.
TEST(NvjpegLoader, AgreesWithTheCpuLoader) {
  SKIP_WITHOUT_GPU();
  test::TempDir t;
  int bad;
  test::make_bad_tree(t.path(), bad);
  auto src = test::make_tree(t.path(), 2, 6);  // classes c0, c1 beside the bad tree's a..e
  const auto damaged = [](const std::string& name) {
    return name.find("/e/") != std::string::npos;
  };
  for (bool train : {true, false})
    expect_loaders_agree(src, agree_options(train, train ? 0.3 : 0.0), damaged);
}

// The 200 seeded mutations of data/jpeg_mutations.h (flipped bits, replaced, inserted and deleted
// bytes, truncation; baseline and progressive) beside valid files: both loaders skip the same.
TEST(NvjpegLoader, AgreesOnEveryMutation) {
  SKIP_WITHOUT_GPU();
  test::TempDir t;
  for (uint32_t seed = 0; seed < test::kMutations; ++seed) {
    const auto bytes = test::mutate_jpeg(seed);
    std::filesystem::create_directories(t / "m");
    test::write_file(t / "m" / (std::to_string(seed) + ".jpg"),
                     std::string(bytes.begin(), bytes.end()));
  }
  auto src = test::make_tree(t.path(), 2, 20);
  const auto damaged = [](const std::string& name) {
    return name.find("/m/") != std::string::npos;
  };
  expect_loaders_agree(src, agree_options(/*train=*/true, 0.0), damaged);
}

// A batch's GPU work is split into parts, one per stage thread: with three threads on batches of
// 5 over 12 images, the last batch (2 images, padded to 5) has two empty parts; on batches of 2,
// every batch has an empty part (more parts than images).  The loaders agree as above, padding
// included (the labels: kPadLabel in both).
TEST(NvjpegLoader, PadsTheLastBatchAcrossParts) {
  SKIP_WITHOUT_GPU();
  test::TempDir t;
  auto src = test::make_tree(t.path(), 2, 6);
  for (int batch : {5, 2}) {
    LoaderOptions o = agree_options(/*train=*/false, 0.0);
    o.batch = batch;
    o.last_batch = LastBatch::kPad;
    o.gpu_stages = 3;
    expect_loaders_agree(src, o, [](const std::string&) { return false; });
  }
}

TEST(NvjpegLoader, NeedsACudaDevice) {
  test::TempDir t;
  auto src = test::make_tree(t.path(), 1, 2);
  LoaderOptions o = small(DecodeOn::kNvjpeg);
  o.device = torch::kCPU;
  EXPECT_THROW(ImageLoader loader(src, o), Error);
}

}  // namespace
}  // namespace faster::data

// ImageLoader end to end on generated folders: output equals the pipeline run by hand, shards cover
// every sample once, bad images are skipped (counted, labels right) or fail, memory stays flat.
#include <gtest/gtest.h>
#include <malloc.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <thread>

#include "data/image_trees.h"
#include "data/jpeg_fixtures.h"
#include "faster/core/error.h"
#include "faster/core/timer.h"
#include "faster/data/loader/image_loader.h"
#include "faster/data/sources/array_source.h"
#include "faster/data/sources/folder_source.h"
#include "support/test_support.h"

namespace faster::data {
namespace {
namespace fs = std::filesystem;
using test::make_bad_tree;
using test::make_tree;

LoaderOptions small(int batch, int workers) {
  LoaderOptions o;
  o.batch = batch, o.workers = workers, o.size = 32, o.val_resize = 40, o.val_size = 32;
  return o;
}

std::vector<Batch> epoch(ImageLoader& loader, int64_t e) {
  std::vector<Batch> out;
  loader.start_epoch(e);
  while (auto b = loader.next()) {
    b->images = b->images.clone();  // the ring is reused by the next call
    b->labels = b->labels.clone();
    out.push_back(std::move(*b));
  }
  return out;
}

// The same sample through decoder + resampler + store by hand (exact: same code, same order).
// `draw`: the sampler's (a repetition's crop is keyed by it; -1: the index itself).
std::vector<uint8_t> by_hand(const Source& src, int64_t index, const LoaderOptions& o, int64_t e,
                             int64_t draw = -1) {
  Sample s;
  src.get(index, s);
  JpegDecoder dec;
  const JpegInfo& info = dec.open(s.bytes.data(), s.bytes.size());
  const bool train = o.transform == Transform::kTrain;
  const int side = train ? o.size : o.val_size;
  RegionF want;
  bool flip = false;
  if (train) {
    const TrainCrop t =
        train_crop(info.width, info.height, o.rrc, o.sampler.seed, e, draw < 0 ? index : draw);
    want = {double(t.crop.x), double(t.crop.y), double(t.crop.width), double(t.crop.height)};
    flip = t.flip;
  } else {
    want = center_crop_region(info.width, info.height, o.val_resize, o.val_size);
  }
  const Rect roi = enclosing_rect(want, info.width, info.height);
  ImageBuffer decoded, out;
  const Decoded d = dec.decode(roi, side, side, decoded);
  const double k = d.scale_num / 8.0;
  out.reshape(side, side, 3);
  Resampler().resample(decoded.view(),
                       {d.region.x + (want.x - roi.x) * k, d.region.y + (want.y - roi.y) * k,
                        want.width * k, want.height * k},
                       out.mutable_view(), o.filter);
  std::vector<uint8_t> chw(3 * side * side);
  store_uint8(out.view(), flip, Layout::kNCHW, chw.data());
  return chw;
}

TEST(ImageLoader, OutputEqualsThePipelineByHand) {
  test::TempDir t;
  auto src = make_tree(t.path(), 3, 4);
  for (bool train : {true, false}) {
    LoaderOptions o = small(5, 2);
    o.transform = train ? Transform::kTrain : Transform::kVal;
    ImageLoader loader(src, o);
    for (const Batch& b : epoch(loader, 1)) {
      ASSERT_EQ(b.images.dtype(), torch::kUInt8);
      for (int i = 0; i < b.images.size(0); ++i) {
        const auto want = by_hand(*src, b.indices[i], o, 1);
        const auto got = b.images[i].contiguous();
        ASSERT_EQ(std::memcmp(got.data_ptr<uint8_t>(), want.data(), want.size()), 0)
            << "train " << train << " index " << b.indices[i];
        EXPECT_EQ(b.labels[i].item<int64_t>(), src->label(b.indices[i]));
      }
    }
  }
}

// torchvision's repeated-augmentation sampler (--ra-sampler): the epoch is the sampler's order,
// each image's repetitions in a row, each in its own crop (keyed by its draw), exactly as by hand.
TEST(ImageLoader, RepeatedAugmentationGivesEachRepetitionItsOwnCrop) {
  test::TempDir t;
  auto src = make_tree(t.path(), 4, 70, /*near_square=*/true);  // 280: an epoch keeps 256
  LoaderOptions o = small(32, 2);
  o.transform = Transform::kTrain;
  o.sampler.repetitions = 3;
  ImageLoader loader(src, o);
  const auto draws = Sampler(src->size(), o.sampler).indices(2);
  ASSERT_EQ(draws.size(), 256u);
  std::vector<torch::Tensor> images;
  int64_t p = 0;
  for (const Batch& b : epoch(loader, 2))
    for (int i = 0; i < b.images.size(0); ++i, ++p) {
      ASSERT_LT(p, 256);
      const int64_t index = draws[p] % src->size();
      ASSERT_EQ(b.indices[i], index) << p;
      EXPECT_EQ(b.labels[i].item<int64_t>(), src->label(index));
      const auto want = by_hand(*src, index, o, 2, draws[p]);
      const auto got = b.images[i].contiguous();
      ASSERT_EQ(std::memcmp(got.data_ptr<uint8_t>(), want.data(), want.size()), 0) << p;
      images.push_back(got);
    }
  EXPECT_EQ(p, 256);
  // Three repetitions of one image in a row, in three crops (a crop repeated by chance is rare:
  // at most 2 of the 85 whole runs allowed).
  int same = 0;
  for (int64_t k = 0; k + 2 < 256; k += 3) {
    EXPECT_EQ(draws[k] % src->size(), draws[k + 2] % src->size()) << k;
    same += torch::equal(images[k], images[k + 1]) || torch::equal(images[k + 1], images[k + 2]);
  }
  EXPECT_LE(same, 2);
}

// float output = (uint8 / 255 - mean) / std, and NHWC is NCHW permuted (tolerance 1e-5).
TEST(ImageLoader, FloatAndLayoutsAgree) {
  test::TempDir t;
  auto src = make_tree(t.path(), 2, 3);
  LoaderOptions o = small(6, 2);
  ImageLoader u8(src, o);
  o.output = OutputType::kFloat, o.layout = Layout::kNHWC;
  ImageLoader f32(src, o);
  const auto a = epoch(u8, 0), b = epoch(f32, 0);
  ASSERT_EQ(a.size(), b.size());
  const auto mean = torch::tensor({0.485f, 0.456f, 0.406f}).view({1, 3, 1, 1});
  const auto sd = torch::tensor({0.229f, 0.224f, 0.225f}).view({1, 3, 1, 1});
  for (size_t i = 0; i < a.size(); ++i) {
    const auto want = (a[i].images.to(torch::kFloat32) / 255 - mean) / sd;
    EXPECT_TRUE(torch::allclose(b[i].images.permute({0, 3, 1, 2}), want, 1e-5, 1e-5));
  }
}

// The device-side normalization the loader, the step and --whiten share, against its definition
// ((x / 255 - mean) / std of the float pixel), in both layouts, gray and RGB.
TEST(PixelNormalizer, EqualsItsDefinitionInBothLayouts) {
  Normalization norm;
  norm.mean[0] = 0.5f, norm.mean[1] = 0.25f, norm.mean[2] = 0.125f;
  norm.std[0] = 0.2f, norm.std[1] = 0.4f, norm.std[2] = 0.8f;
  EXPECT_FALSE(PixelNormalizer().defined());
  const auto pixels = torch::arange(0, 2 * 3 * 4 * 5).remainder(256).to(torch::kUInt8);
  for (int channels : {1, 3}) {
    const auto mean = torch::tensor(std::vector<float>(norm.mean, norm.mean + channels));
    const auto sd = torch::tensor(std::vector<float>(norm.std, norm.std + channels));
    const auto nchw = pixels.narrow(0, 0, 2 * channels * 20).view({2, channels, 4, 5});
    const auto want = (nchw.to(torch::kFloat32) / 255 - mean.view({1, channels, 1, 1})) /
                      sd.view({1, channels, 1, 1});
    const PixelNormalizer as_nchw(norm, channels, Layout::kNCHW, torch::kCPU);
    ASSERT_TRUE(as_nchw.defined());
    const auto got = as_nchw(nchw);
    EXPECT_EQ(got.scalar_type(), torch::kFloat32);
    EXPECT_TRUE(torch::allclose(got, want, 1e-6, 1e-5)) << channels << " channels, NCHW";
    EXPECT_EQ(nchw.scalar_type(), torch::kUInt8);  // the input is left as it was
    const PixelNormalizer as_nhwc(norm, channels, Layout::kNHWC, torch::kCPU);
    const auto nhwc = nchw.permute({0, 2, 3, 1}).contiguous();
    EXPECT_TRUE(torch::allclose(as_nhwc(nhwc).permute({0, 3, 1, 2}), want, 1e-6, 1e-5))
        << channels << " channels, NHWC";
  }
}

// On a GPU the uint8 batch is normalized by one kernel where the channel is innermost in memory
// (NHWC, the NCHW view of it the step takes): the same values as the CPU's float ops, bit for bit
// in float32, and those rounded once (to nearest) in fp16 and bf16; an NCHW batch takes the ops.
TEST(PixelNormalizer, OnTheGpuEqualsTheCpuRoundedOnce) {
  SKIP_WITHOUT_GPU();
  Normalization norm;
  norm.mean[0] = 0.485f, norm.mean[1] = 0.456f, norm.mean[2] = 0.406f;
  norm.std[0] = 0.229f, norm.std[1] = 0.224f, norm.std[2] = 0.225f;
  const auto nhwc = torch::randint(256, {4, 7, 9, 3}, torch::kUInt8);
  const PixelNormalizer cpu(norm, 3, Layout::kNCHW, torch::kCPU);
  const auto want = cpu(nhwc.permute({0, 3, 1, 2}));  // float32, NCHW view of NHWC memory
  for (const auto type : {torch::kFloat32, torch::kHalf, torch::kBFloat16}) {
    SCOPED_TRACE(::testing::Message() << type);
    const PixelNormalizer gpu(norm, 3, Layout::kNCHW, torch::kCUDA, type);
    const auto view = nhwc.to(torch::kCUDA).permute({0, 3, 1, 2});
    const auto got = gpu(view);
    EXPECT_EQ(got.scalar_type(), type);
    EXPECT_TRUE(got.is_contiguous(torch::MemoryFormat::ChannelsLast));
    EXPECT_TRUE(torch::equal(got.cpu(), want.to(type)));
    const auto nchw = gpu(view.contiguous());  // channel outermost: LibTorch's ops
    EXPECT_TRUE(torch::equal(nchw.cpu(), want.to(type)));
    const PixelNormalizer gpu_nhwc(norm, 3, Layout::kNHWC, torch::kCUDA, type);
    EXPECT_TRUE(
        torch::equal(gpu_nhwc(nhwc.to(torch::kCUDA)).cpu(), want.permute({0, 2, 3, 1}).to(type)));
  }
}

// A CUDA device fed by the CPU workers: each batch's copy runs on its own stream, so next() waits
// for none of the steps queued before it, and a batch's memory is not handed to a later copy while
// work queued on it is still to run.
TEST(ImageLoader, OnAGpuCopiesNeitherWaitForTheStepsNorOverwriteTheirBatches) {
  SKIP_WITHOUT_GPU();
  test::TempDir t;
  auto src = make_tree(t.path(), 4, 12);
  LoaderOptions o = small(8, 2);
  ImageLoader cpu(src, o);
  const auto want = epoch(cpu, 0);
  o.device = torch::kCUDA, o.normalize_on_device = false;
  ImageLoader gpu(src, o);
  // Work that keeps the GPU busy for a while (float32 products of 4096 x 4096), timed alone.
  const auto m = torch::randn({4096, 4096}, torch::kCUDA).div_(64);
  const auto busy = [&] {
    auto x = m;
    for (int i = 0; i < 40; ++i) x = torch::mm(x, m);
    return x;
  };
  busy().sum().item<float>();
  const Timer alone;
  busy().sum().item<float>();
  const double busy_s = alone.seconds();
  gpu.start_epoch(0);
  std::vector<torch::Tensor> sums;
  size_t i = 0;
  std::optional<Batch> b = gpu.next();
  while (b) {
    ASSERT_LT(i, want.size());
    EXPECT_TRUE(torch::equal(b->images.cpu(), want[i].images)) << "batch " << i;
    EXPECT_TRUE(torch::equal(b->labels.cpu(), want[i].labels)) << "batch " << i;
    if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the ring fills
    // Its sum queued behind the busy work, then the batch dropped: a later copy into its memory
    // before the sum ran would change the sum.
    const auto work = busy();
    sums.push_back(b->images.to(torch::kLong).sum() + work.sum().mul(0).to(torch::kLong));
    b.reset();
    const Timer asking;
    b = gpu.next();
    if (i == 0 && b) {  // two batches, while the busy work runs: not waited for
      auto held = std::move(b);
      b = gpu.next();
      EXPECT_LT(asking.seconds(), busy_s / 2) << "next() waited for the GPU's earlier work";
      sums.push_back(held->images.to(torch::kLong).sum());
      ++i;
      EXPECT_TRUE(torch::equal(held->images.cpu(), want[i].images)) << "batch " << i;
    }
    ++i;
  }
  EXPECT_EQ(i, want.size());
  ASSERT_EQ(sums.size(), want.size());
  for (size_t k = 0; k < sums.size(); ++k)
    EXPECT_EQ(sums[k].item<int64_t>(), want[k].images.to(torch::kLong).sum().item<int64_t>())
        << "batch " << k;
}

// torch DistributedSampler semantics: with drop_tail every sample exactly once across ranks;
// padded, every sample at least once and only the padding repeated.  Also batches are identical
// whatever the number of workers.
TEST(ImageLoader, ShardsCoverEverySampleOncePerEpoch) {
  test::TempDir t;
  auto src = make_tree(t.path(), 3, 8);  // 24 samples
  for (bool drop_tail : {true, false}) {
    const int world = drop_tail ? 3 : 5;
    std::multiset<int64_t> seen;
    for (int rank = 0; rank < world; ++rank) {
      LoaderOptions o = small(4, 2);
      o.sampler = {rank, world, 11, true, drop_tail};
      ImageLoader loader(src, o);
      for (const Batch& b : epoch(loader, 2)) seen.insert(b.indices.begin(), b.indices.end());
    }
    const size_t expect = drop_tail ? 24 : 25;  // ceil(24 / 5) * 5
    EXPECT_EQ(seen.size(), expect);
    for (int64_t i = 0; i < 24; ++i) EXPECT_GE(seen.count(i), 1u) << i;
    if (drop_tail)
      for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
  }
  LoaderOptions o = small(5, 1);
  ImageLoader one(src, o);
  o.workers = 3;
  ImageLoader three(src, o);
  const auto a = epoch(one, 4), b = epoch(three, 4);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i].images, b[i].images));
}

TEST(ImageLoader, SkipsBadImagesCountedWithRightLabels) {
  test::TempDir t;
  int bad;
  auto src = make_bad_tree(t.path(), bad);
  LoaderOptions o = small(4, 2);
  o.sampler.shuffle = false;
  ImageLoader loader(src, o);
  for (int e = 0; e < 2; ++e) {
    loader.reset_stats();
    int64_t delivered = 0;
    for (const Batch& b : epoch(loader, e)) {
      for (size_t i = 0; i < b.indices.size(); ++i) {
        const std::string name = src->name(b.indices[i]);
        EXPECT_EQ(name.find("/b/"), std::string::npos) << "a bad image was delivered: " << name;
        EXPECT_EQ(b.labels[i].item<int64_t>(), src->label(b.indices[i]));
      }
      delivered += b.images.size(0);
    }
    EXPECT_EQ(delivered, src->size());
    const LoaderStats s = loader.stats();
    EXPECT_EQ(s.skipped, bad);
    EXPECT_EQ(s.images, src->size());  // each replaced by the next good one
    ASSERT_EQ(s.skipped_names.size(), static_cast<size_t>(bad));
    EXPECT_EQ(loader.skipped_this_epoch(), bad);
  }
  epoch(loader, 2);  // without a reset: the epoch's count starts where the totals stand
  EXPECT_EQ(loader.skipped_this_epoch(), bad);
  EXPECT_EQ(loader.stats().skipped, 2 * bad);
  loader.reset_stats();  // and at zero again after one (it went below zero)
  EXPECT_EQ(loader.skipped_this_epoch(), 0);
}

// In evaluation a bad image's row keeps the batch's shape (its stand-in's pixels) but carries the
// padding label, so scores count each good image once and no bad one (the stand-in was counted
// twice before).
TEST(ImageLoader, EvaluationLeavesBadImagesOutOfTheLabels) {
  test::TempDir t;
  int bad;
  auto src = make_bad_tree(t.path(), bad);
  ASSERT_GT(bad, 0);
  LoaderOptions o = small(4, 2);
  o.transform = Transform::kVal;
  o.sampler.shuffle = false;
  ImageLoader loader(src, o);
  int64_t rows = 0, padded = 0, labelled = 0;
  for (const Batch& b : epoch(loader, 0)) {
    rows += b.images.size(0);
    for (size_t i = 0; i < b.indices.size(); ++i) {
      const int64_t label = b.labels[static_cast<int64_t>(i)].item<int64_t>();
      if (label == kPadLabel) {
        ++padded;
        continue;
      }
      ++labelled;
      EXPECT_EQ(label, src->label(b.indices[i])) << src->name(b.indices[i]);
    }
  }
  EXPECT_EQ(rows, src->size());
  EXPECT_EQ(padded, bad);
  EXPECT_EQ(labelled, src->size() - bad);
  EXPECT_EQ(loader.stats().skipped, bad);
}

TEST(ImageLoader, FailPolicyNamesTheImage) {
  test::TempDir t;
  int bad;
  auto src = make_bad_tree(t.path(), bad);
  LoaderOptions o = small(4, 2);
  o.on_bad_image = BadImagePolicy::kFail;
  o.sampler.shuffle = false;
  ImageLoader loader(src, o);
  loader.start_epoch(0);
  try {
    while (loader.next()) {
    }
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bad image " + (t / "b").string()), std::string::npos) << what;
    EXPECT_NE(what.find("--on-bad-image skip"), std::string::npos) << what;
  }
  // and the loader can start over
  loader.start_epoch(1);
}

size_t heap_in_use() {
  return mallinfo2().uordblks;
}

// Nothing per sample survives a batch: heap in use after epoch 3 and after epoch 8 are the same
// within 256 KiB (the ring and decoders are allocated up front; libjpeg frees its per-image pools).
TEST(ImageLoader, MemoryStableAcrossEpochs) {
  test::TempDir t;
  auto src = make_tree(t.path(), 2, 10);
  LoaderOptions o = small(6, 2);
  ImageLoader loader(src, o);
  auto run = [&](int64_t e) {
    loader.start_epoch(e);
    while (auto b = loader.next()) {
    }
  };
  for (int e = 0; e < 3; ++e) run(e);
  const size_t before = heap_in_use();
  for (int e = 3; e < 8; ++e) run(e);
  const size_t after = heap_in_use();
  EXPECT_LT(std::llabs(int64_t(after) - int64_t(before)), 256 << 10) << before << " -> " << after;
}

// A random array dataset: n images of channels x height x width, labels i % classes.
std::shared_ptr<const ArrayDataset> random_arrays(int64_t n, int channels, int height, int width) {
  auto d = std::make_shared<ArrayDataset>();
  d->n = n, d->channels = channels, d->height = height, d->width = width, d->classes = 4;
  const auto pixels = torch::randint(0, 256, {n * d->image_bytes()}, torch::kUInt8);
  d->images.assign(pixels.data_ptr<uint8_t>(), pixels.data_ptr<uint8_t>() + pixels.numel());
  for (int64_t i = 0; i < n; ++i) d->labels.push_back(i % d->classes);
  d->name = "random";
  return d;
}

// Arrays through the image loader as stored: every batch holds exactly the arrays' pixels
// (planar, as stored) and labels in the sampler's order, whatever the workers; a padded last batch
// has zero pixels and kPadLabel rows beyond its size; the device-resident loader gives the same.
TEST(ImageLoader, ArraysAsStoredEqualTheArraysAndTheDeviceLoader) {
  for (int channels : {1, 3}) {
    const auto d = random_arrays(37, channels, 5, 7);
    const auto all = torch::from_blob(const_cast<uint8_t*>(d->images.data()),
                                      {d->n, channels, 5, 7}, torch::kUInt8);
    LoaderOptions o;
    o.batch = 8, o.workers = 3, o.transform = Transform::kNone, o.last_batch = LastBatch::kPad;
    o.sampler.seed = 5;
    ImageLoader loader(std::make_shared<ArraySource>(d), o);
    auto device = make_device_loader(*d, o);
    EXPECT_EQ(loader.batches_per_epoch(), 5);
    EXPECT_EQ(loader.samples_per_epoch(), 37);
    for (int64_t e : {0, 1}) {
      const auto batches = epoch(loader, e);
      device->start_epoch(e);
      ASSERT_EQ(batches.size(), 5u);
      int64_t seen = 0;
      for (const Batch& b : batches) {
        ASSERT_EQ(b.images.sizes(), (std::vector<int64_t>{8, channels, 5, 7}));
        const auto idx = torch::tensor(b.indices, torch::kLong);
        EXPECT_TRUE(torch::equal(b.images.narrow(0, 0, b.size), all.index_select(0, idx)));
        EXPECT_TRUE(torch::equal(b.labels.narrow(0, 0, b.size), idx.remainder(4)));
        if (b.size < 8) {
          EXPECT_EQ(b.images.narrow(0, b.size, 8 - b.size).sum().item<int64_t>(), 0);
          EXPECT_TRUE((b.labels.narrow(0, b.size, 8 - b.size) == kPadLabel).all().item<bool>());
        }
        const auto other = device->next();
        ASSERT_TRUE(other.has_value());
        EXPECT_EQ(other->size, b.size);
        EXPECT_TRUE(torch::equal(other->labels, b.labels));
        EXPECT_TRUE(
            torch::equal(other->images.narrow(0, 0, b.size), b.images.narrow(0, 0, b.size)));
        seen += b.size;
      }
      EXPECT_FALSE(device->next().has_value());
      EXPECT_EQ(seen, 37);
    }
  }
}

// The synthetic loader (the model alone) delivers what the real loaders would, in count and shape:
// per rank the batches and samples of a device loader over the same dataset, in the asked layout,
// one fixed random batch (labels within the classes) at every step, padded rows labelled kPadLabel.
// --decode auto's look at the data: headers only, spread over the source, bad files left out.
TEST(ImageLoader, MedianJpegPixelsReadsHeadersSpreadOverTheSource) {
  test::TempDir t;
  // make_tree's image i of class c is (60 + 13 i) x (50 + 7 c): widths 60, 73, 86, 99, 112.
  const auto tree = make_tree(t.path() / "t", 1, 5);
  EXPECT_EQ(median_jpeg_pixels(*tree), 86 * 50);     // all five (15 asked for)
  EXPECT_EQ(median_jpeg_pixels(*tree, 1), 60 * 50);  // the first only
  EXPECT_EQ(median_jpeg_pixels(*tree, 2), 86 * 50);  // images 0 and 2: the larger of the two
  int bad;
  const auto mixed = make_bad_tree(t.path() / "b", bad);
  const int64_t m = median_jpeg_pixels(*mixed, 1000);  // every file; the refused ones skipped
  EXPECT_GE(m, 50 * 70);
  EXPECT_LE(m, 160 * 120);
  EXPECT_EQ(median_jpeg_pixels(ArraySource(random_arrays(9, 1, 5, 7))), 0);  // raw pixels
}

TEST(SyntheticLoader, DeliversTheRealLoadersCountsAndShapesWithOneBatch) {
  const auto d = random_arrays(37, 3, 6, 6);
  for (auto last : {LastBatch::kKeep, LastBatch::kDrop, LastBatch::kPad}) {
    for (int rank : {0, 1}) {
      LoaderOptions o;
      o.batch = 8, o.last_batch = last, o.layout = Layout::kNHWC;
      o.sampler.rank = rank, o.sampler.world = 2, o.sampler.seed = 3;
      auto real = make_device_loader(*d, o);
      auto synthetic = make_synthetic_loader({37, 3, 6, 4}, o);
      EXPECT_EQ(synthetic->batches_per_epoch(), real->batches_per_epoch());
      EXPECT_EQ(synthetic->samples_per_epoch(), real->samples_per_epoch());
      for (int64_t e : {0, 1}) {
        real->start_epoch(e);
        synthetic->start_epoch(e);
        torch::Tensor first;
        int64_t count = 0;
        while (auto b = synthetic->next()) {
          const auto r = real->next();
          ASSERT_TRUE(r.has_value());
          EXPECT_EQ(b->size, r->size);
          ASSERT_EQ(b->images.sizes(), (std::vector<int64_t>{r->images.size(0), 6, 6, 3}));
          EXPECT_EQ(b->images.scalar_type(), torch::kUInt8);
          const auto labels = b->labels.narrow(0, 0, b->size);
          EXPECT_TRUE(((labels >= 0) & (labels < 4)).all().item<bool>());
          if (b->size < b->labels.size(0))
            EXPECT_TRUE((b->labels.narrow(0, b->size, b->labels.size(0) - b->size) == kPadLabel)
                            .all()
                            .item<bool>());
          if (!first.defined()) first = b->images.clone();
          EXPECT_TRUE(torch::equal(b->images, first.narrow(0, 0, b->images.size(0))));
          ++count;
        }
        EXPECT_FALSE(real->next().has_value());
        EXPECT_EQ(count, real->batches_per_epoch());
        EXPECT_GT(first.to(torch::kFloat).std().item<double>(), 50);  // random bytes, not zeros
      }
    }
  }
}

// Gray arrays as RGB repeat the value in every channel; crops resample them like decoded JPEGs.
TEST(ImageLoader, GrayArraysBecomeRgbAndTakeTheTrainTransform) {
  const auto d = random_arrays(10, 1, 28, 28);
  LoaderOptions o;
  o.batch = 10, o.workers = 2, o.transform = Transform::kNone, o.channels = 3;
  o.sampler.shuffle = false;
  ImageLoader rgb(std::make_shared<ArraySource>(d), o);
  const auto b = epoch(rgb, 0).at(0);
  const auto all =
      torch::from_blob(const_cast<uint8_t*>(d->images.data()), {10, 1, 28, 28}, torch::kUInt8);
  EXPECT_TRUE(torch::equal(b.images, all.expand({10, 3, 28, 28})));
  o.transform = Transform::kTrain, o.size = 32, o.layout = Layout::kNHWC;
  ImageLoader crops(std::make_shared<ArraySource>(d), o);
  const auto c = epoch(crops, 3).at(0);
  ASSERT_EQ(c.images.sizes(), (std::vector<int64_t>{10, 32, 32, 3}));
  for (int i = 0; i < 10; ++i) {
    // By hand: the same crop of the same pixels through the Resampler, then stored flipped or not.
    const TrainCrop t = train_crop(28, 28, o.rrc, o.sampler.seed, 3, c.indices[i]);
    ImageBuffer out;
    out.reshape(32, 32, 1);
    const ImageView src{d->images.data() + c.indices[i] * 784, 28, 28, 1, 28};
    Resampler().resample(
        src, {double(t.crop.x), double(t.crop.y), double(t.crop.width), double(t.crop.height)},
        out.mutable_view(), o.filter);
    std::vector<uint8_t> want(32 * 32 * 3);
    store_uint8(out.view(), t.flip, Layout::kNHWC, want.data(), 3);
    const auto got = c.images[i].contiguous();
    EXPECT_EQ(std::memcmp(got.data_ptr<uint8_t>(), want.data(), want.size()), 0) << i;
  }
  // Refused: RGB arrays as gray; JPEG files of any size "as stored".
  o.channels = 1, o.transform = Transform::kNone;
  EXPECT_THROW(ImageLoader(std::make_shared<ArraySource>(random_arrays(4, 3, 8, 8)), o), Error);
  test::TempDir t;
  o.channels = 0;
  EXPECT_THROW(ImageLoader(make_tree(t.path(), 1, 1), o), Error);
}

TEST(ImageLoader, LoadCommandReportsAndFailsCleanly) {
  test::TempDir t;
  make_tree(t / "train", 2, 6);
  make_tree(t / "val", 2, 2);
  auto r = test::run_faster("load " + t.path().string() +
                            " --workers 2 --batch 4 --size 32 --floor-images 5 --json " +
                            (t / "r.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("using " + (t / "train").string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bottleneck:"), std::string::npos) << r.output;
  const std::string json = test::read_file(t / "r.json");
  EXPECT_NE(json.find("\"images\": 12"), std::string::npos) << json;
  r = test::run_faster("load " + t.path().string() +
                       " --val --val-resize 40 --val-size 32 --batch 4 --floor-images 0");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("4 images"), std::string::npos) << r.output;
  r = test::run_faster("load " + (t / "nope").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "faster: error: dataset " + (t / "nope").string() + " does not exist\n");
  r = test::run_faster("load " + t.path().string() + " --output int8");
  EXPECT_EQ(r.output, "faster: error: --output must be uint8 or float (got 'int8')\n");
  r = test::run_faster("load " + t.path().string() + " --on-bad-image ignore");
  EXPECT_EQ(r.output, "faster: error: --on-bad-image must be skip or fail (got 'ignore')\n");
  r = test::run_faster("load " + t.path().string() + " --decode gpu");
  EXPECT_EQ(r.output, "faster: error: --decode must be auto, cpu or nvjpeg (got 'gpu')\n");
  r = test::run_faster("load " + t.path().string() + " --decode nvjpeg --cpu-share 1.5");
  EXPECT_EQ(r.exit_code, 2) << r.output;  // a usage error, with or without a GPU
  EXPECT_NE(r.output.find("--cpu-share"), std::string::npos) << r.output;
  r = test::run_faster("load " + t.path().string() + " --decode nvjpeg --device cpu");
  EXPECT_EQ(r.exit_code, 2);  // as train and eval say it (tests/cli/flag_rules_test.cpp)
  EXPECT_NE(r.output.find("--decode nvjpeg needs a CUDA device, and --device cpu was given"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace faster::data

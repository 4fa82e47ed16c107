// The Python module's loader against the C++ loader `faster train` makes: for the same data, seed
// and epoch, faster.ImageLoader's uint8 batches are the trainer's loader's, byte for byte (labels
// and sample indices too), and its normalized ones those bytes normalized (within 1e-5).  The
// Python side runs in the python3 the module was built for (FASTER_PYTHON, FASTER_PYTHON_DIR).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cstring>
#include <string>

#include "faster/train/data_plan.h"
#include "faster/train/options.h"
#include "support/test_support.h"

namespace faster::python {
namespace {
namespace fs = std::filesystem;

// The batches of `epoch` as `faster train` loads them: its plan, its loader options (uint8, the
// step normalizes), its crops flipped.
std::vector<data::Batch> trainer_batches(const fs::path& root, uint64_t seed, int epoch) {
  train::TrainOptions o;
  o.data = root.string();
  o.batch = 16;
  o.seed = seed;
  o.res.res = 32;
  o.flip = train::Flip::kOn;  // the CLI's default for crops
  o.workers = 3;
  const auto d = train::open_training_data(o.data, "");
  const torch::Device cpu(torch::kCPU);
  const auto plan = train::plan_data(o, d, 3, cpu, train::WorldInfo{});
  auto lo = train::loader_options(plan, d, cpu, train::WorldInfo{}, true);
  lo.normalize_on_device = false;
  auto loader = train::make_loader(plan, d, lo, true);
  loader->start_epoch(epoch);
  std::vector<data::Batch> out;
  while (auto b = loader->next()) {
    b->images = b->images.clone(), b->labels = b->labels.clone();
    out.push_back(std::move(*b));
  }
  return out;
}

TEST(PythonLoader, SameBatchesAsTheTrainersLoaderForTheSameSeedAndEpoch) {
  REQUIRE_FASHION_MNIST();
  const auto& root = test::exported_fashion_mnist(200);
  test::TempDir tmp;
  // Epoch 2, seed 7: uint8 batches, their normalized twins, labels and indices as raw files.
  const std::string script = R"(
import sys, torch, faster
root, out = sys.argv[1], sys.argv[2]
kw = dict(res=32, seed=7, workers=2, device="cpu")
raw = faster.ImageLoader(root + "/train", 16, normalize=False, **kw)
norm = faster.ImageLoader(root + "/train", 16, **kw)
raw.set_epoch(2); norm.set_epoch(2)
images, normed, labels, indices = [], [], [], []
for (x, y), (z, _) in zip(raw, norm):
    images.append(x.clone()); normed.append(z.clone()); labels.append(y.clone())
    indices += raw.indices()
torch.cat(images).numpy().tofile(out + "/images.u8")
torch.cat(normed).numpy().tofile(out + "/normed.f32")
torch.cat(labels).numpy().tofile(out + "/labels.i64")
torch.tensor(indices).numpy().tofile(out + "/indices.i64")
)";
  test::write_file(tmp / "dump.py", script);
  const auto r = test::run_shell("PYTHONPATH=" + std::string(FASTER_PYTHON_DIR) + " " +
                                 FASTER_PYTHON + " " + (tmp / "dump.py").string() + " " +
                                 root.string() + " " + tmp.path().string() + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const auto batches = trainer_batches(root, 7, 2);
  std::vector<torch::Tensor> images, labels, indices;
  for (const auto& b : batches) {
    images.push_back(b.images);
    labels.push_back(b.labels);
    indices.push_back(torch::tensor(b.indices));
  }
  const auto expect_images = torch::cat(images), expect_labels = torch::cat(labels);
  const auto expect_indices = torch::cat(indices);
  const auto read = [&](const char* name, torch::ScalarType type, const torch::Tensor& like) {
    const auto bytes = test::read_file(tmp / name);
    auto t = torch::empty(like.sizes(), torch::TensorOptions().dtype(type));
    EXPECT_EQ(bytes.size(), static_cast<size_t>(t.numel() * t.element_size())) << name;
    std::memcpy(t.data_ptr(), bytes.data(), std::min<size_t>(bytes.size(), t.nbytes()));
    return t;
  };
  ASSERT_EQ(expect_images.size(0), 200);
  EXPECT_TRUE(torch::equal(read("images.u8", torch::kUInt8, expect_images), expect_images));
  EXPECT_TRUE(torch::equal(read("labels.i64", torch::kInt64, expect_labels), expect_labels));
  EXPECT_TRUE(torch::equal(read("indices.i64", torch::kInt64, expect_indices), expect_indices));
  const auto mean = torch::tensor({0.485f, 0.456f, 0.406f}).view({3, 1, 1});
  const auto std = torch::tensor({0.229f, 0.224f, 0.225f}).view({3, 1, 1});
  const auto expect_normed = (expect_images.to(torch::kFloat) / 255 - mean) / std;
  const auto normed = read("normed.f32", torch::kFloat, expect_normed);
  EXPECT_LT((normed - expect_normed).abs().max().item<float>(), 1e-5f);
}

}  // namespace
}  // namespace faster::python

// Small-dataset readers: real Fashion-MNIST, generated idx/CIFAR fixtures, and every kind of
// corrupt input the issue lists (bad magic, truncated, count mismatch, label out of range).
#include <gtest/gtest.h>
#include <zlib.h>

#include "faster/core/error.h"
#include "faster/data/sources/array_dataset.h"
#include "support/test_support.h"

namespace faster::data {
namespace {
namespace fs = std::filesystem;
using test::TempDir;

std::string be32(uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}
std::string idx_images(uint32_t n, uint32_t h, uint32_t w, uint8_t fill = 7) {
  return std::string("\0\0\x08\x03", 4) + be32(n) + be32(h) + be32(w) +
         std::string(n * h * w, char(fill));
}
std::string idx_labels(const std::vector<uint8_t>& labels) {
  return std::string("\0\0\x08\x01", 4) + be32(labels.size()) +
         std::string(labels.begin(), labels.end());
}
void write_gz(const fs::path& p, const std::string& bytes) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), bytes.size()), int(bytes.size()));
  gzclose(f);
}
// Writes the four idx files of a tiny dataset (raw, not gzip) into dir.
void write_idx_set(const fs::path& dir, const std::string& train_images,
                   const std::string& train_labels) {
  test::write_file(dir / "train-images-idx3-ubyte", train_images);
  test::write_file(dir / "train-labels-idx1-ubyte", train_labels);
  test::write_file(dir / "t10k-images-idx3-ubyte", idx_images(2, 28, 28));
  test::write_file(dir / "t10k-labels-idx1-ubyte", idx_labels({1, 2}));
}
// Asserts that loading dir fails with a message containing every piece of `parts`.
void expect_error(const fs::path& dir, const std::vector<std::string>& parts) {
  try {
    load_small_dataset(dir);
    FAIL() << "no error for " << dir;
  } catch (const Error& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(ArrayDataset, ReadsRealFashionMnist) {
  const auto dir = test::fashion_mnist_dir();
  if (dir.empty()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const auto tt = load_small_dataset(dir);
  EXPECT_EQ(tt.format, "idx");
  EXPECT_EQ(tt.train.n, 60000);
  EXPECT_EQ(tt.test.n, 10000);
  EXPECT_EQ(tt.train.channels, 1);
  EXPECT_EQ(tt.train.height, 28);
  EXPECT_EQ(tt.train.width, 28);
  // Known values of the published files: first labels (9 = ankle boot) and the first image's sum.
  EXPECT_EQ(tt.train.labels[0], 9);
  EXPECT_EQ(tt.train.labels[3], 3);
  EXPECT_EQ(tt.test.labels[1], 2);
  int64_t sum = 0;
  for (int i = 0; i < 784; ++i) sum += tt.train.images[i];
  EXPECT_EQ(sum, 76247);
}

TEST(ArrayDataset, ReadsGzipAndRawIdx) {
  TempDir d;
  write_idx_set(d.path(), idx_images(3, 28, 28, 5), idx_labels({0, 9, 4}));
  auto raw = load_small_dataset(d.path());
  EXPECT_EQ(raw.train.n, 3);
  EXPECT_EQ(raw.train.labels, (std::vector<int64_t>{0, 9, 4}));
  EXPECT_EQ(raw.train.images[100], 5);
  TempDir g;
  write_gz(g / "train-images-idx3-ubyte.gz", idx_images(3, 28, 28, 5));
  write_gz(g / "train-labels-idx1-ubyte.gz", idx_labels({0, 9, 4}));
  write_gz(g / "t10k-images-idx3-ubyte.gz", idx_images(2, 28, 28));
  write_gz(g / "t10k-labels-idx1-ubyte.gz", idx_labels({1, 2}));
  auto gz = load_small_dataset(g.path());
  EXPECT_EQ(gz.train.images, raw.train.images);
  EXPECT_EQ(gz.train.labels, raw.train.labels);
}

TEST(ArrayDataset, RejectsBadMagic) {
  TempDir d;
  auto img = idx_images(3, 28, 28);
  img[2] = 0x0d;  // float data, not uint8
  write_idx_set(d.path(), img, idx_labels({0, 1, 2}));
  expect_error(d.path(), {"train-images-idx3-ubyte", "bad idx magic"});
}

TEST(ArrayDataset, RejectsTruncatedFiles) {
  TempDir d;
  auto img = idx_images(3, 28, 28);
  write_idx_set(d.path(), img.substr(0, img.size() - 10), idx_labels({0, 1, 2}));
  expect_error(d.path(), {"train-images-idx3-ubyte", "truncated"});
  TempDir h;
  write_idx_set(h.path(), img.substr(0, 9), idx_labels({0, 1, 2}));
  expect_error(h.path(), {"train-images-idx3-ubyte", "truncated"});
  TempDir g;  // a gzip stream cut short
  write_idx_set(g.path(), img, idx_labels({0, 1, 2}));
  write_gz(g / "tmp.gz", idx_images(300, 28, 28));
  auto cut = test::read_file(g / "tmp.gz");
  fs::remove(g / "train-images-idx3-ubyte");
  test::write_file(g / "train-images-idx3-ubyte.gz", cut.substr(0, cut.size() / 2));
  expect_error(g.path(), {"train-images-idx3-ubyte.gz"});
}

TEST(ArrayDataset, RejectsCountMismatchAndBadLabels) {
  TempDir d;
  write_idx_set(d.path(), idx_images(3, 28, 28), idx_labels({0, 1}));
  expect_error(d.path(), {"3 images", "2 labels"});
  // The class count comes from the labels (11 here); a caller's bound still holds.
  TempDir e;
  write_idx_set(e.path(), idx_images(3, 28, 28), idx_labels({0, 10, 1}));
  EXPECT_EQ(load_small_dataset(e.path()).train.classes, 11);
  try {
    read_idx(e / "train-images-idx3-ubyte", e / "train-labels-idx1-ubyte", 10);
    ADD_FAILURE() << "label 10 accepted with 10 classes";
  } catch (const Error& err) {
    const std::string what = err.what();
    for (const char* needle : {"train-labels-idx1-ubyte", "label 10", "sample 1", "out of range"})
      EXPECT_NE(what.find(needle), std::string::npos) << what;
  }
}

TEST(ArrayDataset, RejectsMissingFilesAndFolders) {
  TempDir d;
  expect_error(d.path(), {"no Fashion-MNIST/MNIST idx files", "CIFAR-10"});
  expect_error(d / "nope", {"dataset", "nope does not exist"});
  test::write_file(d / "a-file", "");
  expect_error(d / "a-file", {"a-file: not a directory"});
  test::write_file(d / "train-images-idx3-ubyte", idx_images(1, 28, 28));
  expect_error(d.path(), {"train-labels-idx1-ubyte"});
}

// Fashion-MNIST is told from MNIST by the folder's name or its parent's (export's class names and
// --flip auto both ask), whatever the case, with or without a trailing separator.
TEST(ArrayDataset, FashionMnistIsToldByTheFolderName) {
  EXPECT_TRUE(named_fashion_mnist("/usr/share/datasets/fashion-mnist"));
  EXPECT_TRUE(named_fashion_mnist("/data/FMNIST/"));
  EXPECT_TRUE(named_fashion_mnist("/data/Fashion/raw"));
  EXPECT_FALSE(named_fashion_mnist("/data/mnist"));
  EXPECT_FALSE(named_fashion_mnist("/data/fashion/mnist/raw"));  // the grandparent is not asked
  TempDir d;
  const auto labels = idx_labels({0, 1, 2});
  for (const char* name : {"fmnist", "mnist"}) {
    fs::create_directories(d / name);
    write_idx_set(d / name, idx_images(3, 28, 28), labels);
    const TrainTest tt = load_small_dataset((d / name).string() + "/");
    EXPECT_EQ(tt.train.fashion_mnist, std::string(name) == "fmnist") << name;
    EXPECT_EQ(tt.test.fashion_mnist, tt.train.fashion_mnist) << name;
    EXPECT_EQ(tt.train.name, std::string(name) + "/train");
  }
}

std::string cifar_records(const std::vector<uint8_t>& labels) {
  std::string out;
  for (auto l : labels) out += char(l) + std::string(3072, char(l * 10));
  return out;
}

TEST(ArrayDataset, ReadsCifar10Batches) {
  TempDir d;
  const auto dir = d / "cifar-10-batches-bin";
  fs::create_directories(dir);
  for (int i = 1; i <= 5; ++i)
    test::write_file(dir / ("data_batch_" + std::to_string(i) + ".bin"),
                     cifar_records({uint8_t(i), 0}));
  test::write_file(dir / "test_batch.bin", cifar_records({3}));
  const auto tt = load_small_dataset(d.path());
  EXPECT_EQ(tt.format, "cifar10");
  EXPECT_EQ(tt.train.n, 10);
  EXPECT_EQ(tt.train.channels, 3);
  EXPECT_EQ(tt.train.height, 32);
  EXPECT_EQ(tt.train.labels[2], 2);
  EXPECT_EQ(tt.train.images[2 * 3072 + 1000], 20);
  EXPECT_EQ(tt.test.n, 1);
}

TEST(ArrayDataset, RejectsCorruptCifar) {
  TempDir d;
  for (int i = 1; i <= 5; ++i)
    test::write_file(d / ("data_batch_" + std::to_string(i) + ".bin"), cifar_records({1}));
  test::write_file(d / "test_batch.bin", cifar_records({3}).substr(0, 3000));
  expect_error(d.path(), {"test_batch.bin", "not a whole number"});
  test::write_file(d / "test_batch.bin", cifar_records({12}));
  expect_error(d.path(), {"test_batch.bin", "label 12"});
  fs::remove(d / "data_batch_4.bin");
  expect_error(d.path(), {"missing data_batch_4.bin"});
}

}  // namespace
}  // namespace faster::data

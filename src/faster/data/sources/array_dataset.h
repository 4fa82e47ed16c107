// Small image datasets held whole in memory as uint8 NCHW arrays: Fashion-MNIST / MNIST idx files
// (gzip or raw) and CIFAR-10 binary batches.  Readers validate everything and name file and
// problem.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace faster::data {

// Where Debian's dataset-fashion-mnist installs Fashion-MNIST: the default --data of the commands
// that read a small dataset.
constexpr const char* kDefaultSmallDataset = "/usr/share/datasets/fashion-mnist";

struct ArrayDataset {
  std::vector<uint8_t> images;  // n * channels * height * width, NCHW
  std::vector<int64_t> labels;  // n, each in [0, classes)
  int64_t n = 0;
  int channels = 0, height = 0, width = 0, classes = 0;
  std::string name;  // "fashion-mnist/train", "cifar10/test", ...
  // Fashion-MNIST rather than MNIST (the two share one file format): see named_fashion_mnist.
  bool fashion_mnist = false;

  int64_t image_bytes() const { return int64_t{channels} * height * width; }
  // Keeps the first `count` samples (count <= 0 keeps all).
  void truncate(int64_t count);
};

struct TrainTest {
  ArrayDataset train, test;
  std::string format;  // "idx" or "cifar10"
};

// Reads an idx image file and its label file (".gz" or raw); classes is the label bound (0: the
// largest label + 1).
ArrayDataset read_idx(const std::filesystem::path& images, const std::filesystem::path& labels,
                      int classes = 0);
// Reads CIFAR-10 binary batch files (each record: 1 label byte + 3072 pixel bytes, CHW).
ArrayDataset read_cifar10(const std::vector<std::filesystem::path>& batches);

// Whether idx files in `dir` are Fashion-MNIST, going by names alone (MNIST's files are the same
// format): `dir` or its parent says "fashion" or "fmnist", in any case.  Decides the class names
// of `faster export` and --flip auto.
bool named_fashion_mnist(const std::filesystem::path& dir);

// Whether `dir` holds a small dataset load_small_dataset reads (idx or CIFAR-10 files).
bool is_small_dataset(const std::filesystem::path& dir);

// Finds the dataset in `dir`: idx files (train-images-idx3-ubyte[.gz], ...) or CIFAR-10 batches
// (data_batch_1.bin... test_batch.bin, in dir or dir/cifar-10-batches-bin).
TrainTest load_small_dataset(const std::filesystem::path& dir);

// Whole-file read with gzip detection (magic 1f 8b); throws faster::Error naming the file.
std::vector<uint8_t> read_maybe_gzip(const std::filesystem::path& path);

}  // namespace faster::data

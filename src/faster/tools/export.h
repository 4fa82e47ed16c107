// `faster export`: a small dataset faster reads whole (Fashion-MNIST / MNIST idx files, CIFAR-10
// binary batches) written out as an ImageFolder tree of JPEGs, so the JPEG pipeline and ResNets
// have real, learnable data without a download.  Safe to interrupt and re-run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "faster/data/sources/array_dataset.h"
#include "faster/data/sources/image_tree.h"

namespace faster::tools {

// Quality 95 keeps the JPEG path close to lossless for training: on all 70,000 Fashion-MNIST
// images the decoded pixels are at 44.7 dB mean PSNR from the source (42.0 dB for the worst
// image), 0.92 grey levels mean absolute error, for about 870 bytes a file.  (Quality 90: 39.2 dB,
// 1.74 levels; 100: 60.6 dB at 1.3x the bytes.)
constexpr int kExportQuality = 95;

struct ExportOptions {
  std::filesystem::path data = data::kDefaultSmallDataset;
  std::filesystem::path out;
  int quality = kExportQuality;
  int64_t limit = 0;  // keep the first `limit` images of each split; 0: all
  int workers = 0;    // 0: every core
  bool progress = true;
};

struct ExportSummary {
  std::string dataset;         // as the reader names it: "fashion-mnist", "cifar10", ...
  int64_t train = 0, val = 0;  // images in the tree (after --limit)
  int classes = 0;
  int64_t written = 0, up_to_date = 0;  // this run: encoded and written, or found finished
  int64_t bytes_written = 0;
  double seconds = 0;
};

// Runs the whole job: OUT/train/<class>/<index>.jpg and OUT/val/<class>/<index>.jpg (the test
// split), every file written atomically, files already finished by an earlier run kept.  Throws
// faster::Error for anything that stops it: bad options, a missing or unreadable dataset, nested
// trees, an OUT that is a file or holds something other than an export of this dataset with
// these options, another run on the same OUT, a write error.
ExportSummary export_dataset(const ExportOptions& options);

// One line for people: counts, time, rate, bytes and where the tree is.
std::string format_summary(const ExportSummary& summary, const std::filesystem::path& out);

// The class names of a dataset, in label order: CIFAR-10's ten names for CIFAR-10 batches;
// Fashion-MNIST's ten for idx files in a folder (or a parent folder, like torchvision's
// FashionMNIST/raw) whose name says "fashion"; otherwise the label numbers (MNIST's digits).
std::vector<std::string> class_names(const std::filesystem::path& data_dir,
                                     const data::TrainTest& dataset);

// Folder names for classes given in label order: "<label>_<name>", the label zero-padded to the
// width of the largest one so that byte-wise sorting (faster's FolderSource, torchvision's
// ImageFolder) gives label order; characters other than letters, digits and '-' become '_'; a
// name that is its own label number is written as the number alone.
std::vector<std::string> class_folder_names(const std::vector<std::string>& names);

// The file name of image `index` of a split of `count` images: the index zero-padded to at least
// five digits ("00042.jpg"), so a file names its position in the source split.
std::string export_file_name(int64_t index, int64_t count);

// Where export records the dataset and options a tree holds, to refuse a different re-run.
constexpr const char* kExportManifest = data::kTreeManifests[1];  // readers check it

}  // namespace faster::tools

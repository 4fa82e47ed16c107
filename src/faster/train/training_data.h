// What a training run reads: a small array dataset (Fashion-MNIST/MNIST idx files, CIFAR-10
// batches) held in memory, or a root holding train/ and val/ (each an ImageFolder tree of JPEGs or
// an LMDB written by `faster pack`), checked before any training starts: the class count comes from
// the data, every training class has images, and the validation split names the same classes in
// the same order (or its labels would silently mean other classes).  No LibTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "faster/data/sources/array_dataset.h"
#include "faster/data/sources/source.h"

namespace faster::train {

struct TrainingData {
  std::shared_ptr<const data::Source> train, val;  // val is null when there is none
  // Small datasets also keep their arrays (the device-resident loader uploads them whole).
  std::shared_ptr<const data::ArrayDataset> train_arrays, val_arrays;
  std::vector<std::string> classes;
  bool arrays() const { return train_arrays != nullptr; }
  // Channels of the stored images: the arrays' own, 3 for JPEG (decoded as RGB).
  int channels() const { return arrays() ? train_arrays->channels : 3; }
};

// `data`: a small dataset folder, an LMDB, or a root with train/ (and val/); `val_data` (optional)
// names the validation split instead of root/val.  Limits (0: all) keep the first samples of the
// small datasets' splits.  Throws faster::Error naming the path and the problem.
TrainingData open_training_data(const std::string& data, const std::string& val_data,
                                int64_t train_limit = 0, int64_t val_limit = 0);

// One split for a loader of its own (the Python module): `path` is an ImageFolder tree, an LMDB,
// or a root holding train/ and val/ (the split `train` names; `note` then says which).  A
// training split's classes all have images.  Throws NotFoundError for what is not there.
TrainingData open_one_split(const std::string& path, bool train, std::string* note = nullptr);

// An ImageFolder tree or an LMDB written by `faster pack`, as a Source.
std::shared_ptr<const data::Source> open_split(const std::string& path);

}  // namespace faster::train

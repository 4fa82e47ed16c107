// A small array dataset held in memory (Fashion-MNIST, MNIST, CIFAR-10; array_dataset.h) as a
// Source of decoded pixels, so the image loader's threads, ring and copy stream serve it like any
// folder of JPEGs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "faster/data/sources/array_dataset.h"
#include "faster/data/sources/source.h"

namespace faster::data {

class ArraySource : public Source {
 public:
  explicit ArraySource(std::shared_ptr<const ArrayDataset> data);

  int64_t size() const override { return data_->n; }
  // The sample's pixels, interleaved (HWC) as the augment stage takes them.
  void get(int64_t index, Sample& out) const override;
  int label(int64_t index) const override;
  const std::vector<std::string>& classes() const override { return classes_; }
  std::string name(int64_t index) const override;
  std::string describe() const override;
  std::optional<PixelShape> pixels() const override;

  const ArrayDataset& data() const { return *data_; }

 private:
  std::shared_ptr<const ArrayDataset> data_;
  std::vector<std::string> classes_;
};

}  // namespace faster::data

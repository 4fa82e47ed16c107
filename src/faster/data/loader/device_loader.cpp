// The device-resident loader: the dataset is uploaded once as uint8 (Fashion-MNIST is 47 MB), each
// epoch's permutation is uploaded once, and a batch is one gather on the device.
#include <torch/torch.h>

#include "faster/core/error.h"
#include "faster/data/loader/batch_loader.h"

namespace faster::data {

int64_t loader_samples(int64_t per_rank, const ArrayLoaderOptions& o) {
  return o.drop_last ? per_rank / o.batch * o.batch : per_rank;
}

namespace {

class DeviceLoader : public BatchLoader {
 public:
  DeviceLoader(const ArrayDataset& data, const ArrayLoaderOptions& o)
      : options_(o), sampler_(data.n, o.sampler) {
    FASTER_CHECK(o.batch > 0, "batch must be positive");
    auto u8 = torch::TensorOptions().dtype(torch::kUInt8);
    images_ = torch::from_blob(const_cast<uint8_t*>(data.images.data()),
                               {data.n, data.channels, data.height, data.width}, u8)
                  .to(o.device);
    labels_ = torch::from_blob(const_cast<int64_t*>(data.labels.data()), {data.n}, torch::kLong)
                  .to(o.device);
    samples_ = loader_samples(sampler_.per_rank(), o);
    batches_ = batch_count(samples_, o.batch, false);
  }

  int64_t batches_per_epoch() const override { return batches_; }
  int64_t samples_per_epoch() const override { return samples_; }

  void start_epoch(int64_t epoch) override {
    auto idx = sampler_.indices(epoch);
    idx.resize(samples_);
    const int64_t padded = options_.pad_last ? batches_ * options_.batch : samples_;
    idx.resize(padded, 0);  // padding rows reuse sample 0; their label is replaced below
    index_ = torch::tensor(idx, torch::kLong).to(options_.device, /*non_blocking=*/false);
    epoch_labels_ = labels_.index_select(0, index_);
    if (padded > samples_) epoch_labels_.narrow(0, samples_, padded - samples_).fill_(kPadLabel);
    cursor_ = 0;
  }

  bool next(ArrayBatch& b) override {
    if (cursor_ >= samples_) return false;
    const int64_t real = std::min(options_.batch, samples_ - cursor_);
    const int64_t rows = options_.pad_last ? options_.batch : real;
    auto idx = index_.narrow(0, cursor_, rows);
    b.x = images_.index_select(0, idx);
    b.y = epoch_labels_.narrow(0, cursor_, rows);
    b.size = real;
    cursor_ += options_.batch;
    return true;
  }

 private:
  ArrayLoaderOptions options_;
  Sampler sampler_;
  torch::Tensor images_, labels_, index_, epoch_labels_;
  int64_t samples_ = 0, batches_ = 0, cursor_ = 0;
};

}  // namespace

std::unique_ptr<BatchLoader> make_device_loader(const ArrayDataset& data,
                                                const ArrayLoaderOptions& o) {
  return std::make_unique<DeviceLoader>(data, o);
}

}  // namespace faster::data

// The device-resident loader: the dataset is uploaded once as uint8 (Fashion-MNIST is 47 MB), each
// epoch's permutation is uploaded once, and a batch is one gather on the device.
#include <torch/torch.h>

#include "faster/core/error.h"
#include "faster/data/loader/loader.h"

namespace faster::data {
namespace {

class DeviceLoader : public Loader {
 public:
  DeviceLoader(const ArrayDataset& data, const LoaderOptions& o)
      : options_(o), sampler_(data.n, o.sampler) {
    FASTER_CHECK(o.batch > 0, "batch must be positive");
    auto u8 = torch::TensorOptions().dtype(torch::kUInt8);
    images_ = torch::from_blob(const_cast<uint8_t*>(data.images.data()),
                               {data.n, data.channels, data.height, data.width}, u8)
                  .to(o.device);
    labels_ = torch::from_blob(const_cast<int64_t*>(data.labels.data()), {data.n}, torch::kLong)
                  .to(o.device);
    samples_ = delivered_samples(sampler_.per_rank(), o.batch, o.last_batch);
    batches_ = batch_count(samples_, o.batch, LastBatch::kKeep);
  }

  int64_t batches_per_epoch() const override { return batches_; }
  int64_t samples_per_epoch() const override { return samples_; }

  void start_epoch(int64_t epoch) override {
    auto idx = sampler_.indices(epoch);
    idx.resize(samples_);
    const bool pad = options_.last_batch == LastBatch::kPad;
    const int64_t padded = pad ? batches_ * options_.batch : samples_;
    idx.resize(padded, 0);  // padding rows reuse sample 0; their label is replaced below
    index_ = torch::tensor(idx, torch::kLong).to(options_.device, /*non_blocking=*/false);
    epoch_labels_ = labels_.index_select(0, index_);
    if (padded > samples_) epoch_labels_.narrow(0, samples_, padded - samples_).fill_(kPadLabel);
    epoch_ = epoch;
    cursor_ = 0;
  }

  std::optional<Batch> next() override {
    if (cursor_ >= samples_) return std::nullopt;
    const int64_t real = std::min<int64_t>(options_.batch, samples_ - cursor_);
    const int64_t rows = options_.last_batch == LastBatch::kPad ? options_.batch : real;
    Batch b;
    b.images = images_.index_select(0, index_.narrow(0, cursor_, rows));
    b.labels = epoch_labels_.narrow(0, cursor_, rows);
    b.size = real;
    b.epoch = epoch_;
    b.number = cursor_ / options_.batch;
    cursor_ += options_.batch;
    return b;
  }

 private:
  LoaderOptions options_;
  Sampler sampler_;
  torch::Tensor images_, labels_, index_, epoch_labels_;
  int64_t samples_ = 0, batches_ = 0, cursor_ = 0, epoch_ = 0;
};

}  // namespace

std::unique_ptr<Loader> make_device_loader(const ArrayDataset& data, const LoaderOptions& o) {
  return std::make_unique<DeviceLoader>(data, o);
}

}  // namespace faster::data

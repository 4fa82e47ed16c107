// The device-resident loaders: the dataset is uploaded once as uint8 (Fashion-MNIST is 47 MB), each
// epoch's permutation is uploaded once (made on the host while the epoch before trains), and a
// batch is one gather on the device (with a shift and flip, the dataset is stored padded and the
// whole epoch is augmented in one pass when it starts, a few kernels per epoch, so a batch is then
// a slice); and the synthetic loader, one random batch made on the device and delivered at every
// step (the model alone).  Also the PixelNormalizer all loaders' uint8 batches go through.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <future>

#include "faster/core/error.h"
#include "faster/data/loader/loader.h"
#ifdef FASTER_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "faster/data/loader/normalize_kernels.h"
#endif

namespace faster::data {
namespace {

// What both share: an epoch is a cursor over the samples this rank delivers, a batch at a time;
// under LastBatch::kPad the short last batch has a full batch of rows.
class DeviceSideLoader : public Loader {
 public:
  int64_t batches_per_epoch() const override { return batches_; }
  int64_t samples_per_epoch() const override { return samples_; }

  std::optional<Batch> next() override {
    if (cursor_ >= samples_) return std::nullopt;
    const int64_t real = std::min<int64_t>(options_.batch, samples_ - cursor_);
    const int64_t rows = options_.last_batch == LastBatch::kPad ? options_.batch : real;
    Batch b;
    take(cursor_, rows, b);
    b.size = real;
    b.epoch = epoch_;
    b.number = cursor_ / options_.batch;
    cursor_ += options_.batch;
    return b;
  }

 protected:
  DeviceSideLoader(const LoaderOptions& o, int64_t dataset_size) : options_(o) {
    FASTER_CHECK(o.batch > 0, "batch must be positive");
    // Repetitions would need each one's own shift and flip: the image loader's alone draws them.
    FASTER_CHECK(o.sampler.repetitions == 0,
                 "the repeated-augmentation sampler is the image loader's (JPEG and LMDB data)");
    samples_ =
        delivered_samples(Sampler(dataset_size, o.sampler).per_rank(), o.batch, o.last_batch);
    batches_ = batch_count(samples_, o.batch, LastBatch::kKeep);
  }
  // Fills b.images and b.labels with `rows` rows from the epoch's position `first`.
  virtual void take(int64_t first, int64_t rows, Batch& b) = 0;
  void restart(int64_t epoch) { epoch_ = epoch, cursor_ = 0; }

  LoaderOptions options_;
  int64_t samples_ = 0, batches_ = 0;

 private:
  int64_t cursor_ = 0, epoch_ = 0;
};

class DeviceLoader : public DeviceSideLoader {
 public:
  DeviceLoader(const ArrayDataset& data, const LoaderOptions& o)
      : DeviceSideLoader(o, data.n), sampler_(data.n, o.sampler) {
    auto u8 = torch::TensorOptions().dtype(torch::kUInt8);
    images_ = torch::from_blob(const_cast<uint8_t*>(data.images.data()),
                               {data.n, data.channels, data.height, data.width}, u8)
                  .to(o.device);
    if (o.shift_flip.active()) {
      const int64_t p = o.shift_flip.pad;
      images_ = torch::constant_pad_nd(images_, {p, p, p, p}, 0);
    }
    labels_ = torch::from_blob(const_cast<int64_t*>(data.labels.data()), {data.n}, torch::kLong)
                  .to(o.device);
  }

  void start_epoch(int64_t epoch) override {
    // The plan made beside the last epoch where it is this one's (not on a restart); an order
    // neither shuffled nor augmented is every epoch's.
    if (next_.valid() && next_epoch_ == epoch) plan_ = next_.get();
    const bool per_epoch = options_.sampler.shuffle || options_.shift_flip.active();
    if (plan_.epoch != epoch && (per_epoch || plan_.epoch < 0)) plan_ = plan(epoch);
    index_ = plan_.index.to(options_.device, /*non_blocking=*/true);
    epoch_labels_ = labels_.index_select(0, index_);
    if (options_.shift_flip.active())
      epoch_images_ = shift_flip(images_.index_select(0, index_),
                                 plan_.params.to(options_.device, /*non_blocking=*/true),
                                 options_.shift_flip.pad);
    const int64_t padded = index_.numel();
    if (padded > samples_) epoch_labels_.narrow(0, samples_, padded - samples_).fill_(kPadLabel);
    restart(epoch);
    // The next epoch's order and draws on the host while the device trains this one (a few ms
    // for 60,000 samples, which the device would otherwise wait for between epochs).
    if (per_epoch && !(next_.valid() && next_epoch_ == epoch + 1)) {
      next_epoch_ = epoch + 1;
      next_ = std::async(std::launch::async, [this, epoch] { return plan(epoch + 1); });
    }
  }

 private:
  void take(int64_t first, int64_t rows, Batch& b) override {
    b.images = epoch_images_.defined() ? epoch_images_.narrow(0, first, rows)
                                       : images_.index_select(0, index_.narrow(0, first, rows));
    b.labels = epoch_labels_.narrow(0, first, rows);
  }

  // An epoch's order (padded under LastBatch::kPad) and its shift-and-flip draws, on the host:
  // pinned where the device is a GPU, so the uploads do not wait for it.
  struct Plan {
    int64_t epoch = -1;
    torch::Tensor index, params;
  };

  Plan plan(int64_t epoch) const {
    auto idx = sampler_.indices(epoch);
    idx.resize(samples_);
    const bool pad = options_.last_batch == LastBatch::kPad;
    const int64_t padded = pad ? batches_ * options_.batch : samples_;
    idx.resize(padded, 0);  // padding rows reuse sample 0; their label is replaced
    const bool pinned = options_.device.is_cuda();
    Plan p;
    p.epoch = epoch;
    const auto index = torch::from_blob(idx.data(), {padded}, torch::kLong);  // idx's memory
    p.index = pinned ? index.pin_memory() : index.clone();  // either way one copy, kept
    if (options_.shift_flip.active()) {
      p.params = shift_flip_params(idx, options_.shift_flip, options_.sampler.seed, epoch);
      if (pinned) p.params = p.params.pin_memory();
    }
    return p;
  }

  Sampler sampler_;
  torch::Tensor images_, labels_, index_, epoch_labels_, epoch_images_;
  Plan plan_;
  int64_t next_epoch_ = -1;
  std::future<Plan> next_;  // last: its thread reads the members above, and ends first
};

class SyntheticLoader : public DeviceSideLoader {
 public:
  SyntheticLoader(const SyntheticData& data, const LoaderOptions& o)
      : DeviceSideLoader(o, data.samples) {
    FASTER_CHECK(data.samples > 0 && data.channels > 0 && data.size > 0 && data.classes > 0,
                 "synthetic data needs samples, channels, size and classes");
    auto gen = at::make_generator<at::CPUGeneratorImpl>(o.sampler.seed);
    const std::vector<int64_t> shape =
        o.layout == Layout::kNHWC
            ? std::vector<int64_t>{o.batch, data.size, data.size, data.channels}
            : std::vector<int64_t>{o.batch, data.channels, data.size, data.size};
    images_ = torch::randint(256, shape, gen, torch::kUInt8).to(o.device);
    labels_ = torch::randint(data.classes, {o.batch}, gen, torch::kLong).to(o.device);
    const int64_t rest = samples_ % o.batch;  // a padded last batch: its padding rows are ignored
    if (o.last_batch == LastBatch::kPad && rest > 0) {
      padded_labels_ = labels_.clone();
      padded_labels_.narrow(0, rest, o.batch - rest).fill_(kPadLabel);
    }
  }

  void start_epoch(int64_t epoch) override { restart(epoch); }

 private:
  void take(int64_t first, int64_t rows, Batch& b) override {
    b.images = images_.narrow(0, 0, rows);
    const bool padded = first + rows > samples_;
    b.labels = padded ? padded_labels_ : labels_.narrow(0, 0, rows);
  }

  torch::Tensor images_, labels_, padded_labels_;
};

}  // namespace

std::unique_ptr<Loader> make_device_loader(const ArrayDataset& data, const LoaderOptions& o) {
  return std::make_unique<DeviceLoader>(data, o);
}

std::unique_ptr<Loader> make_synthetic_loader(const SyntheticData& data, const LoaderOptions& o) {
  return std::make_unique<SyntheticLoader>(data, o);
}

PixelNormalizer::PixelNormalizer(const Normalization& norm, int channels, Layout layout,
                                 torch::Device device, torch::ScalarType dtype)
    : dtype_(dtype), layout_(layout) {
  const auto shape = batch_shape(layout, 1, channels, 1, 1);
  const auto per_channel = [&](const float* v) {
    return torch::tensor(std::vector<float>(v, v + channels)).mul(255).view(shape).to(device);
  };
  mean_ = per_channel(norm.mean);
  std_ = per_channel(norm.std);
}

torch::Tensor PixelNormalizer::operator()(const torch::Tensor& pixels) const {
#ifdef FASTER_WITH_CUDA
  // On the GPU one kernel where the channel is innermost in memory (the loaders' NHWC batches, or
  // an NCHW view of them), rounded once to dtype: the ops below are four passes over the batch.
  models::kernels::ElementType type;
  const int64_t channel_dim = layout_ == Layout::kNHWC ? 3 : 1;
  if (pixels.is_cuda() && pixels.scalar_type() == torch::kByte && pixels.dim() == 4 &&
      pixels.is_non_overlapping_and_dense() && pixels.stride(channel_dim) == 1 &&
      pixels.size(channel_dim) == mean_.numel() && models::kernels::element_type(dtype_, type)) {
    const c10::cuda::CUDAGuard guard(pixels.device());
    auto out = torch::empty_like(pixels, pixels.options().dtype(dtype_));
    kernels::normalize_pixels(pixels.data_ptr<uint8_t>(), out.data_ptr(), type, pixels.numel(),
                              static_cast<int>(mean_.numel()), mean_.data_ptr<float>(),
                              std_.data_ptr<float>(), c10::cuda::getCurrentCUDAStream().stream());
    return out;
  }
#endif
  auto x = pixels.to(torch::kFloat32).sub_(mean_).div_(std_);
  return dtype_ == torch::kFloat32 ? x : x.to(dtype_);
}

}  // namespace faster::data

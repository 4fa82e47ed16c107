// The host loader: worker threads convert samples into a fixed ring of (pinned) batch buffers, and
// the consumer copies each finished batch to the device on a side stream.  A buffer is refilled only
// after its copy has completed, so nothing is allocated per sample or per batch on the host.
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/torch.h>

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "faster/core/error.h"
#include "faster/data/loader/batch_loader.h"

namespace faster::data {
namespace {

class HostLoader : public BatchLoader {
 public:
  HostLoader(const ArrayDataset& data, const ArrayLoaderOptions& o)
      : data_(data), options_(o), sampler_(data.n, o.sampler) {
    FASTER_CHECK(o.batch > 0 && o.workers > 0, "batch and workers must be positive");
    samples_ = loader_samples(sampler_.per_rank(), o);
    batches_ = batch_count(samples_, o.batch, false);
    const bool cuda = o.device.is_cuda();
    auto opts = torch::TensorOptions().dtype(torch::kFloat).pinned_memory(cuda);
    const int slots = o.workers + 2;
    for (int s = 0; s < slots; ++s) {
      Slot slot;
      slot.x = torch::empty({o.batch, data.channels, data.height, data.width}, opts);
      slot.y = torch::empty({o.batch}, opts.dtype(torch::kLong));
      if (cuda) slot.copied = std::make_unique<c10::Event>(c10::DeviceType::CUDA);
      slots_.push_back(std::move(slot));
    }
    if (cuda) {
      c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
      side_ = impl.getStreamFromGlobalPool(o.device);
    }
    for (int w = 0; w < o.workers; ++w) threads_.emplace_back([this] { worker(); });
  }

  ~HostLoader() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  int64_t batches_per_epoch() const override { return batches_; }
  int64_t samples_per_epoch() const override { return samples_; }

  void start_epoch(int64_t epoch) override {
    release_previous();
    std::unique_lock<std::mutex> lock(mutex_);
    // An epoch left early may still have fills in progress: let them finish before reuse.
    next_fill_ = batches_;
    cv_.wait(lock, [&] { return busy_ == 0 || error_; });
    indices_ = sampler_.indices(epoch);
    indices_.resize(samples_);
    for (auto& s : slots_) s.batch = -1;
    next_fill_ = consumed_ = released_ = 0;
    ++generation_;
    cv_.notify_all();
  }

  bool next(ArrayBatch& b) override {
    release_previous();
    std::unique_lock<std::mutex> lock(mutex_);
    if (consumed_ >= batches_) return false;
    Slot& slot = slots_[consumed_ % slots_.size()];
    cv_.wait(lock, [&] { return error_ || (slot.batch == consumed_ && slot.filled); });
    if (error_) std::rethrow_exception(error_);
    lock.unlock();
    const int64_t real = slot.size;
    const int64_t rows = options_.pad_last ? options_.batch : real;
    auto x = slot.x.narrow(0, 0, rows), y = slot.y.narrow(0, 0, rows);
    if (options_.device.is_cuda()) {
      copy_to_device(x, y, b);
    } else {
      b.x = x;  // the trainer is done with it before it asks for the next batch
      b.y = y;
    }
    in_flight_ = &slot;
    b.size = real;
    lock.lock();
    ++consumed_;
    return true;
  }

 private:
  struct Slot {
    torch::Tensor x, y;
    std::unique_ptr<c10::Event> copied;
    int64_t batch = -1, size = 0;
    bool filled = false;
  };

  // Copies a host batch into device ring buffer (consumed_ % kDeviceRing) on the side stream.  The
  // copy waits until the compute stream is done with that buffer's previous batch (an event recorded
  // when the batch after it was requested), and the compute stream waits for the copy.  So copies
  // overlap the previous step, and no buffer is overwritten while a kernel still reads it.
  void copy_to_device(const torch::Tensor& x, const torch::Tensor& y, ArrayBatch& b) {
    c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
    const c10::Stream current = impl.getStream(options_.device);
    if (device_x_.empty()) {
      for (int i = 0; i < kDeviceRing; ++i) {
        device_x_.push_back(torch::empty(slots_[0].x.sizes(), slots_[0].x.options().device(options_.device).pinned_memory(false)));
        device_y_.push_back(torch::empty(slots_[0].y.sizes(), slots_[0].y.options().device(options_.device).pinned_memory(false)));
        released_by_.push_back(std::make_unique<c10::Event>(c10::DeviceType::CUDA));
      }
    }
    // Everything queued so far on the compute stream includes the step of the previous batch.
    const int64_t c = delivered_++;
    if (c > 0) released_by_[(c - 1) % kDeviceRing]->record(current);
    const int r = c % kDeviceRing;
    released_by_[r]->block(side_);  // no-op until the buffer has been used once
    auto dx = device_x_[r].narrow(0, 0, x.size(0)), dy = device_y_[r].narrow(0, 0, y.size(0));
    {
      c10::StreamGuard guard(side_);
      dx.copy_(x, /*non_blocking=*/true);
      dy.copy_(y, /*non_blocking=*/true);
    }
    Slot& slot = slots_[consumed_ % slots_.size()];
    slot.copied->record(side_);
    slot.copied->block(current);
    b.x = dx;
    b.y = dy;
  }

  // Hands the slot of the last delivered batch back to the workers once its copy has finished.
  void release_previous() {
    if (!in_flight_) return;
    if (in_flight_->copied)
      while (!in_flight_->copied->query()) std::this_thread::yield();
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = consumed_;
    in_flight_ = nullptr;
    cv_.notify_all();
  }

  void worker() {
    int64_t seen_generation = 0;
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] {
        return stop_ || (generation_ > 0 && next_fill_ < batches_ &&
                         next_fill_ < released_ + int64_t(slots_.size()));
      });
      if (stop_) return;
      const int64_t b = next_fill_++;
      const int64_t gen = generation_;
      Slot& slot = slots_[b % slots_.size()];
      slot.batch = b;
      slot.filled = false;
      seen_generation = gen;
      ++busy_;
      lock.unlock();
      try {
        fill(slot, b);
      } catch (...) {
        lock.lock();
        --busy_;
        error_ = std::current_exception();
        cv_.notify_all();
        return;
      }
      lock.lock();
      --busy_;
      if (generation_ == seen_generation) slot.filled = true;
      cv_.notify_all();
    }
  }

  void fill(Slot& slot, int64_t b) {
    const int64_t first = b * options_.batch;
    const int64_t n = std::min(options_.batch, samples_ - first);
    const int64_t pixels = data_.image_bytes();
    float* x = slot.x.data_ptr<float>();
    int64_t* y = slot.y.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t s = indices_[first + i];
      const uint8_t* src = data_.images.data() + s * pixels;
      float* dst = x + i * pixels;
      for (int64_t p = 0; p < pixels; ++p) dst[p] = src[p] / 255.0f;  // torchvision ToTensor
      y[i] = data_.labels[s];
    }
    if (options_.pad_last && n < options_.batch) {
      std::fill(x + n * pixels, x + options_.batch * pixels, 0.0f);
      std::fill(y + n, y + options_.batch, kPadLabel);
    }
    slot.size = n;
  }

  const ArrayDataset& data_;
  ArrayLoaderOptions options_;
  Sampler sampler_;
  int64_t samples_ = 0, batches_ = 0;
  std::vector<Slot> slots_;
  std::vector<int64_t> indices_;
  c10::Stream side_{c10::Stream::DEFAULT, c10::Device(c10::kCPU)};
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int64_t next_fill_ = 0, consumed_ = 0, released_ = 0, generation_ = 0, busy_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  Slot* in_flight_ = nullptr;
  // Device-side ring (CUDA only): batches delivered into these buffers in turn.
  static constexpr int kDeviceRing = 2;
  std::vector<torch::Tensor> device_x_, device_y_;
  std::vector<std::unique_ptr<c10::Event>> released_by_;
  int64_t delivered_ = 0;
};

}  // namespace

std::unique_ptr<BatchLoader> make_host_loader(const ArrayDataset& data,
                                              const ArrayLoaderOptions& o) {
  return std::make_unique<HostLoader>(data, o);
}

}  // namespace faster::data

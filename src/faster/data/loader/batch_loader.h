// Loaders for the small in-memory datasets: batches of (images, labels) on the training device.
//  - device: the whole dataset resident on the GPU as uint8, shuffled and gathered there per batch;
//  - host:   worker threads write batches (float in [0,1]) into a ring of pinned buffers, copied to
//            the device with non_blocking on a side stream (torch's DataLoader with pin_memory).
// Images come as uint8 (device loader; the step converts them) or float (host loader); the trainer
// accepts both.
#pragma once

#include <torch/types.h>

#include <memory>

#include "faster/data/loader/sampler.h"
#include "faster/data/sources/array_dataset.h"

namespace faster::data {

// Label of the padding rows of a padded batch: cross_entropy's default ignore_index.
constexpr int64_t kPadLabel = -100;

// Named apart from the image loader's Batch and LoaderOptions (image_loader.h, same namespace):
// two definitions under one name would break the one-definition rule once both are linked.
struct ArrayBatch {
  torch::Tensor x;    // [batch, C, H, W], uint8 or float
  torch::Tensor y;    // [batch] int64
  int64_t size = 0;   // real samples in the batch (the rest is padding)
};

struct ArrayLoaderOptions {
  int64_t batch = 512;
  SamplerOptions sampler;
  // Last batch: false keeps a short last batch (default, like DataLoader), true drops it.
  bool drop_last = false;
  // Pad a short last batch to full size (rows labelled kPadLabel) so shapes stay static.
  bool pad_last = false;
  int workers = 4;  // host loader threads
  torch::Device device = torch::kCPU;
};

class BatchLoader {
 public:
  virtual ~BatchLoader() = default;
  virtual int64_t batches_per_epoch() const = 0;
  virtual int64_t samples_per_epoch() const = 0;
  virtual void start_epoch(int64_t epoch) = 0;
  // The next batch of the epoch; false at its end.
  virtual bool next(ArrayBatch& batch) = 0;
};

std::unique_ptr<BatchLoader> make_device_loader(const ArrayDataset& data,
                                                const ArrayLoaderOptions& o);
std::unique_ptr<BatchLoader> make_host_loader(const ArrayDataset& data,
                                              const ArrayLoaderOptions& o);

// How many samples an epoch of `per_rank` samples gives in batches (drop_last aware).
int64_t loader_samples(int64_t per_rank, const ArrayLoaderOptions& o);

}  // namespace faster::data

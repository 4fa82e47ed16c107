// The Python module's loader (faster.ImageLoader): one split of JPEG folders or an LMDB through
// the same plan (train/data_plan.h) and image loader (data/loader/image_loader.h) as `faster
// train`, its batches handed out as they leave the loader, without a copy.  No Python here:
// module.cpp binds it.
#pragma once

#include <sys/types.h>
#include <torch/types.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "faster/data/loader/image_loader.h"
#include "faster/train/data_plan.h"

namespace faster::python {

// What a Python ImageLoader is asked for: the data options (their defaults and ranges are
// DataOptions', one definition for `faster train` and Python) and what only a loader of its own
// chooses (the split, the output, the shard).
struct LoaderRequest {
  std::string root;
  bool train = true;        // RandomResizedCrop + flip, shuffled; else Resize + CenterCrop
  train::DataOptions data;  // res: the output side (train's crop, val's centre crop)
  bool flip = true;         // train: torchvision's RandomHorizontalFlip(0.5)
  int max_res = 0;          // the largest side set_res may ask for (0: res)
  std::string device = "auto";
  bool normalize = true;     // (x / 255 - mean) / std, else uint8 pixels
  data::Normalization norm;  // ImageNet's mean and std
  torch::ScalarType dtype = torch::kFloat32;
  std::optional<bool> shuffle;  // default: train
  bool pad = false;  // the short last batch padded to full size (labels -100: ignored by the loss)
  int rank = 0, world = 1;  // DistributedSampler's shard
};

class Loader {
 public:
  explicit Loader(const LoaderRequest& request);
  // In a process forked from the one that made it (a DataLoader worker of other code), the
  // loader's threads do not exist: it is left as it is, not stopped.
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The epoch's order and crops follow (seed, epoch), as `faster train`'s do.
  void start_epoch(int64_t epoch);
  // The next batch of the epoch (images [N, C, H, W], channels-last in memory where asked;
  // labels [N] int64), or nothing at its end.  The tensors are the loader's memory until the next
  // call.  `check` is called every 50 ms or so while it waits (it may throw to stop).
  std::optional<std::pair<torch::Tensor, torch::Tensor>> next(const std::function<void()>& check);
  // The source index of each real sample of the last batch (a bad image's stand-in's own).
  const std::vector<int64_t>& indices() const { return indices_; }
  int64_t batches_per_epoch() const;
  int64_t samples_per_epoch() const;
  // Train: the crop side from the next epoch on (at most max_res).
  void set_res(int res);
  const std::vector<std::string>& classes() const { return data_.classes; }
  // Skipped images, per-stage time and rates and the bottleneck, as `faster load` reports them.
  nlohmann::json stats() const;
  // The settled plan: device, decoder, sizes, workers, batch.
  nlohmann::json describe() const;
  // Stops the threads now (the destructor's work); later calls throw.
  void close();

 private:
  void check_usable() const;
  // One call at a time: a second thread's, or a signal handler's while next() waits, is refused
  // (the image loader has one consumer, and close() must not free what next() holds).
  class Busy;
  mutable std::atomic<bool> busy_{false};

  LoaderRequest request_;
  pid_t owner_;
  torch::Device device_ = torch::kCPU;
  train::TrainingData data_;
  train::DataPlan plan_;
  std::string note_;
  std::unique_ptr<data::ImageLoader> loader_;
  bool permute_ = false;  // NHWC batches handed out as NCHW views (channels-last memory)
  std::vector<int64_t> indices_;
};

}  // namespace faster::python

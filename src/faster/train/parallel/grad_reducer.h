// DDP's gradient all-reduce: parameters are grouped into buckets of about `bucket_bytes` in reverse
// order (the order backward produces them); a hook after each parameter's gradient accumulation
// copies it into a flat buffer, and a full bucket is all-reduced at once, while backward goes on.
// Buckets are launched strictly in index order, so every rank issues the same collectives.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <mutex>
#include <vector>

#include "faster/train/parallel/dist.h"

namespace faster::train {

class GradReducer {
 public:
  // params and offsets as in FlatSgd: the flat gradient has the flat parameter buffer's layout.
  GradReducer(Dist& dist, std::vector<torch::Tensor> params, std::vector<int64_t> offsets,
              int64_t bucket_bytes);
  ~GradReducer();

  // Before backward: clears readiness.
  void begin();
  // After backward: launches what is left, waits, and returns the gradient averaged over ranks.
  torch::Tensor finish();

 private:
  struct Bucket {
    int64_t begin = 0, end = 0;  // element range in the flat buffer
    int params = 0, pending = 0;
  };
  void on_ready(size_t param);
  void launch_ready_locked();

  Dist& dist_;
  std::vector<torch::Tensor> params_;
  std::vector<int64_t> offsets_;
  std::vector<int> bucket_of_;
  std::vector<Bucket> buckets_;
  std::vector<bool> ready_;
  std::vector<std::unique_ptr<PendingReduce>> works_;
  size_t next_launch_ = 0;
  torch::Tensor flat_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // keep the hooks alive
  std::mutex mutex_;
};

}  // namespace faster::train

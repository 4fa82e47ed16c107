// The trainer: ThinNet on a small in-memory dataset, SGD, cross-entropy, train + test every epoch.
// One process drives one device here; train/parallel adds DataParallel and DDP on top.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "faster/data/sources/array_dataset.h"
#include "faster/train/amp.h"
#include "faster/train/sgd.h"

namespace faster::train {

struct TrainOptions {
  std::string data = faster::data::kDefaultSmallDataset;
  std::string device = "auto";  // auto | cpu | cuda | cuda:N
  int epochs = 5;
  int64_t batch = 512;  // per process
  SgdOptions sgd;
  std::vector<int> blocks{3, 3, 2};
  std::vector<int> filters{32, 64, 128};
  uint64_t seed = 0;
  bool cudnn_benchmark = false;
  // Algorithms cuDNN times per new shape under cudnn_benchmark (torch.backends.cudnn
  // .benchmark_limit; 10 is PyTorch's default, 0 tries them all).
  int cudnn_benchmark_limit = 10;
  // cuDNN benchmark tunes the full-batch shape only: a short last training batch runs on cuDNN's
  // heuristics and short test batches are padded, since tuning a shape seen once per epoch costs
  // more than it saves.  true: tune every new shape (PyTorch's cudnn.benchmark behaviour).
  bool cudnn_benchmark_all_shapes = false;
  bool benchmarks_full_batch_only() const { return cudnn_benchmark && !cudnn_benchmark_all_shapes; }
  Precision precision = Precision::kFloat32;  // --amp picks fp16 (with grad scaler) or bf16
  bool channels_last = false;
  std::string loader = "host";  // host | device
  int workers = 4;
  std::string last_batch = "keep";  // keep | drop (training batches)
  bool cuda_graph = false;
  int64_t train_limit = 0, test_limit = 0;  // 0 = whole split
  std::string log_dir;  // metrics.jsonl
  std::string save;     // state_dict path
  std::string mode_name = "custom";  // label for reports ("baseline", "fast", ...)
  std::string norm = "batch";         // batch | none (ThinNet's normalization)
  bool fused = true;  // ReLU + BatchNorm as faster's fused CUDA kernels (models/relu_batchnorm.h)

  // Parallel training (train/parallel): none, dp (one process, several GPUs) or ddp (a process per
  // GPU, launched by --nproc, torchrun or Slurm).
  std::string parallel = "none";
  int gpus = 0;              // dp: GPUs to use (0 = all visible)
  double bucket_mb = 25.0;   // ddp: gradient bucket size
  bool sync_bn = false;      // ddp: SyncBatchNorm
  int dist_timeout_s = 120;  // ddp: rendezvous and collective timeout
};

// The fastest configuration for this workload on a GPU: device-resident data, bf16 autocast,
// channels_last, CUDA-graph steps (single-device runs: o.parallel is read), the short last
// training batch dropped and eval batches padded, so every step has one static shape.
void apply_fast_mode(TrainOptions& o);

// "auto" (the first GPU if one is visible, else the CPU), "cpu", "cuda" or "cuda:N", checked against
// the visible GPUs; throws faster::Error naming the flag value.
torch::Device resolve_device(const std::string& text);

// Checks flag combinations and the device; throws faster::Error naming the problem.
void validate(const TrainOptions& o);

struct EpochStats {
  int epoch = 0;
  double train_loss = 0, test_loss = 0, test_accuracy = 0, seconds = 0;
  int64_t train_images = 0;
};

struct TrainReport {
  std::vector<EpochStats> epochs;
  double total_seconds = 0;  // model on the device -> end of the last test epoch (as the peer)
  double train_images_per_second = 0;
  std::string device;
  nlohmann::json options;

  nlohmann::json to_json() const;
};

// Runs the whole training; `on_epoch` (optional) sees each epoch's stats as they come.
TrainReport train(const TrainOptions& o, const std::function<void(const EpochStats&)>& on_epoch = {});

nlohmann::json options_json(const TrainOptions& o);

}  // namespace faster::train

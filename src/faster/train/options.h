// What a training run is asked to do, as parsed from the command line (cli/cmd_train.cpp) or set by
// tests and the bench: every choice is an enum, parsed once where it enters.
#pragma once

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "faster/core/enum_names.h"
#include "faster/data/loader/sampler.h"
#include "faster/data/sources/array_dataset.h"
#include "faster/models/model.h"
#include "faster/train/amp.h"
#include "faster/train/sgd.h"

namespace faster::train {

// Small datasets: host = worker threads fill pinned batches that a side stream copies to the
// device; device = the whole dataset resident on the device, batches gathered there.
enum class LoaderKind { kHost, kDevice };
inline constexpr EnumName<LoaderKind> kLoaderNames[] = {{"host", LoaderKind::kHost},
                                                        {"device", LoaderKind::kDevice}};

// One process on one device; DataParallel (one process, several GPUs); DDP (a process per GPU).
enum class Parallel { kNone, kDp, kDdp };
inline constexpr EnumName<Parallel> kParallelNames[] = {
    {"none", Parallel::kNone}, {"dp", Parallel::kDp}, {"ddp", Parallel::kDdp}};

struct TrainOptions {
  std::string data = data::kDefaultSmallDataset;
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
  LoaderKind loader = LoaderKind::kHost;
  int workers = 4;
  data::LastBatch last_batch = data::LastBatch::kKeep;  // training batches: keep or drop
  bool cuda_graph = false;
  int64_t train_limit = 0, test_limit = 0;   // 0 = whole split
  std::string log_dir;                       // metrics.jsonl
  std::string save;                          // state_dict path
  std::string mode_name = "custom";          // label for reports ("baseline", "fast", ...)
  models::Norm norm = models::Norm::kBatch;  // ThinNet's normalization: batch or none
  bool fused = true;  // ReLU + BatchNorm as faster's fused CUDA kernels (models/relu_batchnorm.h)

  // Parallel training (train/parallel): DDP ranks are launched by --nproc, torchrun or Slurm.
  Parallel parallel = Parallel::kNone;
  int gpus = 0;              // dp: GPUs to use (0 = all visible)
  double bucket_mb = 25.0;   // ddp: gradient bucket size
  bool sync_bn = false;      // ddp: SyncBatchNorm
  int dist_timeout_s = 120;  // ddp: rendezvous and collective timeout
};

// The fastest configuration for this workload on a GPU: device-resident data, bf16 autocast,
// channels_last, CUDA-graph steps (single-device runs: o.parallel is read), the short last
// training batch dropped and eval batches padded, so every step has one static shape.
void apply_fast_mode(TrainOptions& o);

// "auto" (the first GPU if one is visible, else the CPU), "cpu", "cuda" or "cuda:N", checked
// against the visible GPUs; throws faster::Error naming the flag value.
torch::Device resolve_device(const std::string& text);

// Checks flag combinations and the device; throws faster::Error naming the problem.
void validate(const TrainOptions& o);

nlohmann::json options_json(const TrainOptions& o);

}  // namespace faster::train

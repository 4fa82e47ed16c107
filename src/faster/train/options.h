// What a training run is asked to do, as parsed from the command line (cli/cmd_train.cpp) or set by
// tests and the bench: every choice is an enum, parsed once where it enters.  A recipe (the seed's
// ThinNet benchmark, or an ImageNet-style ResNet recipe) supplies what the user did not say.
#pragma once

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "faster/core/enum_names.h"
#include "faster/core/gpu_info.h"
#include "faster/data/loader/loader.h"
#include "faster/data/sources/array_dataset.h"
#include "faster/models/model.h"
#include "faster/train/amp.h"
#include "faster/train/batch_augment.h"
#include "faster/train/data_options.h"
#include "faster/train/schedule.h"
#include "faster/train/sgd.h"

namespace faster::train {

// One process on one device; DataParallel (one process, several GPUs); DDP (a process per GPU).
enum class Parallel { kNone, kDp, kDdp };
inline constexpr EnumName<Parallel> kParallelNames[] = {
    {"none", Parallel::kNone}, {"dp", Parallel::kDp}, {"ddp", Parallel::kDdp}};

// How host threads wait for the GPU (core/gpu_info.h).
inline constexpr EnumName<GpuWait> kGpuWaitNames[] = {{"auto", GpuWait::kAuto},
                                                      {"spin", GpuWait::kSpin},
                                                      {"yield", GpuWait::kYield},
                                                      {"block", GpuWait::kBlock}};

// Named sets of defaults (what a flag the user did not give becomes): the seed's ThinNet benchmark
// (a GPU workload), a ThinNet sized for the CPU, an ImageNet-style recipe for ResNets, and the
// time-to-accuracy recipes.
// torchvision: the defaults of torchvision's references/classification/train.py.
enum class Recipe { kSeed, kImagenet, kSpeedrun, kSpeedrun95, kCpu, kTorchvision };
inline constexpr EnumName<Recipe> kRecipeNames[] = {{"seed", Recipe::kSeed},
                                                    {"cpu", Recipe::kCpu},
                                                    {"imagenet", Recipe::kImagenet},
                                                    {"speedrun", Recipe::kSpeedrun},
                                                    {"speedrun95", Recipe::kSpeedrun95},
                                                    {"torchvision", Recipe::kTorchvision}};
// Time-to-accuracy recipes: timed from process start, every start-up cost counted.
inline bool is_speedrun(Recipe r) {
  return r == Recipe::kSpeedrun || r == Recipe::kSpeedrun95;
}

// A training run's options: the data's (DataOptions: batch, seed, resolutions, crops, decoder,
// loader), then the model's, the optimizer's, the schedule's, the step's and the outputs'.
struct TrainOptions : DataOptions {
  // Data: a small array dataset (idx / CIFAR-10 files), or a root holding train/ and val/ (each an
  // ImageFolder tree or an LMDB written by `faster pack`); val_data names the validation split
  // elsewhere.
  std::string data = data::kDefaultSmallDataset;
  std::string val_data;
  std::string model = "thinnet";
  std::string device = "auto";  // auto | cpu | cuda | cuda:N
  int epochs = 5;
  SgdOptions sgd;
  // > 0: the peak learning rate is lr_per_256 * global batch / 256 (a recipe's rate when --lr is
  // not given), replacing sgd.lr.
  double lr_per_256 = 0;
  LrSchedule schedule;
  double label_smoothing = 0;
  // Random erasing, mixup and cutmix on the device (torchvision's --random-erase, --mixup-alpha,
  // --cutmix-alpha): train/batch_augment.h.
  BatchAugmentOptions augment;
  // > 0: the gradient's total L2 norm is clipped to this before each step (after the fp16
  // scaler's unscaling and DDP's average, as torch.nn.utils.clip_grad_norm_ in torchvision's loop).
  double clip_grad_norm = 0;
  double ema_decay = 0;    // > 0: evaluate (and save) an exponential moving average of the weights
  int ema_every = 1;       // ...updated every this many steps of an epoch (--model-ema-steps)
  bool ema_warmup = true;  // timm's decay warm-up (false: torchvision's --model-ema, constant)
  std::vector<int> blocks{3, 3, 2};
  std::vector<int> filters{32, 64, 128};

  int eval_every = 1;  // evaluate every N epochs (and after the last)
  // `tta`: evaluate the mean of the logits of each test image and its mirror image (where flips
  // apply).  `whiten`: start the model's data-initialised layers from the training images
  // (SpeedNet's stem); `freeze_whitening`: and keep them so (airbench's frozen whitening: no
  // gradient for them, nor for anything before them).  `prewarm`: read the data in a thread while
  // the device and its libraries start, and run each step shape once (graphs captured) before the
  // first epoch.
  bool tta = false;
  bool tta_shifts = false;  // tta_logits' second level: also one-pixel shifts of each image
  bool whiten = false;
  bool freeze_whitening = false;
  // SpeedNet: patch directions its stem keeps (models::ModelOptions); 0 all of them, and
  // kStemDimsAuto (the speedrun recipe's) 8 of a gray image's 9, all of a colour image's.
  static constexpr int kStemDimsAuto = -1;
  int stem_dims = 0;
  bool prewarm = false;

  bool cudnn_benchmark = false;
  // Algorithms cuDNN times per new shape under cudnn_benchmark (torch.backends.cudnn
  // .benchmark_limit; 10 is PyTorch's default, 0 tries them all).
  int cudnn_benchmark_limit = 10;
  // cuDNN benchmark tunes the full-batch shape only: a short last training batch runs on cuDNN's
  // heuristics and short test batches are padded, since tuning a shape seen once per epoch costs
  // more than it saves.  true: tune every new shape (PyTorch's cudnn.benchmark behaviour).
  bool cudnn_benchmark_all_shapes = false;
  bool benchmarks_full_batch_only() const { return cudnn_benchmark && !cudnn_benchmark_all_shapes; }
  GpuWait gpu_wait = GpuWait::kAuto;
  Precision precision = Precision::kFloat32;  // --amp picks fp16 (with grad scaler) or bf16
  bool cuda_graph = false;
  int64_t train_limit = 0, test_limit = 0;  // 0 = whole split
  std::string log_dir;                      // metrics.jsonl and metrics.svg
  std::string save;                         // state_dict path (torchvision's names for ResNets)
  std::string checkpoint;                   // written atomically after every epoch
  bool keep_checkpoints = false;            // also keep each epoch's as CHECKPOINT.epochN
  std::string resume;                       // a checkpoint to continue from
  // Weights to start from (torchvision's --weights): torchvision's by name (from torch's cache) or
  // a file; a classifier of another class count starts fresh.  --resume replaces them.
  std::string weights;
  std::string json;  // the run's report (the CLI writes it; recorded so a resume writes it too)
  std::string profile;  // a Chrome trace of 10 training steps of the last epoch (profile_trace.h)
  // Off a terminal, a progress line every N steps (0: every few seconds).
  int print_freq = 0;
  // torchvision's checkpoints after every epoch: DIR/model_{epoch}.pth and DIR/checkpoint.pth
  // (train/torchvision_checkpoint.h).
  std::string output_dir;
  // The outputs are those the resumed checkpoint's run recorded (a bare resume of its latest
  // checkpoint): the run must then be that run (train refuses other settings).
  bool outputs_from_checkpoint = false;
  // Replace an existing --checkpoint, --save or --json file of another run or a finished one
  // (refused otherwise, before training: train/outputs.cpp).
  bool overwrite = false;
  std::string mode_name = "custom";          // label for reports ("baseline", "fast", ...)
  Recipe recipe = Recipe::kSeed;             // the recipe that filled what was not given (reports)
  models::Norm norm = models::Norm::kBatch;  // ThinNet's normalization: batch or none
  // Normalization + activation fused where it applies: ThinNet's and SpeedNet's as faster's CUDA
  // kernels (models/norm_activation.h), ResNets' BatchNorm (+ residual) + ReLU as cuDNN's in fp16
  // channels-last training (models/batchnorm_relu.h).
  bool fused = true;

  // Parallel training (train/parallel): DDP ranks are launched by --nproc, torchrun or Slurm.
  Parallel parallel = Parallel::kNone;
  int gpus = 0;              // dp: GPUs to use (0 = all visible)
  double bucket_mb = 25.0;   // ddp: gradient bucket size
  bool sync_bn = false;      // ddp: SyncBatchNorm
  int dist_timeout_s = 120;  // ddp: rendezvous and collective timeout
};

// The recipe a model trains with when none is named: for ThinNet seed on a GPU and cpu on the CPU,
// speedrun for SpeedNet, imagenet for ResNets.
Recipe default_recipe(const std::string& model, const torch::Device& device);
// A recipe's values of the options it sets; the CLI copies those the user did not give.
TrainOptions recipe_options(Recipe recipe);

// The fastest configuration on a GPU: autocast (bf16 for ThinNet, fp16 and the cuDNN benchmark for
// ResNets), channels_last, CUDA-graph steps (single-device runs: o.parallel is read), the short
// last training batch dropped and eval batches padded, so every step has one static shape; small
// datasets kept as stored live on the device.  Reads o.model, o.parallel and o.res.
void apply_fast_mode(TrainOptions& o);

// "auto" (the first GPU if one is visible, else the CPU), "cpu", "cuda" or "cuda:N", checked
// against the visible GPUs; throws faster::Error naming the flag value.
torch::Device resolve_device(const std::string& text);

// Refuses `what`, which needs a CUDA device, where --device `device` is the CPU: a usage error when
// a CPU device was typed (the command line alone conflicts), an error when "auto" found no GPU (the
// machine decides).  `instead`, if given, says what runs on the CPU.
[[noreturn]] void refuse_on_cpu(const std::string& device, const std::string& what,
                                const std::string& instead = "");

// Checks ranges and flag combinations and the device; throws faster::Error naming the problem.
void validate(const TrainOptions& o);

nlohmann::json options_json(const TrainOptions& o);
// The run an options_json record describes (a checkpoint's), over `o`: the model and its shape, the
// order and the updates (batch, seed, optimizer, schedule, augmentation, resolution, precision)
// and the evaluation.  Keys the record lacks keep `o`'s values; not the data (the CLI takes it
// and its limits where no other data is given), the outputs, the device or the loader's threads.
// Throws faster::Error naming `where` for a value of the wrong kind.
void take_run_options(const nlohmann::json& saved, TrainOptions& o, const std::string& where);
// A record from before crops honoured --flip (it has no "json" key) says "off" for crops that were
// flipped: `saved` then says "on".  `arrays`: the data is a small dataset (cropped with a "res").
void read_old_crop_flips(nlohmann::json& saved, bool arrays);

}  // namespace faster::train

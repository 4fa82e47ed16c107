// Training options: the fast mode, the device, and checks of flag combinations before anything
// runs.
#include "faster/train/options.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include "faster/core/error.h"
#include "faster/core/gpu_info.h"
#include "faster/models/registry.h"
#include "faster/train/parallel/data_parallel.h"
#include "faster/train/step_graph.h"
#include "faster/train/torchvision_checkpoint.h"
#include "faster/train/torchvision_weights.h"

namespace faster::train {

Recipe default_recipe(const std::string& model, const torch::Device& device) {
  switch (models::family(model)) {
    case models::Family::kThinNet:
      return device.is_cuda() ? Recipe::kSeed : Recipe::kCpu;
    case models::Family::kSpeedNet:
      return Recipe::kSpeedrun;
    case models::Family::kResNet:
      break;
  }
  return Recipe::kImagenet;
}

namespace {

// Fashion-MNIST to 94 % in under 3 s from process start on one H200 (issue 13): SpeedNet, batch
// 512, the conv filters trained with Muon and the rest with Nesterov SGD, both on a triangle
// (linear up for an epoch from a fifth of the peak, linear down to zero), label smoothing 0.2,
// weight decay not on norms and biases, shifts of 2 px and flips (where they apply) on the device,
// a whitened stem kept frozen (no backward pass through it: a third of the step's time), flip TTA,
// one test pass at the end; --fast on a GPU.  speedrun95: wider and longer, for 95 %, on SGD.
TrainOptions speedrun_options(Recipe recipe) {
  TrainOptions o;
  o.recipe = recipe;
  o.model = "speednet";
  const bool longer = recipe == Recipe::kSpeedrun95;
  // 8 epochs with Muon for the filters at 0.16 and a 16-channel stem on Fashion-MNIST: 94.31 %
  // mean over 10 seeds (the worst 94.13) in 2.48 s (median, an H100), against 94.21 % in 2.66 s
  // for 9 epochs at 0.24 and 94.07 % for 8 at 0.24, seed by seed in one call; SGD alone needed 11
  // epochs for 94.03 % (BENCHMARKS.md); cuDNN pads an 18-channel stem.  speedrun95's 30 epochs
  // came to 94.96 % over 5 seeds on an H100 (2 of 5 at 95 %), 40 to 95.08 % (4 of 5) on another;
  // Muon at 40 did no better (95.07 % over 4 seeds).
  o.epochs = longer ? 40 : 8;
  if (!longer) o.stem_dims = TrainOptions::kStemDimsAuto;
  if (!longer) o.sgd.muon_lr = 0.16;
  o.filters = longer ? std::vector<int>{96, 192, 384} : std::vector<int>{64, 128, 256};
  o.blocks = {1, 1, 1};
  o.batch = 512;
  o.lr_per_256 = 0.2;
  o.sgd.momentum = 0.9;
  o.sgd.nesterov = true;
  o.sgd.weight_decay = 5e-4;
  o.sgd.decay_1d = false;
  o.label_smoothing = 0.2;
  o.schedule.warmup_epochs = 1;
  o.schedule.warmup_start = 0.2;
  o.schedule.decay = LrDecay::kLinear;
  o.schedule.min_lr = 0;
  o.res.res = 0;  // as stored
  o.translate = 2;
  o.flip = Flip::kAuto;
  o.tta = true;
  o.whiten = true;
  o.freeze_whitening = true;
  o.prewarm = true;
  o.loader = LoaderKind::kDevice;
  o.last_batch = data::LastBatch::kDrop;
  o.eval_every = 1 << 20;  // the last epoch only: the time to accuracy counts every test pass
  return o;
}

}  // namespace

TrainOptions recipe_options(Recipe recipe) {
  TrainOptions o;  // the seed's ThinNet benchmark: the defaults in options.h
  o.recipe = recipe;
  if (recipe == Recipe::kSeed) return o;
  if (is_speedrun(recipe)) return speedrun_options(recipe);
  if (recipe == Recipe::kCpu) {
    // The seed's 11 convolutions at 28x28 cost 0.38 GFLOP per training image: an epoch of
    // Fashion-MNIST takes minutes on 2 cores and lr 1e-3 learns little in one.  A narrower,
    // shallower ThinNet with a higher rate, a short warm-up and cosine decay reaches 88.8 % in
    // under a minute there (BENCHMARKS.md, "The CPU default").
    o.blocks = {0, 0, 0};
    o.filters = {16, 32, 64};
    o.epochs = 2;
    o.batch = 128;
    o.sgd.lr = 0.05;
    o.sgd.momentum = 0.9;
    o.sgd.nesterov = true;
    o.sgd.weight_decay = 5e-4;
    o.schedule.warmup_epochs = 0.2;
    o.schedule.warmup_start = 0.1;
    o.schedule.decay = LrDecay::kCosine;
    return o;
  }
  if (recipe == Recipe::kTorchvision) {
    // torchvision's references/classification/train.py as its defaults stand: SGD 0.1 (momentum
    // 0.9, weight decay 1e-4 on every parameter), batch 32 per process, 90 epochs, StepLR x0.1
    // every 30 epochs, no warm-up, no label smoothing; RandomResizedCrop 224 + flip, val 256 ->
    // 224.
    o.model = "resnet18";
    o.epochs = 90;
    o.batch = 32;
    o.sgd.lr = 0.1;
    o.sgd.momentum = 0.9;
    o.sgd.weight_decay = 1e-4;
    o.schedule.per_epoch = true;
    o.schedule.decay = LrDecay::kStep;
    o.schedule.step_size = 30;
    o.schedule.warmup_start = 0.01;
    o.schedule.warmup_shape = WarmupShape::kConstant;
    o.res.res = 224;
    return o;
  }
  // ImageNet-style (torchvision's reference and FFCV's ResNet recipes): SGD with Nesterov momentum,
  // 0.1 per 256 images, no weight decay on BatchNorm and biases, label smoothing 0.1, a short
  // linear warm-up then cosine to zero, random-resized-crop 224 + flip, val 256 -> 224.
  o.epochs = 16;
  o.batch = 256;
  o.lr_per_256 = 0.1;
  o.sgd.momentum = 0.9;
  o.sgd.nesterov = true;
  o.sgd.weight_decay = 5e-5;
  o.sgd.decay_1d = false;
  o.label_smoothing = 0.1;
  o.schedule.warmup_epochs = 2;
  o.schedule.warmup_start = 0.1;
  o.schedule.decay = LrDecay::kCosine;
  o.model = "resnet50";
  o.res.res = 224;
  return o;
}

void apply_fast_mode(TrainOptions& o) {
  // Small datasets as stored live on the GPU; crops and JPEGs take the image loader.
  if (o.res.res == 0 && o.loader != LoaderKind::kSynthetic) o.loader = LoaderKind::kDevice;
  // ThinNet, bf16: with the fused ReLU + BatchNorm kernels its epochs are as fast as fp16's (0.27
  // vs 0.28 s) and its first epoch, with cuDNN's plan set-up, is shorter (BENCHMARKS.md).  ResNets,
  // fp16: cuDNN's channels-last BatchNorm kernels take fp16, not bf16, and the shapes stay static
  // for the whole run, so tuning them once (cuDNN benchmark, full batch only) pays.
  // SpeedNet as ThinNet: bf16, cuDNN's heuristics (a short run cannot win back the tuning).
  const bool small = models::family(o.model) != models::Family::kResNet;
  o.precision = small ? Precision::kBFloat16 : Precision::kFloat16;
  o.cudnn_benchmark = o.cudnn_benchmark || !small;
  o.channels_last = true;
  o.cuda_graph =
      o.parallel == Parallel::kNone;  // graphs cannot hold DataParallel's threads or DDP's hooks
  o.last_batch = data::LastBatch::kDrop;  // no ragged batch: one static shape, so one graph and no
                                          // new cuDNN plans
  o.mode_name = "fast";
}

torch::Device resolve_device(const std::string& text) {
  if (text == "auto")
    return cuda_device_count() > 0 ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  std::optional<torch::Device> dev;
  try {
    dev.emplace(text);
  } catch (const std::exception&) {
    FASTER_USAGE_ERROR("--device '", text, "' is not a device (use auto, cpu, cuda or cuda:N)");
  }
  if (!dev->is_cpu() && !dev->is_cuda())
    FASTER_USAGE_ERROR("--device '", text, "': only cpu and cuda are supported");
  if (dev->is_cuda()) {
    const int n = cuda_device_count();
    if (n == 0)
      throw Error("--device " + text + " but no CUDA device is visible",
                  gpu_info().contains("reason")
                      ? "this build of faster has no CUDA; use --device cpu"
                      : "check nvidia-smi and CUDA_VISIBLE_DEVICES");
    if (dev->index() >= n)
      FASTER_THROW("--device ", text, " but only ", n, " CUDA device(s) are visible");
    if (!dev->has_index()) dev = torch::Device(torch::kCUDA, 0);
  }
  return *dev;
}

void refuse_on_cpu(const std::string& device, const std::string& what, const std::string& instead) {
  const std::string tail = instead.empty() ? "" : " (" + instead + ")";
  if (device != "auto")  // cpu, cpu:0
    throw UsageError(what + " needs a CUDA device, and --device " + device + " was given" + tail);
  throw Error(what + " needs a CUDA device, and --device auto found none" + tail);
}

namespace {

// SGD's and Muon's values.
void validate_optimizer(const TrainOptions& o) {
  if (!(o.sgd.lr > 0) || !std::isfinite(o.sgd.lr))
    FASTER_USAGE_ERROR("--lr must be a positive finite number (got ", o.sgd.lr, ")");
  if (!(o.sgd.momentum >= 0 && o.sgd.momentum < 1))
    FASTER_USAGE_ERROR("--momentum must be in [0, 1) (got ", o.sgd.momentum, ")");
  if (!(o.sgd.weight_decay >= 0) || !std::isfinite(o.sgd.weight_decay))
    FASTER_USAGE_ERROR("--weight-decay must be a finite number >= 0 (got ", o.sgd.weight_decay,
                       ")");
  for (const auto& [flag, decay] : {std::pair{"--norm-weight-decay", o.sgd.norm_weight_decay},
                                    std::pair{"--bias-weight-decay", o.sgd.bias_weight_decay}})
    if (!(decay >= -1) || !std::isfinite(decay) || (decay < 0 && decay != -1))
      FASTER_USAGE_ERROR(flag, " must be a finite number >= 0 (got ", decay, ")");
  if (!(o.sgd.muon_lr >= 0) || !std::isfinite(o.sgd.muon_lr))
    FASTER_USAGE_ERROR("--muon-lr must be a finite number >= 0 (got ", o.sgd.muon_lr,
                       "; 0: no Muon)");
  if (!(o.sgd.muon_momentum >= 0 && o.sgd.muon_momentum < 1))
    FASTER_USAGE_ERROR("--muon-momentum must be in [0, 1) (got ", o.sgd.muon_momentum, ")");
  check_range("--muon-steps", o.sgd.muon_steps, 1, 10);
  // Muon holds each filter bank's norm, which only a BatchNorm after it makes harmless; SpeedNet's
  // stem feeds GELU directly (and, whitened, its scale is the point).
  if (o.sgd.muon_lr > 0 && models::family(o.model) == models::Family::kSpeedNet &&
      !o.freeze_whitening)
    FASTER_USAGE_ERROR(
        "--muon-lr with speednet needs its stem frozen (--whiten --freeze-whitening, the "
        "speedrun recipes' default): Muon would reset the stem's scale, which no BatchNorm "
        "follows");
}

// The schedules, the model's shape, evaluation, the outputs, the step's modes.
void validate_run(const TrainOptions& o) {
  if (o.keep_checkpoints && o.checkpoint.empty())
    FASTER_USAGE_ERROR(
        "--keep-checkpoints needs --checkpoint FILE (the epochs' copies sit beside it)");
  check_at_least("--train-limit", o.train_limit, 0);
  check_at_least("--test-limit", o.test_limit, 0);
  if (!(o.label_smoothing >= 0 && o.label_smoothing < 1))
    FASTER_USAGE_ERROR("--label-smoothing must be in [0, 1) (got ", o.label_smoothing, ")");
  if (!(o.ema_decay == 0 || (o.ema_decay > 0 && o.ema_decay < 1)))
    FASTER_USAGE_ERROR("--ema must be in (0, 1) (got ", o.ema_decay, ")");
  check_range("--model-ema-steps", o.ema_every, 1, 1 << 20);
  if (!(o.augment.random_erase >= 0 && o.augment.random_erase <= 1))
    FASTER_USAGE_ERROR("--random-erase must be a probability in [0, 1] (got ",
                       o.augment.random_erase, ")");
  for (const auto& [flag, alpha] : {std::pair{"--mixup-alpha", o.augment.mixup_alpha},
                                    std::pair{"--cutmix-alpha", o.augment.cutmix_alpha}})
    if (!(alpha >= 0 && alpha <= 100))
      FASTER_USAGE_ERROR(flag, " must be in [0, 100] (got ", alpha, "; 0: off)");
  if (!(o.clip_grad_norm >= 0) || !std::isfinite(o.clip_grad_norm))
    FASTER_USAGE_ERROR("--clip-grad-norm must be a finite number >= 0 (got ", o.clip_grad_norm,
                       "; 0: off)");
  check_at_least("--eval-every", o.eval_every, 1);
  validate(o.schedule, o.epochs);
  validate(o.res, o.epochs);
  if (o.stem_dims > 0 && models::family(o.model) != models::Family::kSpeedNet)
    FASTER_USAGE_ERROR("--stem-dims is speednet's (the model is ", o.model, ")");
  if (o.stem_dims != TrainOptions::kStemDimsAuto) check_at_least("--stem-dims", o.stem_dims, 0);
  if (o.freeze_whitening && !o.whiten)
    FASTER_USAGE_ERROR("--freeze-whitening needs --whiten (nothing is whitened to keep)");
  if (o.sgd.nesterov && o.sgd.momentum == 0)
    FASTER_USAGE_ERROR("--nesterov needs a non-zero --momentum");
  if (o.cudnn_benchmark_all_shapes && !o.cudnn_benchmark)
    FASTER_USAGE_ERROR("--cudnn-benchmark-all-shapes needs --cudnn-benchmark");
  check_at_least("--cudnn-benchmark-limit", o.cudnn_benchmark_limit, 0);
  if (o.sync_bn && o.parallel != Parallel::kDdp)
    FASTER_USAGE_ERROR("--sync-bn needs --parallel ddp");
  if (o.sync_bn && o.norm != models::Norm::kBatch)
    FASTER_USAGE_ERROR("--sync-bn needs --norm batch");
  if (o.norm == models::Norm::kSync)
    FASTER_USAGE_ERROR("--norm must be batch or none (use --sync-bn)");
  if (o.norm == models::Norm::kNone && models::family(o.model) != models::Family::kThinNet)
    FASTER_USAGE_ERROR("--norm none leaves out ThinNet's BatchNorm; ", o.model,
                       " keeps its own (--norm is ThinNet's)");
  check_output_dir_options(o);
}

// DataParallel and DDP.
void validate_parallel(const TrainOptions& o) {
  check_range("--bucket-mb", o.bucket_mb, 0.001, 4096);
  check_range("--dist-timeout", o.dist_timeout_s, 1, 86400);
  check_range("--gpus", o.gpus, 0, 1024);
  if (o.parallel == Parallel::kDdp && o.cuda_graph)
    FASTER_USAGE_ERROR("--cuda-graph cannot capture DDP's all-reduce; drop it with --parallel ddp");
  if (o.parallel == Parallel::kDp && o.cuda_graph)
    FASTER_USAGE_ERROR("--cuda-graph cannot capture DataParallel's threads");
}

// What the device has: GPUs for DataParallel, and what a CPU cannot do.
void validate_device(const TrainOptions& o) {
  const auto dev = resolve_device(o.device);
  if (o.parallel == Parallel::kDp) {
    if (!dev.is_cuda())
      refuse_on_cpu(o.device, "--parallel dp", "--parallel ddp runs CPU processes");
    if (!data_parallel_available()) FASTER_THROW("--parallel dp needs a CUDA build of faster");
    if (o.gpus > cuda_device_count())
      FASTER_THROW("--gpus ", o.gpus, " but ", cuda_device_count(), " CUDA device(s) visible");
  }
  if (dev.is_cpu()) {  // --fast names itself, not the flags it turned on
    const bool fast = o.mode_name == "fast";
    if (o.precision == Precision::kFloat16)
      refuse_on_cpu(o.device, fast ? "--fast (fp16 for ResNets)" : "--amp with fp16",
                    fast ? "" : "--amp-dtype bf16 runs on the CPU");
    if (o.cuda_graph) refuse_on_cpu(o.device, fast ? "--fast (CUDA graphs)" : "--cuda-graph");
    if (o.cudnn_benchmark) refuse_on_cpu(o.device, "--cudnn-benchmark");
    if (o.gpu_wait != GpuWait::kAuto) refuse_on_cpu(o.device, "--gpu-wait");
    if (o.decode == Decode::kNvjpeg)
      refuse_on_cpu(o.device, "--decode nvjpeg", "--decode cpu decodes on the CPU");
  }
  if (o.cuda_graph && !StepGraph::available())
    FASTER_THROW("--cuda-graph needs a CUDA build of faster");
}

}  // namespace

void validate(const TrainOptions& o) {
  check_range("--epochs", o.epochs, 1, kMaxEpochs);
  check_range("--print-freq", o.print_freq, 0, std::numeric_limits<int>::max());
  validate(static_cast<const DataOptions&>(o));
  validate_optimizer(o);
  validate_run(o);
  validate_parallel(o);
  validate_device(o);
}

namespace {
// A dataset's path as the report records it: absolute, so that a resume from another folder reads
// the same data (a relative path would follow the new folder).
std::string recorded_path(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

// Epochs as the command line numbers them.
std::vector<int> one_based(std::vector<int> epochs) {
  for (int& e : epochs) ++e;
  return epochs;
}

// Reads a run record's values into options, each where the record has it.
class RunRecord {
 public:
  RunRecord(const nlohmann::json& j, const std::string& where) : j_(j), where_(where) {}

  template <typename T>
  void take(const char* key, T& value) const {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return;
    try {
      value = it->template get<T>();
    } catch (const nlohmann::json::exception&) {
      FASTER_THROW(where_, ": its options' ", key, " is ", it->dump(), ", not a value of ", key);
    }
  }
  template <typename E, size_t N>
  void take(const char* key, const EnumName<E> (&names)[N], E& value) const {
    std::string name;
    take(key, name);
    if (name.empty()) return;
    for (const auto& e : names)
      if (name == e.name) return void(value = e.value);
    FASTER_THROW(where_, ": its options' ", key, " is '", name, "', not ", enum_choices(names));
  }
  // Epochs the record numbers from 1.
  void take_epochs(const char* key, std::vector<int>& epochs) const {
    std::vector<int> one;
    take(key, one);
    if (!j_.contains(key)) return;
    epochs = one;
    for (int& e : epochs) --e;
  }

 private:
  const nlohmann::json& j_;
  const std::string& where_;
};
}  // namespace

void read_old_crop_flips(nlohmann::json& saved, bool arrays) {
  if (!saved.is_object() || saved.contains("json")) return;
  const bool crops = !arrays || saved.value("res", 0) > 0;
  if (crops && saved.value("flip", "") == "off") saved["flip"] = "on";
}

void take_run_options(const nlohmann::json& saved, TrainOptions& o, const std::string& where) {
  if (!saved.is_object()) return;
  const RunRecord r(saved, where);
  r.take("model", o.model);
  r.take("recipe", kRecipeNames, o.recipe);
  r.take("epochs", o.epochs);
  r.take("batch", o.batch);
  r.take("lr", o.sgd.lr);
  r.take("lr_per_256", o.lr_per_256);
  r.take("momentum", o.sgd.momentum);
  r.take("weight_decay", o.sgd.weight_decay);
  r.take("weight_decay_1d", o.sgd.decay_1d);
  r.take("nesterov", o.sgd.nesterov);
  r.take("muon_lr", o.sgd.muon_lr);
  r.take("muon_momentum", o.sgd.muon_momentum);
  r.take("muon_steps", o.sgd.muon_steps);
  r.take("warmup_epochs", o.schedule.warmup_epochs);
  r.take("warmup_start", o.schedule.warmup_start);
  r.take("lr_decay", kLrDecayNames, o.schedule.decay);
  r.take("min_lr", o.schedule.min_lr);
  r.take_epochs("lr_steps", o.schedule.step_epochs);
  r.take("lr_gamma", o.schedule.step_gamma);
  r.take("lr_per_epoch", o.schedule.per_epoch);
  r.take("lr_warmup_method", kWarmupShapeNames, o.schedule.warmup_shape);
  r.take("lr_step_size", o.schedule.step_size);
  r.take("norm_weight_decay", o.sgd.norm_weight_decay);
  r.take("bias_weight_decay", o.sgd.bias_weight_decay);
  r.take("clip_grad_norm", o.clip_grad_norm);
  r.take("auto_augment", data::kAutoAugmentNames, o.auto_augment.policy);
  r.take("ra_magnitude", o.auto_augment.ra_magnitude);
  r.take("augmix_severity", o.auto_augment.augmix_severity);
  r.take("ra_reps", o.ra_reps);
  r.take("random_erase", o.augment.random_erase);
  r.take("mixup_alpha", o.augment.mixup_alpha);
  r.take("cutmix_alpha", o.augment.cutmix_alpha);
  r.take("label_smoothing", o.label_smoothing);
  r.take("ema", o.ema_decay);
  r.take("ema_every", o.ema_every);
  r.take("ema_warmup", o.ema_warmup);
  r.take("res", o.res.res);
  r.take("res_end", o.res.end_res);
  std::vector<int> ramp{o.res.ramp_start, o.res.ramp_end};
  r.take_epochs("res_ramp", ramp);
  if (ramp.size() == 2) o.res.ramp_start = ramp[0], o.res.ramp_end = ramp[1];
  r.take("res_step", o.res.step);
  r.take("val_res", o.val_res);
  r.take("val_resize", o.val_resize);
  r.take("crop_scale_min", o.crop_scale_min);
  r.take("translate", o.translate);
  r.take("flip", kFlipNames, o.flip);
  r.take("tta", o.tta);
  r.take("tta_shifts", o.tta_shifts);
  r.take("alternate_flips", o.alternate_flips);
  r.take("whiten", o.whiten);
  r.take("freeze_whitening", o.freeze_whitening);
  r.take("stem_dims", o.stem_dims);
  r.take("blocks", o.blocks);
  r.take("filters", o.filters);
  r.take("seed", o.seed);
  r.take("precision", kPrecisionNames, o.precision);
  r.take("last_batch", data::kLastBatchNames, o.last_batch);
  r.take("norm", models::kNormNames, o.norm);
  r.take("eval_every", o.eval_every);
}

nlohmann::json options_json(const TrainOptions& o) {
  const nlohmann::json cpu_share =
      o.cpu_share.adapt ? nlohmann::json("auto") : nlohmann::json(o.cpu_share.value);
  return {{"mode", o.mode_name},
          {"recipe", enum_name(kRecipeNames, o.recipe)},
          {"data", recorded_path(o.data)},
          {"val_data", recorded_path(o.val_data)},
          {"model", o.model},
          {"device", o.device},
          {"epochs", o.epochs},
          {"batch", o.batch},
          {"lr", o.sgd.lr},
          {"lr_per_256", o.lr_per_256},
          {"momentum", o.sgd.momentum},
          {"weight_decay", o.sgd.weight_decay},
          {"weight_decay_1d", o.sgd.decay_1d},
          {"nesterov", o.sgd.nesterov},
          {"muon_lr", o.sgd.muon_lr},
          {"muon_momentum", o.sgd.muon_momentum},
          {"muon_steps", o.sgd.muon_steps},
          {"warmup_epochs", o.schedule.warmup_epochs},
          {"warmup_start", o.schedule.warmup_start},
          {"lr_decay", enum_name(kLrDecayNames, o.schedule.decay)},
          {"min_lr", o.schedule.min_lr},
          {"lr_steps", one_based(o.schedule.step_epochs)},
          {"lr_gamma", o.schedule.step_gamma},
          {"lr_per_epoch", o.schedule.per_epoch},
          {"lr_warmup_method", enum_name(kWarmupShapeNames, o.schedule.warmup_shape)},
          {"lr_step_size", o.schedule.step_size},
          {"norm_weight_decay", o.sgd.norm_weight_decay},
          {"bias_weight_decay", o.sgd.bias_weight_decay},
          {"clip_grad_norm", o.clip_grad_norm},
          {"auto_augment", enum_name(data::kAutoAugmentNames, o.auto_augment.policy)},
          {"ra_magnitude", o.auto_augment.ra_magnitude},
          {"augmix_severity", o.auto_augment.augmix_severity},
          {"ra_reps", o.ra_reps},
          {"random_erase", o.augment.random_erase},
          {"mixup_alpha", o.augment.mixup_alpha},
          {"cutmix_alpha", o.augment.cutmix_alpha},
          {"label_smoothing", o.label_smoothing},
          {"ema", o.ema_decay},
          {"ema_every", o.ema_every},
          {"ema_warmup", o.ema_warmup},
          {"res", o.res.res},
          {"res_end", o.res.end_res},
          {"res_ramp", one_based({o.res.ramp_start, o.res.ramp_end})},
          {"res_step", o.res.step},
          {"train_limit", o.train_limit},
          {"test_limit", o.test_limit},
          {"val_res", o.val_res},
          {"val_resize", o.val_resize},
          {"crop_scale_min", o.crop_scale_min},
          {"translate", o.translate},
          {"flip", enum_name(kFlipNames, o.flip)},
          {"tta", o.tta},
          {"tta_shifts", o.tta_shifts},
          {"alternate_flips", o.alternate_flips},
          {"whiten", o.whiten},
          {"freeze_whitening", o.freeze_whitening},
          {"stem_dims", o.stem_dims},
          {"prewarm", o.prewarm},
          {"decode", enum_name(kDecodeChoices, o.decode)},
          {"cpu_share", cpu_share},
          {"nvjpeg_threads", o.nvjpeg_threads},
          {"blocks", o.blocks},
          {"filters", o.filters},
          {"seed", o.seed},
          {"eval_every", o.eval_every},
          {"cudnn_benchmark", o.cudnn_benchmark},
          {"cudnn_benchmark_limit", o.cudnn_benchmark_limit},
          {"cudnn_benchmark_all_shapes", o.cudnn_benchmark_all_shapes},
          {"precision", enum_name(kPrecisionNames, o.precision)},
          {"channels_last", o.channels_last},
          {"loader", enum_name(kLoaderNames, o.loader)},
          {"workers", o.workers},
          {"last_batch", enum_name(data::kLastBatchNames, o.last_batch)},
          {"cuda_graph", o.cuda_graph},
          {"gpu_wait", enum_name(kGpuWaitNames, o.gpu_wait)},
          {"norm", enum_name(models::kNormNames, o.norm)},
          {"fused_norm_relu", o.fused},
          {"parallel", enum_name(kParallelNames, o.parallel)},
          {"sync_bn", o.sync_bn},
          {"bucket_mb", o.bucket_mb},
          {"save", recorded_path(o.save)},
          {"checkpoint", recorded_path(o.checkpoint)},
          {"keep_checkpoints", o.keep_checkpoints},
          {"log_dir", recorded_path(o.log_dir)},
          {"json", recorded_path(o.json)},
          {"output_dir", recorded_path(o.output_dir)},
          {"weights", is_weights_name(o.weights) ? o.weights : recorded_path(o.weights)}};
}

}  // namespace faster::train

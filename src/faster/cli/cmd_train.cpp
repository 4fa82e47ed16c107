// `faster train`: flags -> TrainOptions (a recipe fills what the user did not say), then the
// trainer; a progress bar per epoch, one line per epoch and a summary.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <thread>
#include <tuple>

#include "faster/cli/command.h"
#include "faster/core/early_context.h"
#include "faster/core/enum_names.h"
#include "faster/core/error.h"
#include "faster/models/registry.h"
#include "faster/models/thinnet.h"
#include "faster/tools/file_io.h"
#include "faster/tools/tree.h"
#include "faster/train/checkpoint.h"
#include "faster/train/parallel/launch.h"
#include "faster/train/parallel/world.h"
#include "faster/train/trainer.h"

namespace faster::cli {
namespace {
namespace fs = std::filesystem;

// Whether this process is a rank a launcher started (torchrun and our own set RANK; srun's tasks).
bool in_launched_job() {
  const char* rank = std::getenv("RANK");
  return (rank && *rank) || train::in_slurm_step();
}

// The choices of the enum flags that offer part of their enum.
constexpr EnumName<train::Precision> kAmpDtypes[] = {{"fp16", train::Precision::kFloat16},
                                                     {"bf16", train::Precision::kBFloat16}};
constexpr EnumName<data::LastBatch> kTrainLastBatch[] = {{"keep", data::LastBatch::kKeep},
                                                         {"drop", data::LastBatch::kDrop}};
constexpr EnumName<models::Norm> kThinNetNorms[] = {{"batch", models::Norm::kBatch},
                                                    {"none", models::Norm::kNone}};

struct TrainFlags {
  train::TrainOptions o;
  std::string blocks, filters;  // empty: the recipe's or the model's (apply_recipe)
  bool amp = false;
  train::Precision amp_dtype = train::Precision::kFloat16;
  train::Recipe recipe = train::Recipe::kSeed;
  std::string res_ramp, lr_steps;
  bool fast = false;
  bool no_fuse = false;
  int nproc = 0;
  bool nproc_taken = false;  // --nproc is a resumed DDP run's world size (apply_recipe)
  CLI::App* cmd = nullptr;
  // Resuming with no --recipe: the checkpoint's run fills what is not given (apply_recipe), its
  // precision too where no --fast/--amp/--amp-dtype is given.
  bool from_checkpoint = false;
  std::optional<train::Precision> saved_precision;
  bool ramp_taken = false;      // --res-ramp's epochs are the checkpoint's
  std::string taken_outputs;    // " --checkpoint C --save S ...": a resume's, from its checkpoint
  std::string dropped_outputs;  // what of them is not written, and why
  bool arrays = false;          // --data is a small dataset (apply_recipe looks once)

  // Whether the command line gave `flag` (else a recipe or a default decides).
  bool given(const char* flag) const { return cmd->get_option(flag)->count() > 0; }
};

// This program's arguments, without its name, from /proc (the launcher restarts it with them).
std::vector<std::string> own_args() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(in, a, '\0')) args.push_back(a);
  if (!args.empty()) args.erase(args.begin());
  return args;
}

std::string model_list() {
  std::string s;
  for (const auto& n : models::model_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

void add_train_flags(CLI::App* cmd, TrainFlags& f) {
  auto& o = f.o;
  // A flag given twice takes its last value (scripts append overrides to a base command).
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--data", o.data,
                  "A small dataset folder (Fashion-MNIST/MNIST idx files, gzip or raw, or CIFAR-10 "
                  "binary batches), or a JPEG dataset: a root holding train/<class>/*.jpg and "
                  "val/<class>/*.jpg (each may instead be an LMDB from 'faster pack'), or an LMDB")
      ->capture_default_str();
  cmd->add_option("--val-data", o.val_data,
                  "The validation split, when it is not DATA/val (a folder of class folders or an "
                  "LMDB); with it, --data may name the training split itself");
  cmd->add_option("--model", o.model,
                  "Network: " + model_list() +
                      " (default: thinnet for small datasets, resnet50 for "
                      "JPEG datasets)");
  add_enum_option(cmd, "--recipe", f.recipe, train::kRecipeNames,
                  "Defaults for what is not given: seed (the seed benchmark: ThinNet 3,3,2, SGD "
                  "lr 1e-3, batch 512, 5 epochs), cpu (ThinNet 0,0,0 with filters 16,32,64, SGD "
                  "nesterov lr 0.05, weight decay 5e-4, 0.2 warm-up epochs then cosine, batch "
                  "128, 2 epochs: 88.8 % on Fashion-MNIST in under a minute on 2 cores), imagenet "
                  "(SGD nesterov 0.1 x batch/256, weight decay 5e-5 not on norms and biases, label "
                  "smoothing 0.1, 2 warm-up epochs then cosine, batch 256, 16 epochs, --res 224), "
                  "speedrun (speednet, time to 94 % on Fashion-MNIST from process start: "
                  "docs/training.md) or speedrun95 (longer, wider); default: for thinnet seed on "
                  "a GPU and cpu on the CPU, imagenet for ResNets, speedrun for speednet")
      ->default_str("");
  cmd->add_option("--device", o.device, "auto (a GPU if one is visible), cpu, cuda or cuda:N")
      ->capture_default_str();
  cmd->add_option("--epochs", o.epochs, "Epochs (default: the recipe's)");
  cmd->add_option("--batch", o.batch, "Batch size per process (per GPU with DDP)");
  cmd->add_option("--lr", o.sgd.lr,
                  "Peak SGD learning rate (default: the recipe's; imagenet: 0.1 x global "
                  "batch / 256)");
  cmd->add_option("--momentum", o.sgd.momentum, "SGD momentum (default: the recipe's)");
  cmd->add_option("--weight-decay", o.sgd.weight_decay, "SGD weight decay (L2)");
  cmd->add_flag("--nesterov,!--no-nesterov", o.sgd.nesterov,
                "Nesterov momentum (default: the recipe's)")
      ->default_str("");
  cmd->add_flag("--decay-norm-bias,!--no-decay-norm-bias", o.sgd.decay_1d,
                "Weight decay on BatchNorm weights and biases too (imagenet: no)");
  cmd->add_option("--muon-lr", o.sgd.muon_lr,
                  "Muon (airbench's optimizer) for the convolution filters at this peak rate, "
                  "scaled by the schedule as --lr is: each filter bank's Nesterov momentum, one "
                  "row per output channel, orthogonalized by Newton-Schulz iterations, the bank's "
                  "norm held at sqrt(output channels), no weight decay; the other parameters keep "
                  "SGD.  0: SGD for all (the default but in the speedrun recipe, 0.16, where its "
                  "stem is frozen)");
  cmd->add_option("--muon-momentum", o.sgd.muon_momentum,
                  "Muon's momentum (Nesterov as --nesterov says)")
      ->capture_default_str();
  cmd->add_option("--muon-steps", o.sgd.muon_steps, "Muon's Newton-Schulz iterations per step")
      ->capture_default_str();
  add_enum_option(cmd, "--lr-decay", o.schedule.decay, train::kLrDecayNames,
                  "After the warm-up: constant, cosine or linear (to --min-lr at the last step) "
                  "or step (x --lr-gamma at each of --lr-steps); default: the recipe's")
      ->default_str("");
  cmd->add_option("--warmup-epochs", o.schedule.warmup_epochs,
                  "Linear learning-rate warm-up, per step, over this many epochs");
  cmd->add_option("--warmup-start", o.schedule.warmup_start,
                  "The warm-up's first rate, as a fraction of --lr");
  cmd->add_option("--min-lr", o.schedule.min_lr,
                  "Cosine, linear: the last rate, a fraction of --lr (default: the recipe's)");
  cmd->add_option("--lr-steps", f.lr_steps,
                  "Step decay: epochs (1-based) where the rate drops, "
                  "e.g. 30,60,80");
  cmd->add_option("--lr-gamma", o.schedule.step_gamma, "Step decay: the factor at each step")
      ->capture_default_str();
  cmd->add_option("--label-smoothing", o.label_smoothing, "Cross-entropy label smoothing");
  cmd->add_option("--ema", o.ema_decay,
                  "Keep an exponential moving average of the weights with this decay per step "
                  "(e.g. 0.9999); evaluation and --save then use the average");
  cmd->add_option("--blocks", f.blocks,
                  "ThinNet: duplicate convs per stage (default: the recipe's; seed 3,3,2 = 11 conv "
                  "layers, cpu 0,0,0); speednet: convs per stage after its pooled entry conv "
                  "(default 1,1,1)");
  cmd->add_option("--filters", f.filters,
                  "Filters per stage (thinnet: seed 32,64,128, cpu 16,32,64; speednet: "
                  "64,128,256, speedrun95 96,192,384)");
  add_seed_option(cmd, o.seed, "Seed for weights, the per-epoch shuffle and the crops");
  cmd->add_option("--res", o.res.res,
                  "Training resolution: random-resized-crop side (default: the recipe's; 224 for "
                  "JPEG data and under imagenet); 0: a small dataset as stored, no crops");
  cmd->add_option("--res-end", o.res.end_res,
                  "Progressive resizing: ramp the training resolution linearly to this over "
                  "--res-ramp (FFCV-style)");
  cmd->add_option("--res-ramp", f.res_ramp,
                  "Progressive resizing: epochs A:B (1-based) over which --res becomes --res-end");
  cmd->add_option("--res-step", o.res.step, "Progressive resizing: round to a multiple of this")
      ->capture_default_str();
  add_val_side_option(cmd, "--val-res", o.val_res, data::kMaxSide,
                      "Validation center-crop side (default: --res; FixRes: evaluate higher than "
                      "you train)");
  add_val_side_option(cmd, "--val-resize", o.val_resize, 2 * data::kMaxSide,
                      "Validation: shorter side resized to this first (default --val-res * "
                      "256/224)");
  cmd->add_option("--crop-scale", o.crop_scale_min,
                  "Random-resized-crop: the smallest crop, as a fraction of the image's area")
      ->capture_default_str();
  add_enum_option(cmd, "--decode", o.decode, train::kDecodeChoices,
                  "JPEG decoding: cpu (libjpeg-turbo in the loader threads), nvjpeg (the GPU's "
                  "JPEG engines) or auto (nvjpeg on a GPU, cpu for images of at most 160x160 "
                  "pixels, where nvJPEG's cost per image outweighs it)");
  add_nvjpeg_options(cmd, o.cpu_share, o.nvjpeg_threads);
  add_enum_option(cmd, "--on-bad-image", o.on_bad_image, data::kBadImageNames,
                  "A corrupt or unreadable image: skip (replace it by the next one, count and "
                  "report it) or fail (stop with its name)");
  cmd->add_option("--eval-every", o.eval_every, "Evaluate every N epochs (and after the last)")
      ->capture_default_str();
  cmd->add_flag("--cudnn-benchmark", o.cudnn_benchmark,
                "Let cuDNN time its algorithms (cudnn.benchmark) for the full-batch shape; a short "
                "last training batch uses cuDNN's heuristics and short test batches are padded");
  cmd->add_flag("--cudnn-benchmark-all-shapes", o.cudnn_benchmark_all_shapes,
                "With --cudnn-benchmark: tune every new shape, short batches too (PyTorch's "
                "behaviour; slower on short runs)");
  cmd->add_option("--cudnn-benchmark-limit", o.cudnn_benchmark_limit,
                  "With --cudnn-benchmark: how many algorithms cuDNN times per shape (fewer: "
                  "cheaper first steps, maybe slower later ones; 0: all)")
      ->capture_default_str();
  cmd->add_flag("--amp", f.amp, "Mixed precision: autocast the forward pass (see --amp-dtype)");
  add_enum_option(cmd, "--amp-dtype", f.amp_dtype, kAmpDtypes,
                  "fp16 (with a dynamic grad scaler that skips steps with inf/NaN gradients) or "
                  "bf16 (no scaler)");
  cmd->add_flag("--channels-last,!--no-channels-last", o.channels_last,
                "NHWC memory format for weights and inputs (default: on for ThinNet on the CPU)");
  add_enum_option(cmd, "--loader", o.loader, train::kLoaderNames,
                  "host (worker threads fill pinned batches copied on a side stream, or nvJPEG "
                  "decodes on the GPU), device (small datasets: the whole dataset lives on the "
                  "device as uint8 and batches are gathered there; no crops) or synthetic (the "
                  "model alone: one random batch of the training shape at every step, nothing "
                  "read or decoded; validation still reads the data); default: the recipe's, and "
                  "device on the CPU for a small dataset kept as stored")
      ->default_str("");
  cmd->add_option("--workers", o.workers,
                  "Host loader threads (default: 4 for small datasets, all cores for JPEG "
                  "data; --loader device uses none)");
  add_enum_option(cmd, "--last-batch", o.last_batch, kTrainLastBatch,
                  "Short last training batch of an epoch: keep (train on it) or drop (default: "
                  "the recipe's)")
      ->default_str("");
  cmd->add_flag("--cuda-graph", o.cuda_graph,
                "Capture the train and test steps as CUDA graphs (static shapes; short batches "
                "run eagerly, test batches are padded)");
  add_enum_option(cmd, "--gpu-wait", o.gpu_wait, train::kGpuWaitNames,
                  "How threads wait for the GPU: auto (CUDA's: spin while the process has fewer "
                  "contexts than cores), spin, yield, or block (the thread sleeps until the GPU is "
                  "done, its core free for the JPEG loader's threads)");
  cmd->add_flag("--fast", f.fast,
                "Fastest mode: --amp --channels-last --cuda-graph --last-batch drop, and "
                "--loader device with bf16 for ThinNet, fp16 with --cudnn-benchmark for ResNets "
                "(one static shape per step; --amp-dtype overrides)");
  cmd->add_option("--train-limit", o.train_limit,
                  "Small datasets: use only the first N training images (0 = all)");
  cmd->add_option("--test-limit", o.test_limit,
                  "Small datasets: use only the first N test images (0 = all)");
  cmd->add_option("--log-dir", o.log_dir,
                  "Write metrics as JSON lines to DIR/metrics.jsonl and a chart of loss and "
                  "accuracy per epoch to DIR/metrics.svg");
  cmd->add_option("--save", o.save,
                  "Write the trained weights as a PyTorch state_dict (torchvision's names for "
                  "ResNets: torchvision.models.resnet50(num_classes=K).load_state_dict reads it)");
  cmd->add_option("--checkpoint", o.checkpoint,
                  "Write the whole training state here after every epoch (atomically)");
  cmd->add_flag("--keep-checkpoints", o.keep_checkpoints,
                "With --checkpoint: also keep every epoch's as CHECKPOINT.epochN");
  cmd->add_option("--resume", o.resume,
                  "Continue from a --checkpoint file: the next epoch, the same data order, "
                  "weights, momentum, EMA and schedule.  The run's settings (data, model, "
                  "epochs, batch, rates, augmentation, precision, DDP and its --nproc...) are "
                  "the checkpoint's where no flag is given; a flag given wins, with a warning "
                  "where it changes the run; "
                  "--recipe R takes R's settings instead.  From the run's latest checkpoint with "
                  "no output named, it writes the run's outputs (--checkpoint, --save, --json, "
                  "--log-dir) too");
  cmd->add_option("--json", o.json,
                  "Write the run's report (options, per-epoch metrics, time) as JSON");
  add_enum_option(cmd, "--norm", o.norm, kThinNetNorms,
                  "ThinNet normalization after each conv+ReLU: batch or none");
  cmd->add_flag(
      "--no-fuse", f.no_fuse,
      "Run BatchNorm, the residual add and the activation as LibTorch's separate ops instead of "
      "one fused kernel (used on CUDA by default where it applies: ThinNet's ReLU + BatchNorm "
      "and SpeedNet's BatchNorm + GELU as faster's kernels; ResNets' BatchNorm (+ add) + ReLU as "
      "cuDNN's in "
      "fp16 channels-last training, e.g. --fast)");
  auto* sr = cmd->add_option_group("Small datasets as stored (device loader)");
  sr->add_option("--translate", o.translate,
                 "Shift each training image by up to this many pixels (zeros enter; speedrun: 2)");
  add_enum_option(sr, "--flip", o.flip, train::kFlipNames,
                  "Horizontal flips (training, and --tta).  Crops (JPEG data, --res) mirror half "
                  "the images at random unless --flip off (for data whose left and right "
                  "differ).  Small datasets as stored: on, off, or auto (speedrun) = "
                  "Fashion-MNIST (a folder, or its parent, named *fashion* or *fmnist*) and "
                  "CIFAR-10, not MNIST's digits or other sets; default: the recipe's, off but for "
                  "speedrun")
      ->default_str("");
  sr->add_flag("--tta,!--no-tta", o.tta,
               "Test-time augmentation: the mean of the logits of each test image and its mirror "
               "image (where training flips: crops of JPEG data or --res always, small datasets "
               "as stored per --flip)");
  sr->add_flag("--tta-shifts,!--no-tta-shifts", o.tta_shifts,
               "Test-time augmentation over shifts too (airbench's second level): 0.5 x the "
               "logits of each test image + 0.25 x those of the image shifted one pixel "
               "down-right and one up-left (edges reflected), each with its mirror image under "
               "--tta");
  sr->add_flag("--alternate-flips,!--random-flips", o.alternate_flips,
               "--flip: each image flipped in the epochs its first coin says and unflipped in the "
               "others, alternately (airbench's alternating flip), instead of a new coin each "
               "epoch");
  sr->add_flag("--whiten,!--no-whiten", o.whiten,
               "speednet: start the stem as the whitening of the training images' 3x3 patches");
  sr->add_flag("--freeze-whitening,!--train-whitening", o.freeze_whitening,
               "speednet: keep the whitened stem as initialised (speedrun: on; its backward "
               "pass is then skipped)");
  sr->add_option("--stem-dims", o.stem_dims,
                 "speednet: directions of the 3x3 patches the stem keeps, the largest-variance "
                 "ones when whitened; the stem has two channels each (default: all 9 x channels; "
                 "speedrun: 8 of a gray image's 9, all of a colour image's)");
  sr->add_flag("--prewarm,!--no-prewarm", o.prewarm,
               "Read the data while the GPU and its libraries start, and run every step shape "
               "once (CUDA graphs captured) before the first epoch");
  auto* par = cmd->add_option_group("Parallel training");
  add_enum_option(par, "--parallel", o.parallel, train::kParallelNames,
                  "none; dp: DataParallel, one process over --gpus GPUs; ddp: "
                  "DistributedDataParallel, a process per GPU (or CPU process with Gloo), started "
                  "by --nproc, torchrun (--no-python) or Slurm (srun); each rank reads its own "
                  "shard of every epoch (DistributedSampler semantics)");
  par->add_option("--nproc", f.nproc,
                  "ddp: start this many local ranks and wait for them (like "
                  "torch.distributed.launch); without it the ranks come from torchrun's or "
                  "Slurm's environment");
  par->add_option("--gpus", o.gpus, "dp: GPUs to use (default: all visible)");
  par->add_option("--bucket-mb", o.bucket_mb,
                  "ddp: gradient bucket size in MB; buckets are all-reduced while backward runs")
      ->capture_default_str();
  par->add_flag("--sync-bn", o.sync_bn, "ddp: SyncBatchNorm (batch statistics over all ranks)");
  par->add_option("--dist-timeout", o.dist_timeout_s,
                  "ddp: seconds to wait for the other ranks (rendezvous and each collective)")
      ->capture_default_str();
}

// Fills what the user did not give from the recipe (the model's unless --recipe names one), or,
// resuming, from the checkpoint's run.
void apply_recipe(TrainFlags& f) {
  auto& o = f.o;
  const auto unset = [&](const char* flag) { return !f.given(flag); };
  // A resumed run continues its checkpoint's run: what is not given is the checkpoint's, as it is
  // a recipe's for a new run (--recipe names a recipe to take instead); its data too.
  nlohmann::json resumed = nlohmann::json::object();  // the checkpoint's run options
  if (!o.resume.empty()) {
    train::check_resume_file(o.resume);
    const auto meta = train::checkpoint_meta(train::read_state_dict(o.resume), o.resume);
    resumed = meta.value("options", nlohmann::json::object());
    // Its outputs, where none is named and C is the run's own latest checkpoint (the interrupted
    // run's hint, "--resume C goes on from there"): the run goes on writing them, so a second
    // interruption loses nothing.  From an earlier epoch's copy (C.epochN) they would replace the
    // later epochs' results: nothing is written unless named.
    const std::string own = resumed.value("checkpoint", std::string());
    const bool none_named = unset("--save") && unset("--checkpoint") &&
                            unset("--keep-checkpoints") && unset("--log-dir") && unset("--json");
    std::error_code same_ec;  // C named otherwise, or a C.epochN linked to C, is C
    const bool latest = !own.empty() && fs::equivalent(own, o.resume, same_ec);
    const std::string keep = "; name --checkpoint, --save or --json to keep this run's results)";
    if (none_named && own.empty())
      f.dropped_outputs = " (nothing: " + o.resume + " records no outputs of its run" + keep;
    else if (none_named && !latest)
      f.dropped_outputs = " (nothing: its run checkpoints to " + own + ", not " + o.resume + keep;
    else if (!none_named && latest)
      f.dropped_outputs = " the run's outputs but those named (naming one names them all)";
    if (none_named && latest) {
      o.outputs_from_checkpoint = true;
      // Each where its folder still is (a checkpoint copied to another machine: not there).
      for (const auto& [flag, key, path] : {std::tuple{"--checkpoint", "checkpoint", &o.checkpoint},
                                            {"--save", "save", &o.save},
                                            {"--log-dir", "log_dir", &o.log_dir},
                                            {"--json", "json", &o.json}}) {
        const std::string saved = resumed.value(key, std::string());
        std::error_code ec;
        if (saved.empty()) continue;
        if (!fs::is_directory(fs::path(saved).parent_path(), ec)) {
          f.dropped_outputs += std::string(" ") + flag + " " + saved + " (its folder is gone)";
          continue;
        }
        *path = saved;
        f.taken_outputs += std::string(" ") + flag + " " + saved;
      }
      o.keep_checkpoints = !o.checkpoint.empty() && resumed.value("keep_checkpoints", false);
      if (o.keep_checkpoints) f.taken_outputs += " --keep-checkpoints";
    }
    // A DDP run goes on as DDP: inside a launched job (torchrun, srun) the launcher gives the
    // ranks; from a shell, --nproc its world size launches them here, where they all ran on one
    // machine (a job of several is launched as it was, on each).
    if (unset("--parallel") && unset("--nproc") && resumed.value("parallel", "") == "ddp") {
      o.parallel = train::Parallel::kDdp;
      if (!in_launched_job()) {
        const int world = resumed.value("world_size", 1);
        const int local = resumed.value("local_world_size", world);
        if (local != world)
          throw Error(
              "--resume " + o.resume + ": its run had " + std::to_string(world) + " ranks, " +
                  std::to_string(local) + " a machine",
              "launch it as it ran (torchrun or srun on each machine) with --resume " + o.resume);
        f.nproc = world;
        f.nproc_taken = true;
      }
    }
    // Its data, and the data's own settings with it (whatever --recipe says; not for other data).
    if (unset("--data")) {
      o.data = resumed.value("data", o.data);
      std::error_code ec;
      if (!fs::exists(o.data, ec))
        throw Error("--resume " + o.resume + ": its run's data, " + o.data + ", does not exist",
                    "--data names where it is now");
      if (unset("--val-data")) o.val_data = resumed.value("val_data", o.val_data);
      if (unset("--train-limit")) o.train_limit = resumed.value("train_limit", o.train_limit);
      if (unset("--test-limit")) o.test_limit = resumed.value("test_limit", o.test_limit);
    }
  }
  // The files first: what is derived below from a dataset or a checkpoint that is not there would
  // only blame a flag for it.
  train::check_run_files(o);
  const bool arrays = f.arrays = data::is_small_dataset(o.data);
  // JPEG data: the loader's streams (nvJPEG's stage, the host copies) run beside the training's;
  // before resolve_device below, the first CUDA call.
  if (!arrays) ask_for_more_work_queues();  // whatever the device: a test can see it on a CPU
  std::optional<train::Recipe> recipe;
  if (!unset("--recipe")) recipe = f.recipe;
  if (!o.resume.empty()) {  // its model unless --model names one, its recipe unless --recipe does
    if (unset("--model")) o.model = resumed.value("model", o.model);
    const std::string saved = resumed.value("recipe", "");
    if (!recipe && !saved.empty()) recipe = parse_enum(train::kRecipeNames, saved, "--recipe");
  } else if (unset("--model")) {
    o.model = train::is_speedrun(f.recipe) ? "speednet" : arrays ? "thinnet" : "resnet50";
  }
  const auto device = train::resolve_device(o.device);
  o.recipe = recipe ? *recipe : train::default_recipe(o.model, device);
  auto r = train::recipe_options(o.recipe);
  f.from_checkpoint = !o.resume.empty() && unset("--recipe");
  if (f.from_checkpoint) {
    train::read_old_crop_flips(resumed, arrays);
    train::take_run_options(resumed, r, o.resume);
    // ...in the mode and precision it ran in, where this device has them (a GPU's run resumed
    // on a CPU goes on in fp32 or bf16, and the warning names the change).
    if (unset("--fast") && unset("--amp") && unset("--amp-dtype")) {
      f.fast = f.fast || (device.is_cuda() && resumed.value("mode", "") == "fast");
      if (device.is_cuda() || r.precision != train::Precision::kFloat16)
        f.saved_precision = r.precision;
    }
    // DDP's SyncBatchNorm, where this run is DDP too.
    if (unset("--sync-bn") && o.parallel == train::Parallel::kDdp)
      o.sync_bn = resumed.value("sync_bn", o.sync_bn);
    if (unset("--channels-last")) o.channels_last = resumed.value("channels_last", o.channels_last);
  }
  // A resumed run goes on to the end its checkpoint's run was going to.
  if (unset("--epochs")) o.epochs = resumed.value("epochs", r.epochs);
  if (unset("--batch")) o.batch = r.batch;
  if (unset("--lr")) o.sgd.lr = r.sgd.lr, o.lr_per_256 = r.lr_per_256;
  if (unset("--momentum")) o.sgd.momentum = r.sgd.momentum;
  if (unset("--nesterov")) o.sgd.nesterov = r.sgd.nesterov;
  if (unset("--weight-decay")) o.sgd.weight_decay = r.sgd.weight_decay;
  if (unset("--decay-norm-bias")) o.sgd.decay_1d = r.sgd.decay_1d;
  if (unset("--muon-lr")) o.sgd.muon_lr = r.sgd.muon_lr;
  if (unset("--muon-momentum")) o.sgd.muon_momentum = r.sgd.muon_momentum;
  if (unset("--muon-steps")) o.sgd.muon_steps = r.sgd.muon_steps;
  if (unset("--label-smoothing")) o.label_smoothing = r.label_smoothing;
  // The recipe's warm-up, at most an eighth of a shorter run (a checkpoint's as it ran).
  if (unset("--warmup-epochs"))
    o.schedule.warmup_epochs = f.from_checkpoint
                                   ? r.schedule.warmup_epochs
                                   : std::min(r.schedule.warmup_epochs, o.epochs / 8.0);
  if (unset("--warmup-start")) o.schedule.warmup_start = r.schedule.warmup_start;
  if (unset("--lr-decay")) o.schedule.decay = r.schedule.decay;
  // JPEG images need a crop size.
  if (unset("--res")) o.res.res = arrays || f.from_checkpoint ? r.res.res : 224;
  // What no recipe sets, the defaults a new run starts from or a checkpoint's run ran with.
  if (unset("--res-end")) o.res.end_res = r.res.end_res;
  if (unset("--res-ramp")) {
    o.res.ramp_start = r.res.ramp_start, o.res.ramp_end = r.res.ramp_end;
    f.ramp_taken = f.from_checkpoint && r.res.end_res != 0;  // the checkpoint's run ramped
  }
  if (unset("--res-step")) o.res.step = r.res.step;
  if (unset("--lr-steps")) o.schedule.step_epochs = r.schedule.step_epochs;
  if (unset("--lr-gamma")) o.schedule.step_gamma = r.schedule.step_gamma;
  if (unset("--crop-scale")) o.crop_scale_min = r.crop_scale_min;
  if (unset("--val-res")) o.val_res = r.val_res;
  if (unset("--val-resize")) o.val_resize = r.val_resize;
  if (unset("--seed")) o.seed = r.seed;
  if (unset("--norm")) o.norm = r.norm;
  if (unset("--workers"))
    o.workers = arrays ? 4 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Widths: the recipe's for its own model, else the model's own.
  const auto widths = models::default_widths(o.model);
  const bool recipe_model = r.model == o.model;
  o.blocks = !unset("--blocks") ? models::parse_int_list(f.blocks, "--blocks")
             : recipe_model     ? r.blocks
                                : widths.blocks;
  o.filters = !unset("--filters") ? models::parse_int_list(f.filters, "--filters")
              : recipe_model      ? r.filters
                                  : widths.filters;
  if (unset("--stem-dims")) o.stem_dims = recipe_model ? r.stem_dims : 0;
  if (unset("--ema")) o.ema_decay = r.ema_decay;
  if (unset("--min-lr")) o.schedule.min_lr = r.schedule.min_lr;
  if (unset("--eval-every")) o.eval_every = r.eval_every;
  if (unset("--translate")) o.translate = r.translate;
  if (unset("--flip")) o.flip = r.flip;
  // Crops flip (torchvision's RandomHorizontalFlip) unless --flip off says otherwise.
  if (unset("--flip") && !f.from_checkpoint && (!arrays || o.res.res > 0))
    o.flip = train::Flip::kOn;
  if (unset("--tta")) o.tta = r.tta;
  if (unset("--tta-shifts")) o.tta_shifts = r.tta_shifts;
  if (unset("--alternate-flips")) o.alternate_flips = r.alternate_flips;
  if (unset("--whiten")) o.whiten = r.whiten;
  if (unset("--freeze-whitening")) o.freeze_whitening = r.freeze_whitening && o.whiten;
  // The recipe's Muon is for its own model with the stem frozen (no BatchNorm follows SpeedNet's
  // stem): another model, or a stem trained, goes on SGD alone.
  if (unset("--muon-lr") && !(recipe_model && o.freeze_whitening)) o.sgd.muon_lr = 0;
  if (unset("--prewarm")) o.prewarm = r.prewarm;
  if (unset("--loader")) o.loader = r.loader;
  if (unset("--last-batch")) o.last_batch = r.last_batch;
  // The time-to-accuracy recipes run in the fastest mode wherever it exists (a GPU).
  if (train::is_speedrun(o.recipe) && device.is_cuda()) f.fast = true;
  // Arrays kept as stored, on the CPU: they already are in the device's memory, so a batch is one
  // gather, with no loader threads to compete with the compute threads for the cores.
  if (unset("--loader") && arrays && device.is_cpu() && o.res.res == 0)
    o.loader = train::LoaderKind::kDevice;
  // oneDNN's CPU convolutions take NHWC as it is, and reorder NCHW to their blocked layout and
  // back around every convolution: a fifth of the seed ThinNet's oneDNN time (BENCHMARKS.md).
  if (unset("--channels-last") && !f.from_checkpoint && device.is_cpu() &&
      models::family(o.model) == models::Family::kThinNet)
    o.channels_last = true;
}

// The recipe's line before training: what the flags not given became.
void print_recipe(const TrainFlags& f) {
  const auto& o = f.o;
  if (!f.taken_outputs.empty())
    std::printf("writing as the resumed run did:%s\n", f.taken_outputs.c_str());
  if (!f.dropped_outputs.empty()) std::printf("not writing%s\n", f.dropped_outputs.c_str());
  std::printf("recipe %s: %s", enum_name(train::kRecipeNames, o.recipe), o.model.c_str());
  if (models::family(o.model) != models::Family::kResNet)
    std::printf(" blocks %s filters %s", comma_list(o.blocks).c_str(),
                comma_list(o.filters).c_str());
  std::printf(", %d epoch%s, batch %lld, SGD lr %g%s", o.epochs, o.epochs == 1 ? "" : "s",
              static_cast<long long>(o.batch), o.lr_per_256 > 0 ? o.lr_per_256 : o.sgd.lr,
              o.lr_per_256 > 0 ? " per 256" : "");
  if (o.sgd.muon_lr > 0) std::printf(" (filters: Muon lr %g)", o.sgd.muon_lr);
  // Crops (JPEG data, or --res on a small dataset): the side they are trained at.
  if (o.res.res > 0) std::printf(", res %d", o.res.res);
  std::printf(", %s decay, %s loader%s\n", enum_name(train::kLrDecayNames, o.schedule.decay),
              enum_name(train::kLoaderNames, o.loader), o.channels_last ? ", channels-last" : "");
  if (o.recipe == train::Recipe::kCpu && !f.given("--recipe"))
    std::printf(
        "(no GPU: a ThinNet sized for the CPU; --recipe seed trains the seed's benchmark)\n");
  if (train::is_speedrun(o.recipe) && train::resolve_device(o.device).is_cpu())
    std::printf("(%s is timed for a GPU: on a CPU each epoch takes minutes)\n",
                enum_name(train::kRecipeNames, o.recipe));
  std::fflush(stdout);
}

// Refuses two outputs on one file (the later write would replace the earlier), and a --save or
// --json onto the checkpoint --resume reads.
void check_distinct_outputs(const TrainFlags& f) {
  const auto& o = f.o;
  const auto same = [](const std::string& a, const std::string& b) {
    return !a.empty() && !b.empty() && resolved(a) == resolved(b);
  };
  const std::pair<const char*, const std::string*> outputs[] = {
      {"--save", &o.save}, {"--checkpoint", &o.checkpoint}, {"--json", &o.json}};
  for (size_t i = 0; i < std::size(outputs); ++i) {
    for (size_t j = i + 1; j < std::size(outputs); ++j)
      if (same(*outputs[i].second, *outputs[j].second))
        FASTER_USAGE_ERROR(outputs[i].first, " and ", outputs[j].first, " name one file (",
                           *outputs[i].second, "): the one would overwrite the other");
    // --checkpoint may be the --resume file: the run goes on writing the checkpoint it read.
    if (i != 1 && same(*outputs[i].second, o.resume))
      FASTER_USAGE_ERROR(outputs[i].first, " ", *outputs[i].second,
                         " is the checkpoint --resume reads: it would be overwritten");
  }
}

// The flags as TrainOptions: the recipe's defaults, the parsed lists, the modes.
void resolve_flags(TrainFlags& f) {
  auto& o = f.o;
  check_distinct_outputs(f);
  apply_recipe(f);
  if (!f.taken_outputs.empty()) check_distinct_outputs(f);
  const bool arrays = f.arrays;
  // --res 0 trains a small dataset as stored (a ResNet's recipe crops it otherwise); JPEG images
  // need a crop size.
  if (f.given("--res") && o.res.res == 0 && !arrays)
    FASTER_USAGE_ERROR(
        "--res 0 (as stored) is for small datasets; JPEG images need a crop side "
        "from 8 to ",
        data::kMaxSide);
  for (const char* flag : {"--blocks", "--filters"})
    if (models::family(o.model) == models::Family::kResNet && f.given(flag))
      FASTER_USAGE_ERROR(flag, " shapes thinnet and speednet; ", o.model,
                         " has torchvision's layers (--model resnet18|resnet34|resnet50)");
  if (f.given("--stem-dims")) check_at_least("--stem-dims", o.stem_dims, 0);
  models::validate_thinnet_shape(o.blocks, o.filters);
  // Flags that only mean something with another: refused rather than ignored.
  if (arrays) {  // nothing is decoded, and as stored nothing is cropped
    for (const char* flag : {"--decode", "--cpu-share", "--nvjpeg-threads"})
      if (f.given(flag))
        FASTER_USAGE_ERROR(flag, " is for JPEG data (folders or LMDB); ", o.data,
                           " is a small dataset held as arrays: nothing is decoded");
    // Where the device loader was chosen for the run (a small dataset on the CPU), --workers
    // stays for the same command line on a GPU, whose host loader takes it.
    if (f.given("--workers") && f.given("--loader") && o.loader == train::LoaderKind::kDevice)
      FASTER_USAGE_ERROR(
          "--workers sets the host loader's threads; --loader device gathers batches on the "
          "device with none");
    if (f.given("--crop-scale") && o.res.res == 0)
      FASTER_USAGE_ERROR(
          "--crop-scale is the random-resized crop's; a small dataset as stored is not cropped "
          "(--res N crops it)");
  }
  if (f.given("--alternate-flips") && o.alternate_flips) {
    if (!arrays || o.res.res != 0)
      FASTER_USAGE_ERROR(
          "--alternate-flips alternates the flips of a small dataset as stored (--res 0); "
          "crops flip at random");
    if (o.flip == train::Flip::kOff)
      FASTER_USAGE_ERROR(
          "--alternate-flips alternates --flip's flips, and flips are off (--flip on)");
  }
  if (!f.lr_steps.empty() && o.schedule.decay != train::LrDecay::kStep)
    FASTER_USAGE_ERROR("--lr-steps needs --lr-decay step");
  for (const char* flag : {"--muon-momentum", "--muon-steps"})
    if (f.given(flag) && !(o.sgd.muon_lr > 0))
      FASTER_USAGE_ERROR(flag, " needs --muon-lr (a rate above 0: Muon is off)");
  if (f.given("--lr-gamma") && o.schedule.decay != train::LrDecay::kStep)
    FASTER_USAGE_ERROR("--lr-gamma needs --lr-decay step");
  if (f.given("--amp-dtype") && !f.amp && !f.fast)
    FASTER_USAGE_ERROR("--amp-dtype needs --amp (or --fast): without it the run is fp32");
  if (f.given("--res-step") && o.res.end_res == 0)
    FASTER_USAGE_ERROR("--res-step needs --res-end (it rounds the progressive resolutions)");
  for (const char* flag : {"--bucket-mb", "--dist-timeout"})
    if (f.given(flag) && o.parallel != train::Parallel::kDdp)
      FASTER_USAGE_ERROR(flag, " needs --parallel ddp");
  if (!f.lr_steps.empty()) {
    o.schedule.step_epochs = models::parse_int_list(f.lr_steps, "--lr-steps");
    for (int& e : o.schedule.step_epochs) --e;  // 1-based on the command line
  }
  if (!f.res_ramp.empty()) {
    train::parse_epoch_range(f.res_ramp, "--res-ramp", o.res.ramp_start, o.res.ramp_end);
    --o.res.ramp_start, --o.res.ramp_end;
  }
  if (o.res.end_res != 0 && f.res_ramp.empty() && !f.ramp_taken)
    FASTER_USAGE_ERROR("--res-end needs --res-ramp A:B, the epochs over which --res becomes it");
  if (!f.res_ramp.empty() && o.res.end_res == 0)
    FASTER_USAGE_ERROR("--res-ramp needs --res-end, the resolution it ramps to");
  o.fused = !f.no_fuse;
  if (f.fast) {
    train::apply_fast_mode(o);
    if (f.given("--amp-dtype")) o.precision = f.amp_dtype;
  } else if (f.amp) {
    o.precision = f.amp_dtype;
  }
  if (f.saved_precision) o.precision = *f.saved_precision;
  if (train::is_speedrun(o.recipe)) o.mode_name = enum_name(train::kRecipeNames, o.recipe);
}

int run_train(TrainFlags& f) {
  auto& o = f.o;
  resolve_flags(f);
  if (f.given("--gpus") && o.parallel != train::Parallel::kDp)
    FASTER_USAGE_ERROR("--gpus needs --parallel dp (ddp: one GPU per rank)");
  if (o.parallel != train::Parallel::kDdp) {
    // One rank of a launched job (torchrun, srun -n N) without DDP would train alone, N times over,
    // each writing the same --save and --checkpoint.
    const char* world = std::getenv("WORLD_SIZE");
    if ((world && std::atoi(world) > 1) || train::in_slurm_step())
      FASTER_USAGE_ERROR(
          "this process is one rank of a launched job (",
          world && *world ? "WORLD_SIZE=" + std::string(world) : std::string("an srun step"),
          ") but --parallel ddp is not given: each rank would train alone; add --parallel ddp");
  }
  if (f.given("--nproc") || f.nproc_taken) {
    check_range("--nproc", f.nproc, 1, 1024);
    if (o.parallel != train::Parallel::kDdp) FASTER_USAGE_ERROR("--nproc needs --parallel ddp");
    if (in_launched_job())
      FASTER_THROW(
          "--nproc given inside an already launched job (RANK is set, or this is a task "
          "of an srun step)");
    train::validate(o);  // once here, not once per rank (resolve_flags checked the files)
    if (!o.json.empty()) tools::check_output_file(o.json, "--json");
    train::LaunchOptions lo;
    lo.nproc = f.nproc;
    lo.exe = self_exe();
    lo.args = train::without_nproc(own_args());
    lo.checkpoint = o.checkpoint;
    if (f.nproc_taken)
      std::printf("launching as the resumed run ran: --parallel ddp --nproc %d\n", f.nproc);
    std::fflush(stdout);
    return train::launch_local(lo);
  }
  if (!o.json.empty()) tools::check_output_file(o.json, "--json");  // before the run, not after
  train::TrainCallbacks cb;
  cb.on_start = [&f](const std::string& line) {  // rank 0 only
    print_recipe(f);
    std::printf("training %s\n", line.c_str());
    std::fflush(stdout);
  };
  cb.on_epoch = [&](const train::EpochStats& e) {
    std::printf("epoch %d/%d  train loss %.4f", e.epoch, o.epochs, e.train_loss);
    if (e.evaluated)
      std::printf("  test loss %.4f  test acc %.2f%%  top-5 %.2f%%", e.test_loss, e.test_accuracy,
                  e.test_top5);
    std::printf("  %.2fs (%.0f img/s)\n", e.seconds,
                e.train_seconds > 0 ? e.train_images / e.train_seconds : 0.0);
    std::fflush(stdout);
  };
  const auto report = train::train(o, cb);
  // Rank 0 speaks for the job: its --json, its done line, and its exit code, 3 when the job
  // skipped bad images (the other ranks end 0, so no launcher takes them for failed while rank 0
  // still writes its files).
  if (!report.is_main) return 0;
  const int code = report.skipped_images() > 0 ? kExitBadInput : 0;
  std::printf("done: %zu epoch%s in %.2fs on %s (%.0f train images/s), ", report.epochs.size(),
              report.epochs.size() == 1 ? "" : "s", report.total_seconds, report.device.c_str(),
              report.train_images_per_second);
  if (const auto acc = report.final_test_accuracy())
    std::printf("final test accuracy %.2f%%", *acc);
  else
    std::printf("not tested (no val split)");
  // Time to accuracy counts from the process's start (set-up and LibTorch's loading included).
  if (train::is_speedrun(o.recipe))
    std::printf(", %.2fs from process start", report.process_seconds);
  if (code != 0)  // per epoch: a bad image is met again in each (the warnings say which)
    std::printf("; bad images skipped %lld times", static_cast<long long>(report.skipped_images()));
  std::printf("\n");
  if (!o.json.empty()) tools::write_file_atomic(o.json, report.to_json().dump(2) + "\n");
  return code;
}

void add_train(CLI::App& root, int& exit_code) {
  auto flags = std::make_shared<TrainFlags>();
  auto* cmd = root.add_subcommand(
      "train",
      "Train an image classifier: ThinNet on a small dataset (default: Fashion-MNIST from "
      "Debian's dataset-fashion-mnist), or a ResNet on JPEG folders / LMDB (--data ROOT with "
      "train/ and val/, --model resnet18|resnet34|resnet50).  Evaluates top-1/top-5 every "
      "--eval-every epochs; --checkpoint/--resume, --save (torchvision's names), --log-dir.");
  flags->cmd = cmd;
  add_train_flags(cmd, *flags);
  cmd->callback([flags, &exit_code] { exit_code = run_train(*flags); });
}

}  // namespace
FASTER_REGISTER_COMMAND(10, add_train);
}  // namespace faster::cli

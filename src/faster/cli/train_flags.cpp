// `faster train`'s flags and their help, in the order --help lists them: what is trained on what,
// the optimizer and its schedule, the model's shape and the data's pipeline, speed, outputs, small
// datasets as stored, parallel training.  The values land in TrainFlags (train_flags.h); what the
// user did not give is filled by train_recipe.cpp.
#include <thread>

#include "faster/cli/train_flags.h"
#include "faster/models/registry.h"

namespace faster::cli {
namespace {

// The choices of the enum flags that offer part of their enum.
constexpr EnumName<train::Precision> kAmpDtypes[] = {{"fp16", train::Precision::kFloat16},
                                                     {"bf16", train::Precision::kBFloat16}};
constexpr EnumName<data::LastBatch> kTrainLastBatch[] = {{"keep", data::LastBatch::kKeep},
                                                         {"drop", data::LastBatch::kDrop}};
constexpr EnumName<models::Norm> kThinNetNorms[] = {{"batch", models::Norm::kBatch},
                                                    {"none", models::Norm::kNone}};

std::string model_list() {
  std::string s;
  for (const auto& n : models::model_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// The data, the model, the recipe, the device, the epochs and the batch.
void add_run_flags(CLI::App* cmd, TrainFlags& f) {
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
                  "128, 2 epochs: 88.8 % on Fashion-MNIST, in 44 to 87 s on two 2-core VMs of "
                  "2026-12), imagenet "
                  "(SGD nesterov 0.1 x batch/256, weight decay 5e-5 not on norms and biases, label "
                  "smoothing 0.1, 2 warm-up epochs then cosine, batch 256, 16 epochs, --res 224), "
                  "speedrun (speednet, time to 94 % on Fashion-MNIST from process start: "
                  "docs/training.md), speedrun95 (longer, wider) or torchvision (the defaults of "
                  "torchvision's train.py: resnet18, batch 32, 90 epochs, SGD 0.1, weight decay "
                  "1e-4, steplr); default: for thinnet seed on a GPU and cpu on the CPU, imagenet "
                  "for ResNets (torchvision with --data-path), speedrun for speednet")
      ->default_str("");
  add_device_option(cmd, o.device);
  add_epochs_option(cmd, o.epochs, "Epochs (default: the recipe's)");
  cmd->add_option("-b,--batch,--batch-size", o.batch, "Batch size per process (per GPU with DDP)");
}

// SGD, Muon, the learning-rate schedule, label smoothing and the weights' average.
void add_optimizer_flags(CLI::App* cmd, TrainFlags& f) {
  auto& o = f.o;
  cmd->add_option("--lr", o.sgd.lr,
                  "Peak SGD learning rate (default: the recipe's; imagenet: 0.1 x global "
                  "batch / 256)");
  cmd->add_option("--momentum", o.sgd.momentum, "SGD momentum (default: the recipe's)");
  cmd->add_option("--weight-decay,--wd", o.sgd.weight_decay,
                  "SGD weight decay (L2; see --norm-weight-decay, --bias-weight-decay)");
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
  cmd->add_option("--warmup-epochs,--lr-warmup-epochs", o.schedule.warmup_epochs,
                  "Learning-rate warm-up over this many epochs: linear, per step (with "
                  "--lr-scheduler: per epoch, as --lr-warmup-method says)");
  cmd->add_option("--warmup-start,--lr-warmup-decay", o.schedule.warmup_start,
                  "The warm-up's first rate, as a fraction of --lr (torchvision's recipe: 0.01)");
  cmd->add_option("--min-lr", o.schedule.min_lr,
                  "Cosine, linear: the last rate, a fraction of --lr (default: the recipe's)");
  cmd->add_option("--lr-steps", f.lr_steps,
                  "Step decay: epochs (1-based) where the rate drops, "
                  "e.g. 30,60,80");
  cmd->add_option("--lr-gamma", o.schedule.step_gamma,
                  "Step decay: the factor at each step (--lr-scheduler steplr: every "
                  "--lr-step-size epochs; exponentiallr: every epoch)")
      ->capture_default_str();
  cmd->add_option("--label-smoothing", o.label_smoothing, "Cross-entropy label smoothing");
  cmd->add_option("--ema", o.ema_decay,
                  "Keep an exponential moving average of the weights with this decay per step "
                  "(e.g. 0.9999; it starts as a copy of the model and warms its decay up, "
                  "docs/training.md); evaluation and --save then use the average");
}

// The model's widths, the seed, the resolutions and crops, the decoder and bad images.
void add_pipeline_flags(CLI::App* cmd, TrainFlags& f) {
  auto& o = f.o;
  cmd->add_option("--blocks", f.blocks,
                  "ThinNet: duplicate convs per stage (default: the recipe's; seed 3,3,2 = 11 conv "
                  "layers, cpu 0,0,0); speednet: convs per stage after its pooled entry conv "
                  "(default 1,1,1)");
  cmd->add_option("--filters", f.filters,
                  "Filters per stage (thinnet: seed 32,64,128, cpu 16,32,64; speednet: "
                  "64,128,256, speedrun95 96,192,384)");
  add_seed_option(cmd, o.seed, "Seed for weights, the per-epoch shuffle and the crops");
  cmd->add_option("--res,--train-crop-size", o.res.res,
                  "Training resolution: random-resized-crop side (default: the recipe's; 224 for "
                  "JPEG data and under imagenet); 0: a small dataset as stored, no crops");
  cmd->add_option("--res-end", o.res.end_res,
                  "Progressive resizing: ramp the training resolution linearly to this over "
                  "--res-ramp (FFCV-style)");
  cmd->add_option("--res-ramp", f.res_ramp,
                  "Progressive resizing: epochs A:B (1-based) over which --res becomes --res-end");
  cmd->add_option("--res-step", o.res.step, "Progressive resizing: round to a multiple of this")
      ->capture_default_str();
  add_val_side_option(cmd, "--val-res,--val-crop-size", o.val_res, data::kMaxSide,
                      "Validation center-crop side (default: --res; FixRes: evaluate higher than "
                      "you train)");
  add_val_side_option(cmd, "--val-resize,--val-resize-size", o.val_resize, 2 * data::kMaxSide,
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
  cmd->add_option("--eval-every", o.eval_every,
                  "Evaluate every N epochs, and after the last (default: the recipe's: 1; the "
                  "last epoch only for speedrun and speedrun95, whose clock counts every test)");
}

// cuDNN, mixed precision, layout, loader, graphs, --fast; the small datasets' limits.
void add_speed_flags(CLI::App* cmd, TrainFlags& f) {
  auto& o = f.o;
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
  add_workers_option(cmd, o.workers,
                     "Host loader threads (default 0: all cores for image data, 4 for small "
                     "datasets; --loader device uses none)",
                     "-j,--workers");
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
}

// Metrics, weights, checkpoints and resuming, the report; ThinNet's normalization, fusion.
void add_output_flags(CLI::App* cmd, TrainFlags& f) {
  auto& o = f.o;
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
  cmd->add_flag(
      "--overwrite", o.overwrite,
      "Replace an existing --checkpoint, --save, --json or --profile file that is not this run's "
      "own (another run's, a finished run's checkpoint, any other file): refused "
      "before training otherwise");
  cmd->add_option("--json", o.json,
                  "Write the run's report (options, per-epoch metrics, time) as JSON");
  cmd->add_option("--profile", o.profile,
                  "Write a Chrome trace (chrome://tracing, Perfetto) of 10 training steps of the "
                  "last epoch, from its 21st step: on a GPU the CUDA kernels (those of a captured "
                  "step too) and LibTorch's operators, on the CPU the operators.  Recording slows "
                  "those steps; scripts/profile_summary.py sums the kernels' time by kind")
      ->type_name("FILE");
  add_enum_option(cmd, "--norm", o.norm, kThinNetNorms,
                  "ThinNet normalization after each conv+ReLU: batch or none");
  cmd->add_flag(
      "--no-fuse", f.no_fuse,
      "Run BatchNorm, the residual add and the activation as LibTorch's separate ops instead of "
      "one fused kernel (used on CUDA by default where it applies: ThinNet's ReLU + BatchNorm "
      "and SpeedNet's BatchNorm + GELU as faster's kernels; ResNets' BatchNorm (+ add) + ReLU as "
      "cuDNN's in fp16 or bf16 channels-last training, e.g. --fast, where an identity block's "
      "first convolution also adds the shortcut's gradient in its backward pass)");
}

// Small datasets as stored (the device loader's shifts and flips, SpeedNet's stem).
void add_small_dataset_flags(CLI::App* cmd, TrainFlags& f) {
  auto& o = f.o;
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
}

// DataParallel and DDP.
void add_parallel_flags(CLI::App* cmd, TrainFlags& f) {
  auto& o = f.o;
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

// torchvision's references/classification/train.py: the flags faster's do not already take under
// another name (the aliases above: --data-path, -b/--batch-size, -j, --wd, --lr-warmup-epochs,
// --lr-warmup-decay, --train-crop-size, --val-resize-size, --val-crop-size), with train.py's
// meanings and defaults; values faster cannot honour are refused naming the flag (resolve_flags).
void add_torchvision_flags(CLI::App* cmd, TrainFlags& f) {
  auto& o = f.o;
  auto* tv = cmd->add_option_group(
      "torchvision's train.py",
      "Its flags with its meanings; a command line with --data-path takes its defaults "
      "(--recipe torchvision: resnet18, batch 32, 90 epochs, SGD 0.1, weight decay 1e-4, "
      "steplr)");
  tv->add_option("--data-path", f.data_path,
                 "--data in torchvision's spelling (the same root of train/ and val/), which "
                 "also takes --recipe torchvision's defaults");
  tv->add_option("--opt", f.opt,
                 "sgd, or sgd_nesterov (Nesterov momentum), in any case as torchvision reads "
                 "it; torchvision's rmsprop and adamw are not in faster")
      ->transform([](std::string text) { return lower_case(std::move(text)); });
  add_enum_option(tv, "--lr-scheduler", f.lr_scheduler, train::kTorchvisionSchedulers,
                  "torchvision's schedulers, the rate set once per epoch after the warm-up: "
                  "steplr (x --lr-gamma every --lr-step-size epochs), cosineannealinglr (to "
                  "--lr-min at the end) or exponentiallr (x --lr-gamma each epoch); instead of "
                  "--lr-decay; in any case, as torchvision reads it",
                  /*any_case=*/true)
      ->default_str("");
  tv->add_option("--lr-step-size", o.schedule.step_size, "steplr: epochs between the rate's drops")
      ->capture_default_str();
  tv->add_option("--lr-min", f.lr_min, "cosineannealinglr: the last rate (absolute, as --lr)")
      ->capture_default_str();
  add_enum_option(tv, "--lr-warmup-method", o.schedule.warmup_shape, train::kWarmupShapeNames,
                  "With --lr-scheduler: the warm-up from --lr-warmup-decay x --lr, linear to "
                  "--lr or constant at it (default: the recipe's; torchvision's: constant)")
      ->default_str("");
  tv->add_option("--norm-weight-decay", o.sgd.norm_weight_decay,
                 "Weight decay of the normalization layers' weights and biases (default: "
                 "--weight-decay, or none where --no-decay-norm-bias)");
  tv->add_option("--bias-weight-decay", o.sgd.bias_weight_decay,
                 "Weight decay of every bias (a norm's too; default: as the other parameters)");
  tv->add_option("--clip-grad-norm", o.clip_grad_norm,
                 "Clip the gradient's total L2 norm to this before each step (0: off)")
      ->capture_default_str();
  add_enum_option(tv, "--auto-augment", o.auto_augment.policy, data::kAutoAugmentNames,
                  "After each training crop and flip: ta_wide (TrivialAugmentWide), ra "
                  "(RandAugment, --ra-magnitude), imagenet (AutoAugment's ImageNet policy) or "
                  "augmix (AugMix, --augmix-severity: three chains of 1-3 ops mixed with the "
                  "image), torchvision's ops on the CPU (with nvJPEG the training images then "
                  "decode there too); none: off")
      ->default_str("none");
  tv->add_option("--ra-magnitude", o.auto_augment.ra_magnitude,
                 "RandAugment's strength, of 31 bins (0-30)")
      ->capture_default_str();
  tv->add_option("--augmix-severity", o.auto_augment.augmix_severity,
                 "AugMix's strength: its ops' strengths drawn from the first N of 10 bins (1-10)")
      ->capture_default_str();
  tv->add_flag("--ra-sampler", f.ra_sampler,
               "Repeated augmentation, torchvision's RASampler, under DDP as train.py (a single "
               "process shuffles plainly, as train.py's): each image --ra-reps times in a row, "
               "in other crops, dealt to the ranks in turn; an epoch keeps floor(N / 256) * 256 "
               "images, about N / --ra-reps of them distinct");
  tv->add_option("--ra-reps", f.ra_reps, "--ra-sampler's repetitions of each image")
      ->capture_default_str();
  tv->add_option("--random-erase", o.augment.random_erase,
                 "RandomErasing: each training image's chance of a rectangle (2-33 % of its "
                 "area, aspect 0.3-3.3) set to the mean colour, on the device")
      ->capture_default_str();
  tv->add_option("--mixup-alpha", o.augment.mixup_alpha,
                 "Mixup: each batch's images and labels blended with the previous image's by a "
                 "Beta(alpha, alpha) weight (0: off; with --cutmix-alpha, one of the two per "
                 "batch), on the device")
      ->capture_default_str();
  tv->add_option("--cutmix-alpha", o.augment.cutmix_alpha,
                 "CutMix: a box of each batch's images replaced by the previous image's, labels "
                 "weighted by area, 1 - box from Beta(alpha, alpha) (0: off)")
      ->capture_default_str();
  tv->add_flag("--model-ema", f.model_ema,
               "Evaluate and save an average of the weights (faster's --ema) updated every "
               "--model-ema-steps steps with torchvision's decay: 1 - (1 - --model-ema-decay) x "
               "world size x batch x steps / epochs");
  tv->add_option("--model-ema-steps", o.ema_every,
                 "Steps between updates of the average (torchvision's default 32 with "
                 "--model-ema; --ema updates every step)");
  tv->add_option("--model-ema-decay", f.model_ema_decay, "--model-ema's decay, as torchvision's")
      ->capture_default_str();
  tv->add_option("--output-dir", o.output_dir,
                 "After every epoch, write DIR/model_{epoch}.pth and DIR/checkpoint.pth as "
                 "torchvision's train.py does (model, optimizer, lr_scheduler, epoch, args, "
                 "model_ema, scaler), which its --resume reads; ResNets with --lr-scheduler");
  tv->add_option("--weights", o.weights,
                 "Start from these weights: torchvision's by name (ResNet50_Weights.IMAGENET1K_V2, "
                 "or its DEFAULT; the tag alone for --model's, as train.py), read from torch's "
                 "cache of downloads ($TORCH_HOME/hub/"
                 "checkpoints: faster downloads nothing), or a file (a state_dict or a faster "
                 "checkpoint); --model defaults to theirs, and a classifier of another class "
                 "count starts fresh (fine-tuning).  With --test-only: score them");
  tv->add_flag("--test-only", f.test_only,
               "Score --resume's weights (a faster checkpoint or weights file, or torchvision's "
               "checkpoint.pth or model_N.pth), or --weights', on the validation split and stop, "
               "as faster eval --weights does (named weights at torchvision's evaluation resize "
               "for them, unless --val-resize-size or --val-crop-size is given)");
  tv->add_option("--interpolation", f.interpolation,
                 "bilinear (faster's crops and resizes are antialiased bilinear); other modes "
                 "are not in faster");
  tv->add_option("--print-freq", o.print_freq,
                 "Off a terminal (logs, FASTER_PROGRESS=plain), the progress line every N steps "
                 "instead of every 5 s (on a terminal the bar redraws itself)");
  tv->add_option("--start-epoch", f.start_epoch,
                 "With --resume, replaced by the checkpoint's epoch, as in train.py (alone, only "
                 "0: a run starts at its first epoch)");
  tv->add_option("--dist-url", f.dist_url,
                 "env:// only: DDP's rendezvous is torchrun's or Slurm's environment");
  // Taken, to say that they change nothing here (resolve_flags).
  f.inert.resize(std::size(kInertTorchvisionFlags));
  for (size_t i = 0; i < std::size(kInertTorchvisionFlags); ++i) {
    const auto& r = kInertTorchvisionFlags[i];
    auto* opt = r.is_flag ? tv->add_flag(r.flag) : tv->add_option(r.flag, f.inert[i]);
    opt->group("");  // not in --help: docs/training.md lists them
  }
}

}  // namespace

void add_train_flags(CLI::App* cmd, TrainFlags& f) {
  add_run_flags(cmd, f);
  add_optimizer_flags(cmd, f);
  add_pipeline_flags(cmd, f);
  add_speed_flags(cmd, f);
  add_output_flags(cmd, f);
  add_small_dataset_flags(cmd, f);
  add_parallel_flags(cmd, f);
  add_torchvision_flags(cmd, f);
}

}  // namespace faster::cli

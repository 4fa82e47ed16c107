// What `faster train` does with what the user did not give: a recipe's values (the model's unless
// --recipe names one), or, resuming, the checkpoint's run's (its data, outputs, launch and
// settings); then the flags that only mean something together are checked, the lists parsed and
// the modes applied (resolve_flags).
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <thread>
#include <tuple>

#include "faster/cli/train_flags.h"
#include "faster/core/early_context.h"
#include "faster/core/file.h"
#include "faster/core/log.h"
#include "faster/core/text.h"
#include "faster/models/registry.h"
#include "faster/models/thinnet.h"
#include "faster/train/checkpoint.h"
#include "faster/train/parallel/world.h"
#include "faster/train/torchvision_weights.h"

namespace faster::cli {
namespace {
namespace fs = std::filesystem;

// Resuming with no output named from C, the run's own latest checkpoint (the interrupted run's
// hint, "--resume C goes on from there"): the run goes on writing its outputs, so a second
// interruption loses nothing.  From an earlier epoch's copy (C.epochN) they would replace the
// later epochs' results: nothing is written unless named.
void take_outputs(TrainFlags& f, const nlohmann::json& resumed) {
  auto& o = f.o;
  const auto unset = [&](const char* flag) { return !f.given(flag); };
  const std::string own = resumed.value("checkpoint", std::string());
  const bool none_named = unset("--save") && unset("--checkpoint") && unset("--keep-checkpoints") &&
                          unset("--log-dir") && unset("--json") && unset("--output-dir");
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
                                          {"--json", "json", &o.json},
                                          {"--output-dir", "output_dir", &o.output_dir}}) {
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
}

// The checkpoint's run's launch (DDP) and data.
void take_launch_and_data(TrainFlags& f, const nlohmann::json& resumed) {
  auto& o = f.o;
  const auto unset = [&](const char* flag) { return !f.given(flag); };
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

// A resumed run continues its checkpoint's run: what is not given is the checkpoint's, as it is a
// recipe's for a new run (--recipe names a recipe to take instead); its data too.  Returns the
// run's options (empty without --resume).
nlohmann::json take_checkpoint_run(TrainFlags& f) {
  auto& o = f.o;
  if (o.resume.empty()) return nlohmann::json::object();
  train::check_resume_file(o.resume);
  const auto meta = train::checkpoint_meta(train::read_state_dict(o.resume), o.resume);
  const auto resumed = meta.value("options", nlohmann::json::object());
  take_outputs(f, resumed);
  take_launch_and_data(f, resumed);
  return resumed;
}

// The model and the recipe (a checkpoint's run's unless named): the recipe's options, those of
// the checkpoint's run over them where it resumes with no --recipe.
train::TrainOptions choose_recipe(TrainFlags& f, nlohmann::json& resumed, torch::Device& device) {
  auto& o = f.o;
  const auto unset = [&](const char* flag) { return !f.given(flag); };
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
    if (!o.weights.empty()) {  // as train.py's: the checkpoint's weights replace them
      log::info("--weights ", o.weights, ": --resume's checkpoint replaces them");
      o.weights.clear();
    }
    const std::string saved = resumed.value("recipe", "");
    if (!recipe && !saved.empty()) recipe = parse_enum(train::kRecipeNames, saved, "--recipe");
  } else {
    // A command line in torchvision's spelling takes its train.py's defaults.
    if (!recipe && f.given("--data-path")) recipe = train::Recipe::kTorchvision;
    if (unset("--model"))
      o.model = !o.weights.empty()                      ? train::weights_model(o.weights)
                : recipe == train::Recipe::kTorchvision ? "resnet18"
                : train::is_speedrun(f.recipe)          ? "speednet"
                : arrays                                ? "thinnet"
                                                        : "resnet50";
  }
  device = train::resolve_device(o.device);
  if (device.is_cuda() && f.given("--use-deterministic-algorithms"))
    FASTER_USAGE_ERROR(
        "--use-deterministic-algorithms on a GPU: faster's own kernels and cuDNN's are not "
        "pinned to deterministic ones (on the CPU, faster's runs are deterministic already)");
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
  return r;
}

// The optimizer and its schedule.
void fill_optimizer(TrainFlags& f, const train::TrainOptions& r, const nlohmann::json& resumed) {
  auto& o = f.o;
  const auto unset = [&](const char* flag) { return !f.given(flag); };
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
  // torchvision's schedulers, set once per epoch: --lr-scheduler's, or the recipe's.
  if (!unset("--lr-scheduler")) {
    if (!unset("--lr-decay"))
      FASTER_USAGE_ERROR(
          "--lr-scheduler (torchvision's, per epoch) and --lr-decay (per step) "
          "both set the decay: give one");
    o.schedule.decay = f.lr_scheduler;
  }
  o.schedule.per_epoch = !unset("--lr-scheduler") || (unset("--lr-decay") && r.schedule.per_epoch);
  // Per epoch, the recipe's warm-up counts whole epochs (an eighth of 10 is 1, not 1.25).
  if (o.schedule.per_epoch && unset("--warmup-epochs"))
    o.schedule.warmup_epochs = std::floor(o.schedule.warmup_epochs);
  if (unset("--lr-warmup-method")) o.schedule.warmup_shape = r.schedule.warmup_shape;
  if (unset("--lr-step-size")) o.schedule.step_size = r.schedule.step_size;
  if (unset("--norm-weight-decay")) o.sgd.norm_weight_decay = r.sgd.norm_weight_decay;
  if (unset("--bias-weight-decay")) o.sgd.bias_weight_decay = r.sgd.bias_weight_decay;
  if (unset("--clip-grad-norm")) o.clip_grad_norm = r.clip_grad_norm;
  if (unset("--random-erase")) o.augment.random_erase = r.augment.random_erase;
  if (unset("--mixup-alpha")) o.augment.mixup_alpha = r.augment.mixup_alpha;
  if (unset("--cutmix-alpha")) o.augment.cutmix_alpha = r.augment.cutmix_alpha;
}

// The resolutions, crops, seed and loader threads.
void fill_pipeline(TrainFlags& f, const train::TrainOptions& r) {
  auto& o = f.o;
  const auto unset = [&](const char* flag) { return !f.given(flag); };
  const bool arrays = f.arrays;
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
  if (unset("--auto-augment")) o.auto_augment.policy = r.auto_augment.policy;
  if (unset("--ra-magnitude")) o.auto_augment.ra_magnitude = r.auto_augment.ra_magnitude;
  if (unset("--augmix-severity")) o.auto_augment.augmix_severity = r.auto_augment.augmix_severity;
  if (unset("--val-res")) o.val_res = r.val_res;
  if (unset("--val-resize")) o.val_resize = r.val_resize;
  if (unset("--seed")) o.seed = r.seed;
  if (unset("--norm")) o.norm = r.norm;
}

// The model's shape, the average, evaluation, augmentation of small datasets, the loader and the
// modes the device decides.
void fill_model_and_modes(TrainFlags& f, const train::TrainOptions& r, torch::Device device) {
  auto& o = f.o;
  const auto unset = [&](const char* flag) { return !f.given(flag); };
  const bool arrays = f.arrays;
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
  if (unset("--model-ema-steps")) o.ema_every = r.ema_every;
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

// Fills what the user did not give from the recipe (the model's unless --recipe names one), or,
// resuming, from the checkpoint's run.
void apply_recipe(TrainFlags& f) {
  auto resumed = take_checkpoint_run(f);
  torch::Device device = torch::kCPU;
  const auto r = choose_recipe(f, resumed, device);
  fill_optimizer(f, r, resumed);
  fill_pipeline(f, r);
  fill_model_and_modes(f, r, device);
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

// Flags that only mean something with another, or with some data or model: refused rather than
// ignored.
void check_flag_pairs(const TrainFlags& f) {
  const auto& o = f.o;
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
      FASTER_USAGE_ERROR(
          flag, " shapes thinnet and speednet; ", o.model,
          " has torchvision's layers (resnet18 ... resnet152, resnext*, wide_resnet*)");
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
    if (o.auto_augment.on() && o.res.res == 0)
      FASTER_USAGE_ERROR(
          "--auto-augment augments crops; a small dataset as stored is not cropped (--res N "
          "crops it)");
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
  const bool per_epoch = o.schedule.per_epoch;
  if (f.given("--lr-gamma") && o.schedule.decay != train::LrDecay::kStep &&
      o.schedule.decay != train::LrDecay::kExponential)
    FASTER_USAGE_ERROR(
        "--lr-gamma needs a decay by steps (--lr-decay step, --lr-scheduler steplr "
        "or exponentiallr)");
  if (f.given("--lr-step-size") && !(per_epoch && o.schedule.decay == train::LrDecay::kStep))
    FASTER_USAGE_ERROR("--lr-step-size needs --lr-scheduler steplr");
  if (f.given("--lr-min") && !(per_epoch && o.schedule.decay == train::LrDecay::kCosine))
    FASTER_USAGE_ERROR(
        "--lr-min needs --lr-scheduler cosineannealinglr (--min-lr is --lr-decay's)");
  if (f.given("--lr-warmup-method") && !per_epoch)
    FASTER_USAGE_ERROR(
        "--lr-warmup-method is --lr-scheduler's warm-up (per epoch); --lr-decay's "
        "warm-up is linear, per step");
  if (per_epoch && !f.lr_steps.empty())
    FASTER_USAGE_ERROR(
        "--lr-steps is --lr-decay step's; --lr-scheduler steplr drops every "
        "--lr-step-size epochs");
  if (f.given("--ra-magnitude") && o.auto_augment.policy != data::AutoAugmentPolicy::kRandAugment)
    FASTER_USAGE_ERROR("--ra-magnitude needs --auto-augment ra");
  if (f.given("--augmix-severity") && o.auto_augment.policy != data::AutoAugmentPolicy::kAugMix)
    FASTER_USAGE_ERROR("--augmix-severity needs --auto-augment augmix");
  if (f.given("--model-ema-steps") && !f.model_ema && !(o.ema_decay > 0))
    FASTER_USAGE_ERROR("--model-ema-steps needs --model-ema (or --ema)");
  if (f.given("--model-ema-decay") && !f.model_ema)
    FASTER_USAGE_ERROR("--model-ema-decay needs --model-ema");
  if (f.model_ema && f.given("--ema"))
    FASTER_USAGE_ERROR(
        "--model-ema and --ema both ask for the average: give one (--ema D: decay "
        "D every step)");
  if (f.given("--amp-dtype") && !f.amp && !f.fast)
    FASTER_USAGE_ERROR("--amp-dtype needs --amp (or --fast): without it the run is fp32");
  if (f.given("--res-step") && o.res.end_res == 0)
    FASTER_USAGE_ERROR("--res-step needs --res-end (it rounds the progressive resolutions)");
  for (const char* flag : {"--bucket-mb", "--dist-timeout"})
    if (f.given(flag) && o.parallel != train::Parallel::kDdp)
      FASTER_USAGE_ERROR(flag, " needs --parallel ddp");
}

}  // namespace

// The recipe's line before training: what the flags not given became.
void print_recipe(const TrainFlags& f) {
  const auto& o = f.o;
  for (const auto& note : f.notes) std::printf("(%s)\n", note.c_str());
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
  std::printf(", %s%s, %s loader%s\n",
              o.schedule.per_epoch ? enum_name(train::kTorchvisionSchedulers, o.schedule.decay)
                                   : enum_name(train::kLrDecayNames, o.schedule.decay),
              o.schedule.per_epoch ? " per epoch" : " decay",
              enum_name(train::kLoaderNames, o.loader), o.channels_last ? ", channels-last" : "");
  if (o.recipe == train::Recipe::kCpu && !f.given("--recipe"))
    std::printf(
        "(no GPU: a ThinNet sized for the CPU; --recipe seed trains the seed's benchmark)\n");
  if (train::is_speedrun(o.recipe) && train::resolve_device(o.device).is_cpu())
    std::printf("(%s is timed for a GPU: on a CPU each epoch takes minutes)\n",
                enum_name(train::kRecipeNames, o.recipe));
  std::fflush(stdout);
}

namespace {
// The value given to one of kInertTorchvisionFlags.
const std::string& inert_value(const TrainFlags& f, const std::string& flag) {
  for (size_t i = 0; i < std::size(kInertTorchvisionFlags); ++i)
    if (flag == kInertTorchvisionFlags[i].flag) return f.inert[i];
  throw std::logic_error("not an inert flag: " + flag);
}
}  // namespace

void take_torchvision_spellings(TrainFlags& f) {
  auto& o = f.o;
  for (size_t i = 0; i < std::size(kInertTorchvisionFlags); ++i) {
    const auto& r = kInertTorchvisionFlags[i];
    if (f.cmd->get_option(r.flag)->count() > 0)
      f.notes.push_back(std::string(r.flag) + ": " + r.why);
  }
  if (f.given("--backend")) {
    const std::string backend = lower_case(inert_value(f, "--backend"));
    if (backend != "pil" && backend != "tensor")
      FASTER_USAGE_ERROR("--backend '", inert_value(f, "--backend"),
                         "': pil or tensor, as train.py's");
  }
  // --weights IMAGENET1K_V2 (or DEFAULT) is a tag of --model's weights, as train.py's
  // get_model(args.model, weights=args.weights) reads it; its --model defaults to resnet18.
  if (!o.weights.empty()) {
    const bool train_py = f.given("--data-path") || f.test_only;
    o.weights = train::qualify_weights_tag(o.weights, f.given("--model") ? o.model
                                                      : train_py         ? "resnet18"
                                                                         : "");
  }
  if (f.given("--dist-url") && f.dist_url != "env://")
    FASTER_USAGE_ERROR("--dist-url ", f.dist_url,
                       ": faster's DDP meets at torchrun's or Slurm's environment (env://), or "
                       "its own --nproc launcher's");
  if (f.given("--print-freq"))
    check_range("--print-freq", f.o.print_freq, 0, std::numeric_limits<int>::max());
  if (f.given("--start-epoch")) {
    check_range("--start-epoch", f.start_epoch, 0, 1 << 20);
    if (f.o.resume.empty() && f.start_epoch > 0)
      FASTER_USAGE_ERROR("--start-epoch ", f.start_epoch,
                         " without --resume would train fresh weights from a later epoch: "
                         "--resume CHECKPOINT goes on from the epoch it holds");
    if (!f.o.resume.empty())
      f.notes.push_back(
          "--start-epoch: --resume goes on from its checkpoint's epoch, as in train.py");
  }
  if (f.ra_sampler) check_range("--ra-reps", f.ra_reps, 1, 256);
  if (f.given("--data-path")) {
    if (f.cmd->get_option("--data")->count() > 0)
      FASTER_USAGE_ERROR("--data and --data-path name the data twice: give one");
    o.data = f.data_path;
  }
  if (f.given("--interpolation") && f.interpolation != "bilinear")
    FASTER_USAGE_ERROR("--interpolation '", f.interpolation,
                       "': faster's crops and resizes are bilinear (antialiased) only");
  if (f.given("--opt")) {
    if (f.opt != "sgd" && f.opt != "sgd_nesterov")
      FASTER_USAGE_ERROR("--opt '", f.opt,
                         "': faster trains with sgd or sgd_nesterov (Muon with --muon-lr); "
                         "torchvision's rmsprop and adamw are not in faster");
    if (f.given("--nesterov") && o.sgd.nesterov != (f.opt == "sgd_nesterov"))
      FASTER_USAGE_ERROR("--opt ", f.opt, " and --", o.sgd.nesterov ? "" : "no-",
                         "nesterov disagree");
  }
}

namespace {
// What torchvision's flags make of the resolved run: --opt's momentum, --lr-min as a fraction of
// the rate, --model-ema's average.
void apply_torchvision_flags(TrainFlags& f) {
  auto& o = f.o;
  if (f.given("--opt")) o.sgd.nesterov = f.opt == "sgd_nesterov";
  if (f.given("--lr-min")) {
    if (o.lr_per_256 > 0)
      FASTER_USAGE_ERROR(
          "--lr-min is a rate as --lr is: give --lr too (the recipe's rate "
          "scales with the global batch)");
    if (!(f.lr_min >= 0 && f.lr_min <= o.sgd.lr))
      FASTER_USAGE_ERROR("--lr-min must be between 0 and --lr ", o.sgd.lr, " (got ", f.lr_min, ")");
    o.schedule.min_lr = f.lr_min / o.sgd.lr;
  }
  if (f.ra_sampler) {
    // train.py samples with RASampler only when distributed (torchrun, Slurm); alone it shuffles
    // plainly (RandomSampler), and so does faster.
    if (o.parallel == train::Parallel::kDdp)
      o.ra_reps = f.ra_reps;
    else
      log::info(
          "--ra-sampler: as torchvision's train.py, only under DDP (--parallel ddp); this "
          "single process shuffles every image once per epoch");
  }
  if (f.model_ema) {
    // torchvision's adjustment: its decay is per update at a reference of one update per epoch
    // of world x batch x steps images.
    if (!(f.model_ema_decay > 0 && f.model_ema_decay < 1))
      FASTER_USAGE_ERROR("--model-ema-decay must be in (0, 1) (got ", f.model_ema_decay, ")");
    if (!f.given("--model-ema-steps")) o.ema_every = 32;
    int world = 1;  // --nproc's, or the launcher's (torchrun, Slurm)
    if (o.parallel == train::Parallel::kDdp)
      world = f.nproc > 0 ? f.nproc : std::max(1, train::world_from_env().world);
    const double adjust = static_cast<double>(world) * o.batch * o.ema_every / o.epochs;
    o.ema_decay = 1.0 - std::min(1.0, (1.0 - f.model_ema_decay) * adjust);
    o.ema_warmup = false;  // torchvision's average: a copy, then the decay itself
    if (!(o.ema_decay > 0))
      FASTER_USAGE_ERROR("--model-ema: torchvision's adjusted decay 1 - (1 - ", f.model_ema_decay,
                         ") x ", world, " x ", o.batch, " x ", o.ema_every, " / ", o.epochs,
                         " is 0 (no average): raise --model-ema-decay");
  }
}
}  // namespace

void resolve_flags(TrainFlags& f) {
  auto& o = f.o;
  take_torchvision_spellings(f);
  check_distinct_outputs(f);
  apply_recipe(f);
  if (!f.taken_outputs.empty()) check_distinct_outputs(f);
  check_flag_pairs(f);
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
  apply_torchvision_flags(f);
  if (train::is_speedrun(o.recipe)) o.mode_name = enum_name(train::kRecipeNames, o.recipe);
}

}  // namespace faster::cli

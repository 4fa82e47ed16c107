// `faster eval`: top-1/top-5 of saved weights (faster's or torchvision's state_dict, or a faster
// checkpoint) on a validation split.
#include <cstdio>
#include <fstream>

#include "faster/cli/command.h"
#include "faster/cli/train_flags.h"
#include "faster/core/early_context.h"
#include "faster/core/error.h"
#include "faster/core/file.h"
#include "faster/data/sources/array_dataset.h"
#include "faster/tools/file_io.h"
#include "faster/train/torchvision_weights.h"
#include "faster/train/trainer.h"

namespace faster::cli {
namespace {

constexpr EnumName<train::Precision> kPrecisions[] = {{"fp32", train::Precision::kFloat32},
                                                      {"fp16", train::Precision::kFloat16},
                                                      {"bf16", train::Precision::kBFloat16}};

void add_eval(CLI::App& root, int& exit_code) {
  struct Flags {
    train::EvalOptions o;
    std::string json;
    bool tta = false, tta_shifts = false, ema = false;
  };
  auto f = std::make_shared<Flags>();
  auto& o = f->o;
  auto* cmd = root.add_subcommand(
      "eval",
      "Evaluate saved weights: top-1 and top-5 accuracy and the loss on a validation split.  "
      "The architecture and class count are read from the weights (a state_dict written by "
      "faster train --save or by torchvision, a faster --checkpoint, or torchvision's "
      "pretrained weights by name).");
  cmd->add_option("--weights", o.weights,
                  "The weights file, or torchvision's weights by name (ResNet50_Weights."
                  "IMAGENET1K_V2, or its DEFAULT; with --model, the tag alone) from torch's "
                  "cache of downloads ($TORCH_HOME/"
                  "hub/checkpoints; faster downloads nothing), scored as torchvision's transforms "
                  "for them do (the shorter side to 256 or 232 px, the centre 224) unless "
                  "--val-res is given")
      ->required();
  cmd->add_option("--data", o.data,
                  "A root holding val/ (folder of class folders or LMDB), the split itself, or a "
                  "small dataset (its test split)")
      ->required();
  cmd->add_option("--model", o.model, "Check that the weights are this model's");
  add_device_option(cmd, o.device);
  cmd->add_option("--batch", o.batch, "Images per batch")->capture_default_str();
  add_workers_option(cmd, o.workers,
                     "Loader threads (default 0: all cores, or 4 for a small dataset)");
  add_val_side_option(cmd, "--val-res", o.val_res, data::kMaxSide,
                      "Center-crop side (default: a checkpoint's own run's; else 224 for JPEG "
                      "data, as stored for small datasets); FixRes: try a higher one than the "
                      "model was trained at");
  add_val_side_option(cmd, "--val-resize", o.val_resize, 2 * data::kMaxSide,
                      "Shorter side resized to this before the crop (default --val-res * "
                      "256/224)");
  add_enum_option(cmd, "--decode", o.decode, train::kDecodeChoices,
                  "JPEG decoding: cpu, nvjpeg or auto (nvjpeg on a GPU, cpu for images of at "
                  "most 160x160 pixels)");
  add_enum_option(cmd, "--precision", o.precision, kPrecisions,
                  "Arithmetic of the forward pass (autocast for fp16/bf16)");
  cmd->add_flag("--channels-last", o.channels_last, "NHWC memory format");
  cmd->add_flag("--ema,!--no-ema", f->ema,
                "A checkpoint of a run with --ema: score the average of its weights, as the run "
                "tested (the default), or its weights themselves (--no-ema)");
  cmd->add_flag("--tta,!--no-tta", f->tta,
                "Test-time augmentation: score the mean of the logits of each image and its "
                "mirror image (default: as a checkpoint's own run tested, so eval reproduces its "
                "accuracy; else off)");
  cmd->add_flag("--tta-shifts,!--no-tta-shifts", f->tta_shifts,
                "Test-time augmentation over one-pixel shifts too (train's --tta-shifts; default: "
                "as a checkpoint's own run tested, else off)");
  cmd->add_option("--json", f->json, "Also write the result as JSON to this file");
  cmd->callback([f, cmd, &exit_code] {
    if (!f->json.empty()) {
      tools::check_output_path(f->json, "--json");  // its folder is made before it is written
      if (resolved(f->json) == resolved(f->o.weights))
        FASTER_USAGE_ERROR("--json ", f->json, " is the --weights file: it would be overwritten");
    }
    f->o.weights = train::qualify_weights_tag(f->o.weights, f->o.model);  // IMAGENET1K_V2
    if (cmd->get_option("--tta")->count() > 0) f->o.tta = f->tta;
    if (cmd->get_option("--ema")->count() > 0) f->o.ema = f->ema;
    if (cmd->get_option("--tta-shifts")->count() > 0) f->o.tta_shifts = f->tta_shifts;
    // JPEG data: the loader's streams run beside the model's, as in train (before any CUDA call).
    if (!data::is_small_dataset(f->o.data)) ask_for_more_work_queues();
    exit_code = print_eval(train::evaluate(f->o), f->json);
  });
}

}  // namespace

int print_eval(const train::EvalReport& r, const std::string& json) {
  std::printf(
      "eval %s%s (%d classes) on %s at %s%s: top-1 %.2f%%  top-5 %.2f%%  loss %.4f  "
      "(%lld images, %.2fs on %s)\n",
      r.model.c_str(), r.ema ? " (average of weights)" : "", r.classes, r.data.c_str(),
      r.res > 0 ? (std::to_string(r.res) + " px").c_str() : "its stored size",
      r.tta && r.tta_shifts ? ", flip and shift TTA"
      : r.tta               ? ", flip TTA"
      : r.tta_shifts        ? ", shift TTA"
                            : "",
      r.top1, r.top5, r.loss, static_cast<long long>(r.images), r.seconds, r.device.c_str());
  if (!json.empty()) {
    tools::make_parent_folders(json, "--json");
    tools::write_file_atomic(json, r.to_json().dump(2) + "\n");
  }
  return r.skipped > 0 ? kExitBadInput : 0;
}

FASTER_REGISTER_COMMAND(15, add_eval);
}  // namespace faster::cli

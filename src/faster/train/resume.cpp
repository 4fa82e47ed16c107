// Resuming a run from its checkpoint: the weights and the training state copied in, the run's
// history, and the checks that the checkpoint belongs to this run and its data.
#include <torch/torch.h>

#include "faster/core/error.h"
#include "faster/core/file.h"
#include "faster/core/log.h"
#include "faster/train/run.h"

namespace faster::train {
namespace {

// Resuming with other settings than the checkpoint's is allowed (a lower rate to fine-tune, say),
// but the run then differs from the uninterrupted one: one warning names what changed.  The
// settings compared are kRunKeys, and --epochs where the rate decays to the run's end (cosine,
// linear: another end is another schedule); rank 0 (`speak`) warns.
// A run that writes its checkpoint's run's own outputs (a bare resume of its latest checkpoint)
// must be that run: with other settings it would replace that run's results with another's, so it
// is refused, naming them (--epochs may still grow: the same run, trained on).
void check_resumed_options(const nlohmann::json& saved, const nlohmann::json& now,
                           const std::string& checkpoint, bool its_outputs, bool speak) {
  if (!saved.is_object()) return;
  std::string changed = changed_settings(saved, now);
  if (!changed.empty() && its_outputs)
    throw UsageError("--resume " + checkpoint + " with other settings (" + changed +
                     ") would write over its run's outputs: name --checkpoint, --save or --json "
                     "for this run, or resume with the run's settings");
  const std::string decay = now.value("lr_decay", "");
  if (decay == "cosine" || decay == "linear")
    if (saved.contains("epochs") && now.contains("epochs") && saved["epochs"] != now["epochs"])
      changed = "epochs " + now["epochs"].dump() + " (was " + saved["epochs"].dump() + ")" +
                (changed.empty() ? "" : ", ") + changed;
  if (!changed.empty() && speak)
    log::warn("--resume ", checkpoint, ": ", changed,
              "; training goes on, but not as the uninterrupted run would have");
}

}  // namespace

std::string changed_settings(const nlohmann::json& saved, const nlohmann::json& now) {
  std::string changed;
  for (const char* key : kRunKeys) {
    if (!saved.contains(key) || !now.contains(key) || saved[key] == now[key]) continue;
    if (std::string(key) == "data" && saved[key].is_string() && now[key].is_string() &&
        resolved(saved[key].get<std::string>()) == resolved(now[key].get<std::string>()))
      continue;  // the same folder, however it is named
    changed += std::string(changed.empty() ? "" : ", ") + key + " " + now[key].dump() + " (was " +
               saved[key].dump() + ")";
  }
  return changed;
}

// Checkpoints of small datasets (their classes are indices) and older ones record no names.
void check_class_names(const nlohmann::json& meta, const TrainingData& d,
                       const std::string& where) {
  if (d.arrays() || !meta.contains("class_names")) return;
  if (meta["class_names"] == nlohmann::json(d.classes)) return;
  const auto first = [](const nlohmann::json& names) {
    std::string s;
    for (size_t i = 0; i < names.size() && i < 4; ++i)
      s += (i ? ", " : "") + names[i].get<std::string>();
    return s + (names.size() > 4 ? ", ..." : "");
  };
  throw Error(where + " was trained on classes " + first(meta["class_names"]) + " (" +
                  std::to_string(meta["class_names"].size()) + "), but " +
                  (d.val ? d.val : d.train)->describe() + " has " + first(d.classes) + " (" +
                  std::to_string(d.classes.size()) + ")",
              "labels follow the class folders' sorted names: name them as the training data's");
}

void reorder_saved_flats(const FlatSgd& sgd, bool channels_last, const nlohmann::json& saved,
                         const std::vector<torch::Tensor>& flats) {
  if (!saved.contains("channels_last") || !saved["channels_last"].is_boolean()) return;
  const bool was = saved["channels_last"].get<bool>();
  if (was == channels_last) return;
  for (const auto& flat : flats) sgd.reorder_from(flat, was);
}

int restore(const TrainOptions& o, const TrainingData& d, Run& run, TrainReport& report,
            bool speak) {
  if (o.resume.empty()) return 0;
  auto& stepper = *run.stepper;
  const auto meta = load_checkpoint(o.resume, run.model.module(), run.parts, run.identity);
  check_class_names(meta, d, o.resume);
  std::vector<torch::Tensor> flats = {stepper.sgd().momentum()};
  if (stepper.ema()) flats.push_back(stepper.ema()->state()[0]);
  reorder_saved_flats(stepper.sgd(), o.channels_last,
                      meta.value("options", nlohmann::json::object()), flats);
  // The average's warm-up goes on where it was (a checkpoint from before it was recorded: past it).
  if (stepper.ema()) stepper.ema()->set_updates(meta.value("ema_updates", int64_t{1} << 40));
  const int start_epoch = meta.value("epochs_done", 0);
  if (const auto h = meta.find("epochs"); h != meta.end() && h->is_array())
    for (const auto& e : *h)
      if (e.is_object() && e.value("epoch", 0) <= start_epoch)
        report.earlier_epochs.push_back(EpochStats::from_json(e));
  if (start_epoch >= o.epochs)
    FASTER_THROW("--resume ", o.resume, " has done ", start_epoch, " epoch(s) of --epochs ",
                 o.epochs, ": nothing left to train (a larger --epochs trains on)");
  // Every rank: a refusal stops them all alike; rank 0 speaks.
  auto saved = meta.value("options", nlohmann::json::object());
  read_old_crop_flips(saved, d.arrays());
  check_resumed_options(saved, report.options, o.resume, o.outputs_from_checkpoint, speak);
  return start_epoch;
}

}  // namespace faster::train

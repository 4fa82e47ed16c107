// `faster eval`: saved weights (faster's or torchvision's, a state_dict or a checkpoint) scored on
// a validation split.
#include <torch/torch.h>

#include <filesystem>

#include "faster/core/error.h"
#include "faster/core/log.h"
#include "faster/core/progress.h"
#include "faster/core/timer.h"
#include "faster/data/sources/open_source.h"
#include "faster/train/cpu_runtime.h"
#include "faster/train/run.h"
#include "faster/train/torchvision_weights.h"

namespace faster::train {
namespace fs = std::filesystem;

// What torchvision users load too: a wrapped model's state_dict (every name under DataParallel's
// and DDP's "module." or torch.compile's "_orig_mod.", in any nesting), and one saved before
// PyTorch 0.4.1, whose BatchNorm layers have no num_batches_tracked (BatchNorm fills it in; it only
// counts steps and changes no output).
c10::Dict<std::string, torch::Tensor> as_plain_state_dict(
    const c10::Dict<std::string, torch::Tensor>& dict) {
  // The wrappers every name starts with, measured once (then each name cut once).
  size_t cut = 0;
  for (bool more = !dict.empty(); more;) {
    more = false;
    for (const std::string wrapped : {"module.", "_orig_mod."}) {
      bool all_wrapped = true;
      for (const auto& kv : dict)
        all_wrapped = all_wrapped && kv.key().compare(cut, wrapped.size(), wrapped) == 0;
      if (all_wrapped) cut += wrapped.size(), more = true;
    }
  }
  c10::Dict<std::string, torch::Tensor> out;
  for (const auto& kv : dict) out.insert(kv.key().substr(cut), kv.value());
  const std::string mean = ".running_mean";
  std::vector<std::string> missing;
  for (const auto& kv : out) {
    const std::string& k = kv.key();
    if (k.size() > mean.size() && k.compare(k.size() - mean.size(), mean.size(), mean) == 0) {
      const std::string counter = k.substr(0, k.size() - mean.size()) + ".num_batches_tracked";
      if (!out.contains(counter)) missing.push_back(counter);
    }
  }
  for (const auto& k : missing) out.insert(k, torch::zeros({}, torch::kLong));
  return out;
}

SavedModel read_saved_model(const std::string& file) {
  SavedModel s;
  s.dict = as_plain_state_dict(read_state_dict(file, &s.args));
  s.prefix = is_checkpoint(s.dict) ? "model." : "";
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& kv : s.dict)
    if (kv.key().rfind(s.prefix, 0) == 0)
      shapes[kv.key().substr(s.prefix.size())] = kv.value().sizes().vec();
  s.mo = models::infer_model_options(shapes, file);
  return s;
}

std::string weights_file(const std::string& weights) {
  if (is_weights_name(weights)) return cached_weights_file(torchvision_weights(weights));
  check_weights_file(weights, "--weights");
  return weights;
}

std::string weights_model(const std::string& weights) {
  if (is_weights_name(weights)) return torchvision_weights(weights).arch;
  return read_saved_model(weights_file(weights)).mo.name;
}

namespace {

// torchvision's weights by name are scored as torchvision's transforms for them do (shorter side
// to their resize, the centre 224 px) where no --val-res says otherwise; weights named are
// checked against --model.
void take_weights_name(EvalOptions& e) {
  const std::string& name = e.transforms.empty() ? e.weights : e.transforms;
  if (!is_weights_name(name)) return;
  const TorchvisionWeights w = torchvision_weights(name);
  if (name == e.weights && !e.model.empty() && e.model != w.arch)
    FASTER_USAGE_ERROR("--weights ", w.name, " are ", w.arch, "'s, not --model ", e.model, "'s");
  if (e.val_res == 0) {
    e.val_res = w.crop;
    if (e.val_resize == 0) e.val_resize = w.resize;
  }
}

// The split scored: a small dataset's test split, a root's val/, or the split named (folder or
// LMDB).
TrainingData open_eval_data(const std::string& path) {
  TrainingData d;
  const fs::path root(path);
  std::error_code ec;
  if (data::is_small_dataset(root)) {
    d = open_training_data(path, "");
  } else if (!data::is_lmdb_path(root) && fs::is_directory(root / "val", ec)) {
    d.val = open_split((root / "val").string());
  } else if (!data::is_lmdb_path(root) && fs::is_directory(root / "train", ec)) {
    FASTER_THROW(path, " has train/ but no val/: name the split to evaluate");
  } else {
    d.val = open_split(path);
  }
  d.classes = d.val->classes();
  return d;
}

// Saved weights: a state_dict (faster's or torchvision's) or a faster checkpoint's model, with
// what a checkpoint says of its run.
struct Weights : SavedModel {
  nlohmann::json meta, run;  // a checkpoint's record and its run's options (none for a state_dict)
  double ema_decay = 0;      // the run's --ema
  bool ema = false;          // the average of the weights is scored
};

// What a torchvision checkpoint's "args" say of its run as faster records runs: the whole record
// where faster wrote the checkpoint (--output-dir: args["faster"]), else train.py's test
// transforms (val_crop_size, val_resize_size); empty where they say neither.
nlohmann::json run_of_torchvision_args(const nlohmann::json& args) {
  auto run = nlohmann::json::object();
  if (!args.is_object()) return run;
  if (const auto f = args.find("faster"); f != args.end() && f->is_string()) {
    auto whole = nlohmann::json::parse(f->get<std::string>(), nullptr, /*allow_exceptions=*/false);
    if (whole.is_object()) return whole;
  }
  const auto crop = args.find("val_crop_size"), resize = args.find("val_resize_size");
  if (crop != args.end() && crop->is_number_integer() && crop->get<int64_t>() > 0) {
    run["val_res"] = crop->get<int64_t>();
    if (resize != args.end() && resize->is_number_integer() && resize->get<int64_t>() > 0)
      run["val_resize"] = resize->get<int64_t>();
  }
  return run;
}

Weights read_weights(const EvalOptions& e, const TrainingData& d) {
  Weights w;
  static_cast<SavedModel&>(w) = read_saved_model(e.weights);
  if (!e.model.empty() && e.model != w.mo.name)
    FASTER_THROW(e.weights, " holds ", w.mo.name, " weights, not --model ", e.model);
  if (w.mo.classes != static_cast<int>(d.classes.size()))
    FASTER_THROW(e.weights, " classifies ", w.mo.classes, " classes, but ", d.val->describe(),
                 " has ", d.classes.size());
  // What a checkpoint, or weights faster saved, say of their run (nothing, from another program).
  w.meta = w.prefix.empty() ? read_weights_meta(e.weights) : checkpoint_meta(w.dict, e.weights);
  if (!w.meta.is_object()) w.meta = nlohmann::json::object();
  check_class_names(w.meta, d, e.weights);
  w.run = w.meta.value("options", nlohmann::json::object());
  if (w.run.empty()) w.run = run_of_torchvision_args(w.args);
  // A checkpoint holds the average of the weights (--ema) beside them: what its run tested, and
  // what is scored by default.  Saved weights already are what the run tested.
  w.ema_decay = w.prefix.empty() ? 0.0 : w.run.value("ema", 0.0);
  w.ema = e.ema.value_or(w.ema_decay > 0);
  if (w.ema && !(w.ema_decay > 0 && w.ema_decay < 1 && w.dict.contains("ema.0")))
    throw Error(e.weights + " holds no average of weights (its run had no --ema)",
                "a --save file of a run with --ema already is that average: drop --ema");
  return w;
}

// The network the weights fill, in evaluation mode.
models::Model load_model(const EvalOptions& e, const Weights& w, const TrainingData& d,
                         torch::Device device) {
  auto model = build_model(w.mo, device, e.channels_last);
  if (w.ema && w.run.value("freeze_whitening", false)) {
    // The average covers the trained parameters: the stem stayed as initialised, out of it.
    if (!d.train_arrays) FASTER_THROW(e.weights, ": its frozen stem needs the training split");
    for (auto p : init_from_training_images(model, *d.train_arrays, w.mo.name, device))
      p.requires_grad_(false);
  }
  copy_state_dict(w.dict, w.prefix, model.module(), e.weights);
  model->eval();
  return model;
}

// Eval's data flags as the loader plan takes them.
DataOptions eval_data(const EvalOptions& e) {
  DataOptions o;
  o.batch = e.batch, o.workers = e.workers, o.decode = e.decode;
  o.channels_last = e.channels_last, o.val_res = e.val_res, o.val_resize = e.val_resize;
  return o;
}

// What the step reads when it only evaluates: the batch, precision and layout, the resolution (a
// checkpoint's run's where none is given), test-time augmentation, the average.
TrainOptions eval_options(const EvalOptions& e, const Weights& w, const TrainingData& d) {
  TrainOptions o;
  static_cast<DataOptions&>(o) = eval_data(e);
  o.precision = e.precision;
  o.ema_decay = w.ema ? w.ema_decay : 0;
  if (!w.run.empty() && e.val_res == 0) {
    // A checkpoint, or weights faster saved, know the resolution their run tested at: its
    // --val-res, else its --res.
    const int val_res = w.run.value("val_res", 0), res = w.run.value("res", 0);
    o.val_res = val_res > 0 ? val_res : res;
    if (e.val_resize == 0) o.val_resize = w.run.value("val_resize", 0);
    // A run on a small dataset as stored tested whole images of its side: so are JPEGs scored.
    const int stored = w.meta.value("stored_side", 0);
    if (o.val_res == 0 && stored > 0 && !d.arrays()) {
      o.val_res = stored;
      if (e.val_resize == 0) o.val_resize = stored;
    }
  }
  // Weights that record no resolution (another program's state_dict, an older file of faster's):
  // JPEG data is scored at torchvision's 224 px, which a model trained at another one
  // scores far below its accuracy.  Said once, before the pass.
  if (o.val_res == 0 && !d.arrays())
    log::warn(e.weights,
              " records no resolution: scoring at 224 px; --val-res R for the resolution it was "
              "trained at");
  o.tta = e.tta.value_or(w.run.value("tta", false));
  o.tta_shifts = e.tta_shifts.value_or(w.run.value("tta_shifts", false));
  return o;
}

// A diverged run's weights score as chance with a NaN loss: said, not scored.
void check_finite(models::Model& model, const EvalOptions& e, bool ema) {
  for (const auto& named : {model->named_parameters(), model->named_buffers()})
    for (const auto& kv : named)
      if (kv.value().is_floating_point() && !torch::isfinite(kv.value()).all().item<bool>())
        throw Error(e.weights + " holds weights that are not finite (" + kv.key() +
                        (ema ? ", in the average of weights" : "") + ")",
                    "a run that diverged? Its earlier checkpoints (--keep-checkpoints) may not");
}

}  // namespace

EvalReport evaluate(const EvalOptions& options) {
  validate(eval_data(options));  // the data flags' ranges, before anything is read
  if (!options.model.empty()) models::family(options.model);  // a name faster knows
  EvalOptions e = options;
  take_weights_name(e);
  const auto device = resolve_device(e.device);
  if (device.is_cpu() && e.precision == Precision::kFloat16)
    refuse_on_cpu(e.device, "--precision fp16", "--precision bf16 runs on the CPU");
  if (device.is_cpu() && e.decode == Decode::kNvjpeg)
    refuse_on_cpu(e.device, "--decode nvjpeg", "--decode cpu decodes on the CPU");
  // Usage errors first, then what is on disk: a name's file in torch's cache, or the file named.
  e.weights = weights_file(e.weights);
  if (device.is_cpu()) configure_cpu_runtime(1);
  const TrainingData d = open_eval_data(e.data);
  const Weights w = read_weights(e, d);
  auto model = load_model(e, w, d, device);
  const TrainOptions o = eval_options(e, w, d);
  TrainingData scored = d;  // the plan of the split scored (no training split: no training part)
  scored.train = nullptr;
  const DataPlan plan = plan_data(o, scored, w.mo.in_channels, device, WorldInfo{});
  Stepper stepper(model, o, device, nullptr, {}, models::input_normalization(w.mo.name),
                  w.mo.in_channels, plan.layout == data::Layout::kNHWC);
  if (w.ema) {  // the checkpoint's average, in its run's memory order, swapped into the model
    copy_checkpoint_parts(w.dict, {{"ema.", stepper.ema()->state()}}, e.weights);
    reorder_saved_flats(stepper.sgd(), o.channels_last, w.run, {stepper.ema()->state()[0]});
    stepper.swap_ema();
  }
  check_finite(model, e, w.ema);
  auto lo = loader_options(plan, d, device, WorldInfo{}, false);
  lo.normalize_on_device = false;  // the step normalizes
  auto loader = make_loader(plan, d, lo, false);
  const Timer timer;
  loader->start_epoch(0);
  {
    Progress bar("eval", loader->batches_per_epoch(), "batch");
    while (auto b = loader->next()) {
      stepper.eval_batch(*b);
      bar.add();
    }
  }
  const StepTotals t = Stepper::read(stepper.totals());
  EvalReport r;
  r.model = w.mo.name;
  r.data = d.val->describe();
  r.device = device.str();
  r.classes = w.mo.classes;
  r.res = plan.val_res;
  r.tta = o.tta;
  r.tta_shifts = o.tta_shifts;
  r.ema = w.ema;
  r.images = static_cast<int64_t>(t.evaluated);
  r.skipped = d.val->size() - r.images;
  const auto s = t.scores();
  r.loss = s.loss, r.top1 = s.top1, r.top5 = s.top5;
  r.seconds = timer.seconds();
  return r;
}

}  // namespace faster::train

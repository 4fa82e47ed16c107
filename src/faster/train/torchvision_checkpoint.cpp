// torchvision's checkpoint.pth, as its train.py writes and reads it.
#include "faster/train/torchvision_checkpoint.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <filesystem>

#include "faster/core/error.h"
#include "faster/models/registry.h"
#include "faster/train/checkpoint.h"

namespace faster::train {
namespace {
namespace fs = std::filesystem;
using c10::IValue;

c10::impl::GenericDict str_dict() {
  return c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
}
c10::impl::GenericList any_list() {
  return c10::impl::GenericList(c10::AnyType::get());
}
c10::impl::GenericList doubles(size_t n, double v) {
  auto l = any_list();
  for (size_t i = 0; i < n; ++i) l.push_back(v);
  return l;
}
// A number torchvision's flags leave as None when not given.
IValue maybe(double v, bool given) {
  return given ? IValue(v) : IValue();
}

// torchvision's --norm-weight-decay and --bias-weight-decay for the run's decays (sgd.h's
// param_weight_decay follows their precedence): set, or 0 where 1-d parameters take none.
struct TorchvisionDecays {
  bool norm = false, bias = false;
  double norm_value = 0, bias_value = 0;
};
TorchvisionDecays torchvision_decays(const SgdOptions& s) {
  TorchvisionDecays d;
  d.norm = s.norm_weight_decay >= 0 || !s.decay_1d;
  d.bias = s.bias_weight_decay >= 0 || !s.decay_1d;
  d.norm_value = s.norm_weight_decay >= 0 ? s.norm_weight_decay : 0;
  d.bias_value = s.bias_weight_decay >= 0 ? s.bias_weight_decay : 0;
  return d;
}

// The rate of epoch `e` (0-based) of the run's schedule.
double lr_of(const TrainOptions& o, int64_t e, int64_t steps_per_epoch) {
  return o.sgd.lr * lr_factor(o.schedule, e * steps_per_epoch, steps_per_epoch, o.epochs);
}

// The state_dict of one of torchvision's schedulers after `last` of its own epochs (-1: the
// SequentialLR's main scheduler before its milestone), its last rate `lr`, for `groups` groups;
// `calls`, the step() calls it has counted (_step_count: its constructor's one included).
c10::impl::GenericDict scheduler_state(const TrainOptions& o, bool warmup, int64_t last, double lr,
                                       size_t groups, int64_t calls) {
  const auto& s = o.schedule;
  auto d = str_dict();
  const int warmup_epochs = static_cast<int>(s.warmup_epochs);
  if (warmup && s.warmup_shape == WarmupShape::kLinear) {
    d.insert("start_factor", s.warmup_start);
    d.insert("end_factor", 1.0);
    d.insert("total_iters", int64_t{warmup_epochs});
  } else if (warmup) {
    d.insert("factor", s.warmup_start);
    d.insert("total_iters", int64_t{warmup_epochs});
  } else if (s.decay == LrDecay::kStep) {
    d.insert("step_size", int64_t{s.step_size});
    d.insert("gamma", s.step_gamma);
  } else if (s.decay == LrDecay::kCosine) {
    d.insert("T_max", int64_t{o.epochs - warmup_epochs});
    d.insert("eta_min", s.min_lr * o.sgd.lr);
  } else {
    d.insert("gamma", s.step_gamma);
  }
  d.insert("base_lrs", doubles(groups, o.sgd.lr));
  d.insert("last_epoch", last);
  d.insert("verbose", false);
  d.insert("_step_count", calls);
  d.insert("_get_lr_called_within_step", false);
  d.insert("_last_lr", doubles(groups, lr));
  return d;
}

// What train.py's scheduler holds after the epoch `epoch` (0-based) and its lr_scheduler.step().
IValue lr_scheduler_state(const TrainOptions& o, int epoch, int64_t spe, size_t groups) {
  const int64_t done = epoch + 1;  // steps of the scheduler, one per epoch
  const auto warmup = static_cast<int64_t>(o.schedule.warmup_epochs);
  const double now = lr_of(o, done, spe);
  if (warmup == 0) return scheduler_state(o, false, done, now, groups, done + 1);
  // SequentialLR([warm-up, main], milestones=[warmup]): the warm-up steps before the milestone,
  // the main scheduler from it (step(0) there).  Each counts its constructor's step; SequentialLR
  // then takes the main one's epoch back by one and steps the warm-up once more from its start.
  const int64_t warm_last = std::min(done, warmup - 1);
  const int64_t main_last = done >= warmup ? done - warmup : -1;
  auto schedulers = any_list();
  schedulers.push_back(
      scheduler_state(o, true, warm_last, lr_of(o, warm_last, spe), groups, warm_last + 1));
  schedulers.push_back(scheduler_state(
      o, false, main_last, main_last >= 0 ? lr_of(o, warmup + main_last, spe) : o.sgd.lr, groups,
      main_last + 2));
  auto d = str_dict();
  d.insert("_schedulers", schedulers);
  auto milestones = any_list();
  milestones.push_back(warmup);
  d.insert("_milestones", milestones);
  d.insert("last_epoch", done);
  d.insert("verbose", false);
  d.insert("_last_lr", doubles(groups, now));
  return d;
}

// SGD's state_dict: the parameter groups set_weight_decay makes (other, norm, bias: those with
// parameters), the parameters numbered through them in order, each one's momentum buffer.
IValue optimizer_state(const TrainOptions& o, const torch::nn::Module& model, Stepper& stepper,
                       double lr, size_t& groups_out) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& p : model.named_parameters()) named.emplace_back(p.key(), p.value());
  const auto roles = param_roles(named);
  const auto tv = torchvision_decays(o.sgd);
  const auto& sgd = stepper.sgd();
  FASTER_CHECK(sgd.params().size() == named.size(), "--output-dir: a frozen parameter");
  std::vector<std::vector<size_t>> members(3);  // other, norm, bias
  for (size_t i = 0; i < named.size(); ++i)
    members[roles[i].bias && tv.bias ? 2 : roles[i].norm && tv.norm ? 1 : 0].push_back(i);
  const double group_decay[3] = {o.sgd.weight_decay, tv.norm_value, tv.bias_value};
  auto groups = any_list();
  c10::impl::GenericDict state(c10::IntType::get(), c10::AnyType::get());
  int64_t id = 0;
  for (int g = 0; g < 3; ++g) {
    if (members[g].empty()) continue;
    auto params = any_list();
    for (size_t i : members[g]) {
      const auto& p = sgd.params()[i];
      FASTER_CHECK(param_weight_decay(roles[i], p.dim(), o.sgd) == group_decay[g],
                   "--output-dir: ", named[i].first, "'s decay is not its group's");
      auto entry = str_dict();
      entry.insert("momentum_buffer", archive_copy(sgd.param_view(sgd.momentum(), i)));
      state.insert(id, entry);
      params.push_back(id++);
    }
    auto group = str_dict();
    group.insert("lr", lr);
    group.insert("momentum", o.sgd.momentum);
    group.insert("dampening", 0.0);
    group.insert("weight_decay", group_decay[g]);
    group.insert("nesterov", o.sgd.nesterov);
    group.insert("maximize", false);
    group.insert("foreach", IValue());
    group.insert("differentiable", false);
    group.insert("initial_lr", o.sgd.lr);
    group.insert("params", params);
    groups.push_back(group);
  }
  groups_out = groups.size();
  auto d = str_dict();
  d.insert("state", state);
  d.insert("param_groups", groups);
  return d;
}

// train.py's arguments as far as the run has them, under its names.
IValue args_of(const TrainOptions& o) {
  const auto tv = torchvision_decays(o.sgd);
  const auto& s = o.schedule;
  auto a = str_dict();
  a.insert("data_path", o.data);
  a.insert("model", o.model);
  a.insert("batch_size", o.batch);
  a.insert("epochs", int64_t{o.epochs});
  a.insert("opt", std::string(o.sgd.nesterov ? "sgd_nesterov" : "sgd"));
  a.insert("lr", o.sgd.lr);
  a.insert("momentum", o.sgd.momentum);
  a.insert("weight_decay", o.sgd.weight_decay);
  a.insert("norm_weight_decay", maybe(tv.norm_value, tv.norm));
  a.insert("bias_weight_decay", maybe(tv.bias_value, tv.bias));
  a.insert("label_smoothing", o.label_smoothing);
  a.insert("mixup_alpha", o.augment.mixup_alpha);
  a.insert("cutmix_alpha", o.augment.cutmix_alpha);
  a.insert("lr_scheduler", std::string(enum_name(kTorchvisionSchedulers, s.decay)));
  a.insert("lr_warmup_epochs", static_cast<int64_t>(s.warmup_epochs));
  a.insert("lr_warmup_method", std::string(enum_name(kWarmupShapeNames, s.warmup_shape)));
  a.insert("lr_warmup_decay", s.warmup_start);
  a.insert("lr_step_size", int64_t{s.step_size});
  a.insert("lr_gamma", s.step_gamma);
  a.insert("lr_min", s.min_lr * o.sgd.lr);
  a.insert("output_dir", o.output_dir);
  a.insert("auto_augment",
           o.auto_augment.on()
               ? IValue(std::string(enum_name(data::kAutoAugmentNames, o.auto_augment.policy)))
               : IValue());
  a.insert("ra_magnitude", int64_t{o.auto_augment.ra_magnitude});
  a.insert("augmix_severity", int64_t{o.auto_augment.augmix_severity});
  a.insert("ra_sampler", o.ra_reps > 0);
  a.insert("ra_reps", int64_t{o.ra_reps > 0 ? o.ra_reps : 3});  // train.py's default when off
  a.insert("random_erase", o.augment.random_erase);
  a.insert("amp", o.precision == Precision::kFloat16);
  a.insert("model_ema", o.ema_decay > 0);
  a.insert("model_ema_steps", int64_t{o.ema_every});
  const int val = o.val_res > 0 ? o.val_res : o.res.res;  // data_plan.h's defaults
  a.insert("train_crop_size", int64_t{o.res.res});
  a.insert("val_resize_size", int64_t{o.val_resize > 0 ? o.val_resize : val * 256 / 224});
  a.insert("val_crop_size", int64_t{val});
  a.insert("clip_grad_norm", maybe(o.clip_grad_norm, o.clip_grad_norm > 0));
  a.insert("sync_bn", o.sync_bn);
  a.insert("faster", options_json(o).dump());  // the whole run, as faster records it
  return a;
}

}  // namespace

void check_output_dir_options(const TrainOptions& o) {
  if (o.output_dir.empty()) return;
  if (models::family(o.model) != models::Family::kResNet)
    FASTER_USAGE_ERROR("--output-dir writes torchvision's checkpoints, of torchvision's models: ",
                       o.model, " is faster's own (--checkpoint keeps faster's)");
  if (!o.schedule.per_epoch)
    FASTER_USAGE_ERROR(
        "--output-dir writes torchvision's checkpoints, whose lr_scheduler is one of "
        "torchvision's: name --lr-scheduler (or --recipe torchvision) for a schedule it has");
  if (o.sgd.muon_lr > 0)
    FASTER_USAGE_ERROR("--output-dir writes torch.optim.SGD's state, and Muon is not SGD");
}

void save_torchvision_checkpoint(const TrainOptions& o, int epoch, int64_t steps_per_epoch,
                                 const torch::nn::Module& model, Stepper& stepper) {
  const double lr = lr_of(o, epoch + 1, steps_per_epoch);  // after lr_scheduler.step()
  auto weights = str_dict();
  for (const auto& [name, t] : named_state(model)) weights.insert(name, archive_copy(t));
  size_t groups = 0;
  auto ckpt = str_dict();
  ckpt.insert("model", weights);
  ckpt.insert("optimizer", optimizer_state(o, model, stepper, lr, groups));
  ckpt.insert("lr_scheduler", lr_scheduler_state(o, epoch, steps_per_epoch, groups));
  ckpt.insert("epoch", int64_t{epoch});
  ckpt.insert("args", args_of(o));
  if (auto* ema = stepper.ema()) {
    // AveragedModel's: "module." and the model's names, then how many models it has averaged.
    const auto state = ema->state();  // the flat parameters, then the buffers in model order
    auto averaged = str_dict();
    size_t i = 0;
    for (const auto& p : model.named_parameters())
      averaged.insert("module." + p.key(), archive_copy(stepper.sgd().param_view(state[0], i++)));
    size_t b = 1;
    for (const auto& buffer : model.named_buffers())
      averaged.insert("module." + buffer.key(), archive_copy(state[b++]));
    averaged.insert("n_averaged", torch::tensor(ema->updates(), torch::kLong));
    ckpt.insert("model_ema", averaged);
  }
  if (auto* scaler = stepper.scaler()) {
    const auto s = scaler->state();  // scale, growth tracker
    const auto& so = scaler->options();
    auto d = str_dict();
    d.insert("scale", s[0].item<double>());
    d.insert("growth_factor", so.growth_factor);
    d.insert("backoff_factor", so.backoff_factor);
    d.insert("growth_interval", so.growth_interval);
    d.insert("_growth_tracker", s[1].item<int64_t>());
    ckpt.insert("scaler", d);
  }
  const fs::path dir = o.output_dir;
  const auto bytes = torch::pickle_save(ckpt);  // one archive, under both names
  write_archive(dir / ("model_" + std::to_string(epoch) + ".pth"), bytes);
  write_archive(dir / "checkpoint.pth", bytes);
}

}  // namespace faster::train

// The epoch loop: the training pass (the step never makes the host wait; the progress line reads
// the loss about once every two seconds), the test pass, the epoch's one read of the device, the
// record and the checkpoint.
#include <torch/torch.h>

#include <cmath>
#include <filesystem>

#include "faster/core/error.h"
#include "faster/core/process_clock.h"
#include "faster/core/timer.h"
#include "faster/train/profile_trace.h"
#include "faster/train/run.h"
#include "faster/train/torchvision_checkpoint.h"

namespace faster::train {
namespace fs = std::filesystem;

EpochLoop::EpochLoop(const TrainOptions& o, const TrainingData& d, Job& job, Run& run,
                     Loaders& loaders, TrainReport& report, MetricsLog& log)
    : o_(o), d_(d), job_(job), run_(run), loaders_(loaders), report_(report), log_(log) {
  steps_per_epoch_ = loaders_.train->batches_per_epoch();
  step_ = report_.start_epoch * steps_per_epoch_;
  if (job_.world.source == "single") interrupt_.emplace();
  std::error_code same_ec;  // the checkpoint written is the one read, however either is named
  if (!o.resume.empty() && fs::equivalent(o.checkpoint, o.resume, same_ec))
    epochs_saved_ = report_.start_epoch;
}

double EpochLoop::train_images_per_second() const {
  return train_seconds_ > 0 ? train_images_ / train_seconds_ : 0;
}

void EpochLoop::run_epoch(int epoch) {
  const Timer timer;
  Trained t;
  t.res = res_at(o_.res, epoch);
  if (loaders_.train_images && o_.res.res > 0) loaders_.train_images->set_size(t.res);
  run_.stepper->start_epoch();
  run_.model->train();
  before_ = loaders_.train_images ? loaders_.train_images->stats() : data::LoaderStats{};
  loaders_.train->start_epoch(epoch);
  const bool evaluate =
      loaders_.val && ((epoch + 1) % o_.eval_every == 0 || epoch + 1 == o_.epochs);
  std::optional<Progress> bar;
  const int64_t test_passes = !evaluate ? 0 : run_.stepper->ema() ? 2 : 1;
  if (job_.is_main())
    bar.emplace("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(o_.epochs),
                steps_per_epoch_ + (evaluate ? test_passes * loaders_.val->batches_per_epoch() : 0),
                "batch");
  if (bar) bar->set_every(o_.print_freq);
  train_pass(epoch, bar, timer, t);
  train_seconds_ += t.seconds;
  run_.stepper->sync_buffers();  // DDP: rank 0's statistics, tested and saved alike
  // torchvision's EMA follows the model during the learning-rate warm-up.
  if (run_.stepper->ema() && epoch + 1 <= o_.schedule.warmup_epochs) run_.stepper->ema()->reset();
  if (evaluate) test_pass(epoch, bar, t);
  if (bar) bar->finish();
  const EpochStats e = record(epoch, evaluate, t, timer);
  report_.epochs.push_back(e);
  save(epoch);  // first: a failed write of the metrics must not lose the epoch
  auto entry = e.to_json();
  entry["event"] = "epoch";
  log_.write(entry);
  log_.chart(o_.model + " on " + report_.data, report_.run_epochs());
}

void EpochLoop::train_pass(int epoch, std::optional<Progress>& bar, const Timer& timer,
                           Trained& t) {
  Timer since_line;
  auto& stepper = *run_.stepper;
  const auto show_rate_and_loss = [&] {  // reading the loss waits for the device
    char s[96];
    std::snprintf(s, sizeof s, "%s img/s  loss %.4f",
                  format_count(t.seen * job_.world.world / timer.seconds()).c_str(),
                  stepper.train_loss_so_far() / std::max<int64_t>(1, t.seen));
    bar->set_suffix(s);
  };
  // --profile: kProfileSteps steps of the last epoch, on rank 0.
  constexpr int64_t kProfileSteps = 10;
  const bool profile = !o_.profile.empty() && epoch + 1 == o_.epochs && job_.is_main();
  const int64_t profile_from = profile_first_step(steps_per_epoch_, kProfileSteps);
  std::optional<ProfileTrace> trace;
  while (auto b = loaders_.train->next()) {
    const int64_t step = step_++,
                  epoch_step = step - static_cast<int64_t>(epoch) * steps_per_epoch_;
    if (profile && epoch_step == profile_from) trace.emplace(o_.profile, job_.device);
    t.lr = o_.sgd.lr * lr_factor(o_.schedule, step, steps_per_epoch_, o_.epochs);
    stepper.set_lr(t.lr);
    stepper.train_batch(*b, step, epoch_step);
    if (trace && epoch_step + 1 == profile_from + kProfileSteps) {
      trace->stop();
      trace.reset();
    }
    stop_if_interrupted(epoch, "in");
    t.seen += b->size;
    if (!bar) continue;
    // The line printed every --print-freq steps shows the loss so far; else it is read now and
    // then.
    const bool line_due = o_.print_freq > 0 && (epoch_step + 1) % o_.print_freq == 0;
    if (line_due) show_rate_and_loss();
    bar->add();
    if (!line_due && since_line.seconds() >= 2) {
      show_rate_and_loss();
      since_line = Timer();
    }
  }
  if (trace) trace->stop();  // an epoch shorter than the profile's steps
  if (job_.device.is_cuda()) torch::cuda::synchronize(job_.device.index());
  t.seconds = timer.seconds();
  if (bar) show_rate_and_loss();  // the epoch's own, not its last update's
}

void EpochLoop::test_pass(int epoch, std::optional<Progress>& bar, const Trained& t) {
  auto& stepper = *run_.stepper;
  run_.model->eval();
  own_eval_ = torch::Tensor();
  if (stepper.ema()) {
    evaluate(epoch, bar, t, false);
    own_eval_ = stepper.take_eval_totals();
  }
  stepper.swap_ema();
  evaluate(epoch, bar, t, stepper.ema() != nullptr);
  stepper.swap_ema();
}

void EpochLoop::evaluate(int epoch, std::optional<Progress>& bar, const Trained& t, bool average) {
  auto& stepper = *run_.stepper;
  loaders_.val->start_epoch(0);
  while (auto b = loaders_.val->next()) {
    stepper.eval_batch(*b);
    if (interrupt_ && InterruptScope::received()) {
      // The epoch's training is done: it is saved before stopping (a long test pass interrupted
      // lost a whole epoch).
      if (average) stepper.swap_ema();
      if (torch::isfinite(stepper.sgd().flat_params()).all().item<bool>()) {
        // Its history holds the epoch too (untested): a resumed report has no gap.
        EpochStats e;
        e.epoch = epoch + 1;
        e.train_loss = stepper.train_loss_so_far() / std::max<int64_t>(1, t.seen);
        e.train_seconds = e.seconds = t.seconds;
        e.train_images = t.seen;
        e.lr = t.lr;
        e.res = t.res;
        e.process_seconds = process_seconds();
        report_.epochs.push_back(e);
        save(epoch);  // not a diverged one (the check after the test pass)
      }
      stop_if_interrupted(epoch, "testing after");
    }
    if (bar) bar->add();
  }
}

EpochStats EpochLoop::record(int epoch, bool evaluated, const Trained& t, const Timer& timer) {
  auto& stepper = *run_.stepper;
  // Bad images the job's loaders skipped in the epoch (training and test), summed with the step's
  // totals over the ranks: every rank knows the job's count, and rank 0 reports it.
  int64_t skipped = loaders_.train_images ? loaders_.train_images->skipped_this_epoch() : 0;
  if (evaluated && loaders_.val_images) skipped += loaders_.val_images->skipped_this_epoch();
  auto totals = stepper.totals();
  // The weights' own test sums where the average was tested (else zeros), then the skipped count.
  const auto own =
      evaluated && own_eval_.defined() ? own_eval_ : torch::zeros({4}, totals.options());
  totals =
      torch::cat({totals, own, torch::full({1}, static_cast<double>(skipped), totals.options())});
  if (job_.dist) job_.dist->all_reduce_sum(totals);
  totals = totals.to(torch::kCPU);  // the epoch's one host sync
  const StepTotals sums = Stepper::read(totals.slice(0, 0, 5));
  EpochStats e;
  e.skipped_images = static_cast<int64_t>(totals[-1].item<double>());
  e.epoch = epoch + 1;
  e.train_images = loaders_.train->samples_per_epoch() * job_.world.world;
  e.train_loss = sums.train_loss / std::max<int64_t>(1, e.train_images);
  e.evaluated = evaluated;
  if (evaluated) {
    const auto s = sums.scores();
    e.test_loss = s.loss, e.test_accuracy = s.top1, e.test_top5 = s.top5;
    if (own_eval_.defined()) {
      const auto o = Stepper::read_eval(totals.slice(0, 5, 9)).scores();
      e.averaged = true;
      e.own_test_loss = o.loss, e.own_test_accuracy = o.top1, e.own_test_top5 = o.top5;
    }
  }
  e.seconds = timer.seconds();  // after the sync: the test pass's work done
  e.train_seconds = t.seconds;
  if (loaders_.train_images) {
    const data::LoaderStats now = loaders_.train_images->stats();
    e.loader_wait_seconds = now.wait_s - before_.wait_s;
    e.loader_cpu_seconds = now.worker_s() - before_.worker_s();
    e.loader_gpu_seconds = now.gpu_s - before_.gpu_s;
    e.loader_gpu_parse_seconds = now.gpu_parse_s - before_.gpu_parse_s;
    e.loader_gpu_call_seconds = now.gpu_call_s - before_.gpu_call_s;
    e.loader_gpu_wait_seconds = now.gpu_wait_s - before_.gpu_wait_s;
    e.loader_images = now.images - before_.images;
    e.loader_gpu_images = now.gpu_images - before_.gpu_images;
  }
  e.lr = t.lr;
  e.res = t.res;
  e.process_seconds = process_seconds();
  train_images_ += e.train_images;
  // A diverged run stops here (the fp16 scaler skips the steps it can).
  const bool weights_finite = torch::isfinite(stepper.sgd().flat_params()).all().item<bool>();
  if (!weights_finite || (!stepper.scaler() && !std::isfinite(e.train_loss)))
    throw Error(
        detail::concat("training diverged in epoch ", e.epoch, ": the loss is ", e.train_loss,
                       weights_finite ? "" : " and the weights are no longer finite"),
        detail::concat("lower --lr (it is ", o_.sgd.lr,
                       "), or warm up for longer (--warmup-epochs)"));
  return e;
}

void EpochLoop::save(int epoch) {
  if (!job_.is_main()) return;
  if (!o_.output_dir.empty())
    save_torchvision_checkpoint(o_, epoch, steps_per_epoch_, run_.model.module(), *run_.stepper);
  if (o_.checkpoint.empty()) return;
  auto meta = run_meta(o_, d_, run_, report_);
  meta["epochs_done"] = epoch + 1;
  meta["step"] = step_;
  if (run_.stepper->ema()) meta["ema_updates"] = run_.stepper->ema()->updates();
  // The run's history so far: a resumed run's report and chart go on from it.
  auto& history = meta["epochs"] = nlohmann::json::array();
  for (const auto& e : report_.run_epochs()) history.push_back(e.to_json());
  save_checkpoint(o_.checkpoint, run_.model.module(), run_.parts, meta);
  epochs_saved_ = epoch + 1;
  if (o_.keep_checkpoints) {  // a second name for the same file (torchvision's model_N.pth)
    const auto kept = o_.checkpoint + ".epoch" + std::to_string(epoch + 1);
    std::error_code ec;
    fs::remove(kept, ec);
    fs::create_hard_link(o_.checkpoint, kept, ec);
    if (ec) fs::copy_file(o_.checkpoint, kept, fs::copy_options::overwrite_existing);
  }
}

nlohmann::json run_meta(const TrainOptions& o, const TrainingData& d, const Run& run,
                        const TrainReport& report) {
  auto meta = run.identity;
  if (!d.arrays()) meta["class_names"] = d.classes;
  // Trained on a small dataset as stored: the side eval scores its images at elsewhere (the tree
  // `faster export` makes of it).
  if (d.arrays() && o.res.res == 0 && d.train_arrays->height == d.train_arrays->width)
    meta["stored_side"] = d.train_arrays->height;  // (a square's: eval's crops are square)
  meta["options"] = report.options;
  return meta;
}

void EpochLoop::stop_if_interrupted(int epoch, const char* where) {
  const int signal = interrupt_ ? InterruptScope::received() : 0;
  if (signal == 0) return;
  log_.write({{"event", "interrupted"}, {"epoch", epoch + 1}, {"step", step_}});
  const std::string& c = o_.checkpoint;
  std::string hint;
  if (epochs_saved_ >= o_.epochs)  // the last epoch trained, its test pass cut short
    hint = c + " holds the trained run (" + std::to_string(o_.epochs) +
           (o_.epochs == 1 ? " epoch" : " epochs") + "): 'faster eval --weights " + c +
           "' scores it";
  else if (epochs_saved_ > 0)
    hint = c + " holds epoch " + std::to_string(epochs_saved_) + ": --resume " + c +
           " goes on from there";
  else
    hint = c.empty() ? "--checkpoint FILE saves every epoch, for --resume"
                     : "no epoch had ended: nothing was saved to " + c;
  throw Interrupted(signal,
                    "interrupted (" + signal_name(signal) + ") " + where + " epoch " +
                        std::to_string(epoch + 1) + "/" + std::to_string(o_.epochs),
                    hint);
}

}  // namespace faster::train

// The training and evaluation steps of one run, for any registered model: input normalization,
// autocast, cross-entropy (label smoothing in training), the fp16 grad scaler, DDP's bucketed
// all-reduce or DataParallel, flat SGD with a device-side learning rate, an optional weight EMA,
// flip test-time augmentation, and CUDA-graph capture of full-size batches.  The step never reads a
// device value on the host: losses and top-1/top-5 counts accumulate in device tensors, read once
// per epoch.
#pragma once

#include <torch/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "faster/data/loader/loader.h"
#include "faster/models/model.h"
#include "faster/train/amp.h"
#include "faster/train/batch_augment.h"
#include "faster/train/ema.h"
#include "faster/train/options.h"
#include "faster/train/parallel/dist.h"
#include "faster/train/parallel/grad_reducer.h"
#include "faster/train/sgd.h"
#include "faster/train/step_graph.h"

namespace faster::train {

// The parameters the optimizer moves: those that require a gradient (a frozen whitening stem is not
// one of them).
std::vector<torch::Tensor> trainable(const std::vector<torch::Tensor>& params);

// Flip test-time augmentation: the mean of the logits of x and of x mirrored left to right (the
// last dimension: W of NCHW).
torch::Tensor flip_tta(const std::function<torch::Tensor(const torch::Tensor&)>& forward,
                       const torch::Tensor& x);

// Test-time augmentation, airbench's levels: the logits of x (flip: flip_tta's mean), and with
// `shifts` 0.5 x those + 0.25 x those of x shifted one pixel down-right and one up-left (each
// with its mirror image under `flip`), the pixels that come in at the edge reflected.  x: [n, C,
// H, W]; the shifted copies keep x's memory format.
torch::Tensor tta_logits(const std::function<torch::Tensor(const torch::Tensor&)>& forward,
                         const torch::Tensor& x, bool flip, bool shifts);

// The epoch's sums, read once per epoch (and summed over the ranks of a DDP job).
struct StepTotals {
  double train_loss = 0;      // sum over training samples
  double eval_loss = 0;       // sum over evaluated samples (cross-entropy without smoothing)
  double top1 = 0, top5 = 0;  // correct predictions among the evaluated samples
  double evaluated = 0;       // the samples evaluated: rows without the padding label

  // Over the evaluated samples: the mean loss, and top-1 and top-5 in %.
  struct Scores {
    double loss = 0, top1 = 0, top5 = 0;
  };
  Scores scores() const;
};

// torch.nn.utils.clip_grad_norm_ over a flat gradient: times min(1, max_norm / (norm + 1e-6)), on
// the device, without the host reading the norm.
void clip_grad_norm(torch::Tensor& flat_grad, double max_norm);

class Stepper {
 public:
  // `norm`: the model's input normalization; `input_nhwc`: batches arrive as [n, h, w, c].
  Stepper(models::Model model, const TrainOptions& o, torch::Device device, Dist* dist,
          std::vector<torch::Device> dp_devices, const data::Normalization& norm, int channels,
          bool input_nhwc);

  models::Model& model() { return model_; }
  FlatSgd& sgd() { return sgd_; }
  GradScaler* scaler() { return scaler_ ? &*scaler_ : nullptr; }
  WeightEma* ema() { return ema_ ? &*ema_ : nullptr; }

  void set_lr(double lr) { sgd_.set_lr(lr); }
  void start_epoch();
  // `step`: the run's step (0-based), which seeds the batch's augmentation draws; `epoch_step`:
  // its place in the epoch, which decides whether the average takes it in (every ema_every).
  void train_batch(const data::Batch& b, int64_t step = 0, int64_t epoch_step = 0);
  void eval_batch(const data::Batch& b);
  // The evaluation's sums so far (loss, top-1, top-5, samples: a device tensor of 4 doubles),
  // taken: the sums start again from zero (a second pass, the average's, scores apart).
  torch::Tensor take_eval_totals();

  // The epoch's sums as one device tensor [train loss, eval loss, top1, top5, samples] (for
  // all-reduce)...
  torch::Tensor totals() const;
  // ...and read back on the host (syncs); read_eval: the evaluation's four alone (as
  // take_eval_totals gives them; train_loss 0).
  static StepTotals read(const torch::Tensor& totals);
  static StepTotals read_eval(const torch::Tensor& eval_totals);
  // The training loss summed so far this epoch (syncs; for progress lines).
  double train_loss_so_far() const;

  // Evaluation on the EMA weights (when there is an EMA): swaps them in, and back.
  void swap_ema();
  // DDP without SyncBatchNorm: every rank's BatchNorm statistics (and their averages under --ema)
  // follow its own shard; this gives every rank rank 0's, the model's that --save and checkpoints
  // hold, as torch's DDP does before every forward pass.  The trainer calls it after each epoch's
  // training, so the test pass scores the saved model and a resumed job matches a straight one.
  void sync_buffers();

  // Runs the training and evaluation steps on these full-size batches until their graphs are
  // captured (or once, without graphs), so the first epoch pays no cuDNN plan or capture; then
  // restores the weights, momentum, buffers, EMA and sums: the run continues as if untouched.
  // `mark(name)` is called, the device synchronized, after the first training step (its cuDNN
  // plans) and once the training step is ready (captured), for the set-up's milestones.
  void warm_up(const data::Batch& train, const data::Batch& eval,
               const std::function<void(const char*)>& mark = {});

 private:
  // The evaluation's sums as one device tensor [loss, top1, top5, samples] of doubles.
  torch::Tensor eval_totals() const;
  using StepFn = std::function<void(const torch::Tensor&, const torch::Tensor&, int64_t)>;
  struct Captured {
    StepGraph graph;
    torch::Tensor x, y;
    std::vector<int64_t> shape;  // the images' shape it was captured for
    int eager_steps = 0;
  };

  void run(const data::Batch& b, std::unique_ptr<Captured>& c, const StepFn& step);
  torch::Tensor prepare(const torch::Tensor& x) const;
  torch::Tensor forward(const torch::Tensor& x);
  void train_step(const torch::Tensor& x, const torch::Tensor& y, int64_t n);
  void eval_step(const torch::Tensor& x, const torch::Tensor& y);

  const TrainOptions& o_;
  torch::Device device_;
  models::Model model_;
  FlatSgd sgd_;
  std::optional<GradScaler> scaler_;
  std::optional<WeightEma> ema_;
  std::optional<BatchAugment> augment_;  // random erasing, mixup, cutmix
  std::unique_ptr<Captured> train_graph_, eval_graph_;
  data::PixelNormalizer normalize_;  // uint8 batches, NCHW
  bool input_nhwc_;
  torch::Tensor loss_sum_, eval_loss_sum_, top1_, top5_, evaluated_;
  std::vector<torch::Device> dp_devices_;
  Dist* dist_ = nullptr;
  std::unique_ptr<GradReducer> reducer_;
};

}  // namespace faster::train

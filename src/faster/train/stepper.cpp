// The steps.  Graphs: a full-size batch replays the graph captured for its shape (captured after a
// few eager steps, so cuDNN's plans and the allocator have settled); a new shape (the next
// resolution of a progressive-resizing run) captures anew; short batches run eagerly.
#include "faster/train/stepper.h"

#include <torch/torch.h>

#include <algorithm>

#include "faster/core/error.h"
#include "faster/models/registry.h"
#include "faster/train/parallel/data_parallel.h"

namespace faster::train {
namespace {

constexpr int kEagerStepsBeforeCapture = 3;

// Turns cuDNN benchmarking off for a scope (a short batch, whose shape is not worth tuning).
class CudnnBenchmarkOff {
 public:
  explicit CudnnBenchmarkOff(bool active)
      : active_(active && at::globalContext().benchmarkCuDNN()) {
    if (active_) at::globalContext().setBenchmarkCuDNN(false);
  }
  ~CudnnBenchmarkOff() {
    if (active_) at::globalContext().setBenchmarkCuDNN(true);
  }
  CudnnBenchmarkOff(const CudnnBenchmarkOff&) = delete;
  CudnnBenchmarkOff& operator=(const CudnnBenchmarkOff&) = delete;

 private:
  bool active_;
};

// The trainable parameters' roles for their weight decay (SgdOptions), by their names.
std::vector<ParamRole> trainable_roles(const models::Model& model) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& p : model->named_parameters())
    if (p.value().requires_grad()) named.emplace_back(p.key(), p.value());
  return param_roles(named);
}

}  // namespace

// A non-finite norm (an fp16 step the scaler skips) makes the factor 0 or NaN: that step is
// dropped by found_inf anyway.
void clip_grad_norm(torch::Tensor& flat_grad, double max_norm) {
  const auto factor = (max_norm / (flat_grad.norm() + 1e-6)).clamp_max(1.0);
  flat_grad.mul_(factor);
}

std::vector<torch::Tensor> trainable(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params)
    if (p.requires_grad()) out.push_back(p);
  return out;
}

torch::Tensor flip_tta(const std::function<torch::Tensor(const torch::Tensor&)>& forward,
                       const torch::Tensor& x) {
  // flip() keeps x's memory format (channels-last stays channels-last).
  return forward(x).add(forward(x.flip({3}))).mul_(0.5);
}

torch::Tensor tta_logits(const std::function<torch::Tensor(const torch::Tensor&)>& forward,
                         const torch::Tensor& x, bool flip, bool shifts) {
  const auto pass = [&](const torch::Tensor& t) {
    return flip ? flip_tta(forward, t) : forward(t);
  };
  if (!shifts) return pass(x);
  const int64_t h = x.size(2), w = x.size(3);
  const auto padded = torch::reflection_pad2d(x, {1, 1, 1, 1});
  const auto format = x.suggest_memory_format();
  // Window (0, 0) of the padded image moves the content one pixel down-right; (2, 2) up-left.
  const auto down_right = padded.narrow(2, 0, h).narrow(3, 0, w).contiguous(format);
  const auto up_left = padded.narrow(2, 2, h).narrow(3, 2, w).contiguous(format);
  return pass(x).mul_(0.5).add_(pass(down_right).add_(pass(up_left)).mul_(0.25));
}

Stepper::Stepper(models::Model model, const TrainOptions& o, torch::Device device, Dist* dist,
                 std::vector<torch::Device> dp_devices, const data::Normalization& norm,
                 int channels, bool input_nhwc)
    : o_(o),
      device_(device),
      model_(std::move(model)),
      sgd_(trainable(model_->parameters()), o.sgd, trainable_roles(model_)),
      input_nhwc_(input_nhwc),
      dp_devices_(std::move(dp_devices)),
      dist_(dist) {
  if (dist) {
    // Every rank starts from rank 0's weights, as DDP's constructor does.
    dist->broadcast_from_rank0(sgd_.flat_params());
    for (auto& p : model_->parameters())
      if (!p.requires_grad()) dist->broadcast_from_rank0(p);
    for (auto& b : model_->buffers()) dist->broadcast_from_rank0(b);
    reducer_ = std::make_unique<GradReducer>(*dist, sgd_.params(), sgd_.offsets(),
                                             static_cast<int64_t>(o.bucket_mb * (1 << 20)));
  }
  auto f = torch::TensorOptions().dtype(torch::kFloat).device(device);
  loss_sum_ = torch::zeros({}, f);
  eval_loss_sum_ = torch::zeros({}, f);
  top1_ = torch::zeros({}, f.dtype(torch::kLong));
  top5_ = torch::zeros({}, f.dtype(torch::kLong));
  evaluated_ = torch::zeros({}, f.dtype(torch::kLong));
  // uint8 batches normalized straight into autocast's type on a GPU where the model takes it (a
  // ResNet's first convolution would cast them anyway, and its stem pads them).
  const bool reduced_input = device.is_cuda() && o.precision != Precision::kFloat32 &&
                             models::takes_autocast_input(o.model);
  normalize_ = data::PixelNormalizer(
      norm, channels, data::Layout::kNCHW, device,
      reduced_input ? (o.precision == Precision::kBFloat16 ? torch::kBFloat16 : torch::kHalf)
                    : torch::kFloat32);
  if (o.precision == Precision::kFloat16) scaler_.emplace(device);
  if (o.ema_decay > 0)
    ema_.emplace(sgd_.flat_params(), model_->buffers(), o.ema_decay, o.ema_warmup);
  if (o.augment.any())
    augment_.emplace(o.augment, o.seed, dist ? dist->world().rank : 0, o.batch, device);
}

void Stepper::start_epoch() {
  loss_sum_.zero_();
  eval_loss_sum_.zero_();
  top1_.zero_();
  top5_.zero_();
  evaluated_.zero_();
}

void Stepper::train_batch(const data::Batch& b, int64_t step, int64_t epoch_step) {
  if (augment_) {
    const auto& s = b.images.sizes();  // [n, h, w, c] or [n, c, h, w]
    augment_->draw(step, b.size, input_nhwc_ ? s[1] : s[2], input_nhwc_ ? s[2] : s[3]);
  }
  run(b, train_graph_,
      [this](const torch::Tensor& x, const torch::Tensor& y, int64_t n) { train_step(x, y, n); });
  if (ema_ && epoch_step % o_.ema_every == 0) ema_->update();
}

void Stepper::eval_batch(const data::Batch& b) {
  run(b, eval_graph_,
      [this](const torch::Tensor& x, const torch::Tensor& y, int64_t) { eval_step(x, y); });
}

torch::Tensor Stepper::eval_totals() const {
  return torch::stack({eval_loss_sum_.to(torch::kDouble), top1_.to(torch::kDouble),
                       top5_.to(torch::kDouble), evaluated_.to(torch::kDouble)});
}

torch::Tensor Stepper::take_eval_totals() {
  auto taken = eval_totals();
  // In place: a captured evaluation graph adds into these very tensors.
  for (auto* t : {&eval_loss_sum_, &top1_, &top5_, &evaluated_}) t->zero_();
  return taken;
}

torch::Tensor Stepper::totals() const {
  return torch::cat({loss_sum_.to(torch::kDouble).reshape({1}), eval_totals()});
}

StepTotals::Scores StepTotals::scores() const {
  const double n = std::max(1.0, evaluated);
  return {eval_loss / n, 100.0 * top1 / n, 100.0 * top5 / n};
}

StepTotals Stepper::read(const torch::Tensor& totals) {
  const auto host = totals.to(torch::kCPU, torch::kDouble);  // one read of the device
  StepTotals t = read_eval(host.slice(0, 1, 5));
  t.train_loss = host[0].item<double>();
  return t;
}

StepTotals Stepper::read_eval(const torch::Tensor& eval_totals) {
  const auto t = eval_totals.to(torch::kCPU, torch::kDouble).contiguous();
  const double* v = t.data_ptr<double>();
  return {0, v[0], v[1], v[2], v[3]};
}

double Stepper::train_loss_so_far() const {
  return loss_sum_.item<double>();
}

void Stepper::swap_ema() {
  if (ema_) ema_->swap();
}

void Stepper::sync_buffers() {
  if (!dist_ || o_.sync_bn) return;  // SyncBatchNorm's statistics are the job's already
  for (auto& b : model_->buffers()) dist_->broadcast_from_rank0(b);
  if (!ema_) return;
  const auto averages = ema_->state();  // the flat weights (equal on every rank), then buffers
  for (size_t i = 1; i < averages.size(); ++i) dist_->broadcast_from_rank0(averages[i]);
}

// Full-size batches go through the graph once it is captured; warm-up and short batches run
// eagerly.
void Stepper::run(const data::Batch& b, std::unique_ptr<Captured>& c, const StepFn& step) {
  const bool full = b.images.size(0) == o_.batch;
  if (o_.cuda_graph && full) {
    if (!c || c->shape != b.images.sizes().vec()) {  // first full batch of this shape
      c = std::make_unique<Captured>();
      c->shape = b.images.sizes().vec();
    }
    if (c->graph.captured() || c->eager_steps >= kEagerStepsBeforeCapture) {
      if (!c->graph.captured()) {
        c->x = b.images.clone();
        c->y = b.labels.clone();
        c->graph.capture([&] { step(c->x, c->y, o_.batch); });
      } else {
        c->x.copy_(b.images, /*non_blocking=*/true);
        c->y.copy_(b.labels, /*non_blocking=*/true);
      }
      c->graph.replay();
      return;
    }
    ++c->eager_steps;
  }
  CudnnBenchmarkOff heuristics_only(o_.benchmarks_full_batch_only() && !full);
  step(b.images, b.labels, b.size);
}

void Stepper::warm_up(const data::Batch& train, const data::Batch& eval,
                      const std::function<void(const char*)>& mark) {
  FASTER_CHECK(train.images.size(0) == o_.batch && eval.images.size(0) == o_.batch,
               "warm_up takes full-size batches");
  torch::NoGradGuard no_grad;
  const auto flat = sgd_.flat_params().clone(), momentum = sgd_.momentum().clone();
  // Graphs and checkpoints hold these tensors' addresses: restore into them, never replace them.
  std::vector<torch::Tensor> state = model_->buffers();
  if (scaler_)
    for (const auto& t : scaler_->state()) state.push_back(t);
  if (ema_)  // a resumed run's average is not the weights (a fresh one's is)
    for (const auto& t : ema_->state()) state.push_back(t);
  std::vector<torch::Tensor> saved;
  for (const auto& t : state) saved.push_back(t.clone());
  const int64_t ema_updates = ema_ ? ema_->updates() : 0;
  const int runs = o_.cuda_graph ? kEagerStepsBeforeCapture + 1 : 1;  // the last one captures
  {
    torch::AutoGradMode grad(true);
    model_->train();
    sgd_.set_lr(0);
    const auto milestone = [&](const char* name) {
      if (!mark) return;
      if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
      mark(name);
    };
    for (int i = 0; i < runs; ++i) {
      train_batch(train);
      if (i == 0) milestone("first_step_s");
    }
    milestone("train_step_ready_s");
  }
  model_->eval();
  for (int i = 0; i < runs; ++i) eval_batch(eval);
  model_->train();
  sgd_.flat_params().copy_(flat);
  sgd_.momentum().copy_(momentum);
  for (size_t i = 0; i < state.size(); ++i) state[i].copy_(saved[i]);
  if (ema_) ema_->set_updates(ema_updates);
  start_epoch();
}

// uint8 pixels -> (x / 255 - mean) / std as float, in the model's memory format.
torch::Tensor Stepper::prepare(const torch::Tensor& x) const {
  auto t = input_nhwc_ ? x.permute({0, 3, 1, 2}) : x;  // NHWC data: an NCHW view, channels last
  if (t.scalar_type() == torch::kByte) t = normalize_(t);
  return o_.channels_last ? t.contiguous(torch::MemoryFormat::ChannelsLast) : t.contiguous();
}

torch::Tensor Stepper::forward(const torch::Tensor& x) {
  if (dp_devices_.size() > 1) return data_parallel_forward(model_, x, dp_devices_, o_.precision);
  return model_.forward(x);
}

void Stepper::train_step(const torch::Tensor& x, const torch::Tensor& y, int64_t n) {
  namespace F = torch::nn::functional;
  sgd_.zero_grad();
  torch::Tensor loss;
  {
    AutocastScope autocast(device_.type(), o_.precision, /*cache=*/!o_.cuda_graph);
    auto input = prepare(x);
    if (augment_) input = augment_->images(input);
    const auto out = forward(input);
    // Mixed images score against their mixed one-hot labels (label smoothing applies on top).
    loss =
        F::cross_entropy(out, augment_ && augment_->mixes() ? augment_->targets(y, out.size(1)) : y,
                         F::CrossEntropyFuncOptions().label_smoothing(o_.label_smoothing));
  }
  if (reducer_) reducer_->begin();
  (scaler_ ? scaler_->scale(loss) : loss).backward();
  // With DDP the gradient comes back averaged over the ranks (all-reduced during backward).
  auto grad = reducer_ ? reducer_->finish() : sgd_.flat_grad();
  if (scaler_) {
    auto found_inf = scaler_->unscale_(grad);
    if (o_.clip_grad_norm > 0) clip_grad_norm(grad, o_.clip_grad_norm);
    sgd_.step(grad, found_inf);
    scaler_->update(found_inf);
  } else {
    if (o_.clip_grad_norm > 0) clip_grad_norm(grad, o_.clip_grad_norm);
    sgd_.step(grad);
  }
  loss_sum_.add_(loss.detach().to(torch::kFloat) * n);
}

void Stepper::eval_step(const torch::Tensor& x, const torch::Tensor& y) {
  namespace F = torch::nn::functional;
  torch::NoGradGuard no_grad;
  torch::Tensor out;
  {
    AutocastScope autocast(device_.type(), o_.precision, /*cache=*/!o_.cuda_graph);
    out = tta_logits([this](const torch::Tensor& t) { return forward(t); }, prepare(x), o_.tta,
                     o_.tta_shifts);
  }
  // Padding rows (and a bad image's, in evaluation) carry kPadLabel: no prediction equals it, the
  // loss ignores it, and it is not counted among the evaluated.
  const auto best = std::get<1>(out.topk(std::min<int64_t>(5, out.size(1)), 1));
  const auto hit = best.eq(y.unsqueeze(1));
  top1_.add_(hit.select(1, 0).sum());
  top5_.add_(hit.any(1).sum());
  evaluated_.add_(y.ne(data::kPadLabel).sum());
  eval_loss_sum_.add_(F::cross_entropy(out.to(torch::kFloat), y,
                                       F::CrossEntropyFuncOptions().reduction(torch::kSum)));
}

}  // namespace faster::train

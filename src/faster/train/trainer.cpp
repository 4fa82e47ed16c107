// The trainer.  The step never reads a device value on the host: losses and correct counts are
// accumulated in device tensors and read once per epoch, so the GPU is never left waiting.
#include "faster/train/trainer.h"

#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "faster/core/error.h"
#include "faster/core/gpu_info.h"
#include "faster/core/log.h"
#include "faster/core/progress.h"
#include "faster/core/timer.h"
#include "faster/data/loader/image_loader.h"
#include "faster/data/sources/array_source.h"
#include "faster/models/registry.h"
#include "faster/train/checkpoint.h"
#include "faster/train/parallel/data_parallel.h"
#include "faster/train/parallel/dist.h"
#include "faster/train/parallel/grad_reducer.h"
#include "faster/train/step_graph.h"

namespace faster::train {
namespace fs = std::filesystem;

namespace {
// An epoch's metrics, as the report and the metrics log write them.
nlohmann::json epoch_json(const EpochStats& e) {
  return {{"epoch", e.epoch},
          {"train_loss", e.train_loss},
          {"test_loss", e.test_loss},
          {"test_accuracy", e.test_accuracy},
          {"seconds", e.seconds}};
}
}  // namespace

nlohmann::json TrainReport::to_json() const {
  nlohmann::json j;
  j["options"] = options;
  j["device"] = device;
  j["total_seconds"] = total_seconds;
  j["train_images_per_second"] = train_images_per_second;
  j["epochs"] = nlohmann::json::array();
  for (const auto& e : epochs) {
    auto je = epoch_json(e);
    je["train_images"] = e.train_images;
    j["epochs"].push_back(je);
  }
  j["final_test_accuracy"] = epochs.empty() ? 0.0 : epochs.back().test_accuracy;
  return j;
}

namespace {

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

// One training run's state: the model, optimizer, scaler, device-side accumulators and graphs.
class Stepper {
 public:
  Stepper(models::Model model, const TrainOptions& o, torch::Device device, Dist* dist,
          std::vector<torch::Device> dp_devices)
      : o_(o), device_(device), model_(std::move(model)),
        sgd_(model_->parameters(), o.sgd),
        dp_devices_(std::move(dp_devices)) {
    if (dist) {
      // Every rank starts from rank 0's weights, as DDP's constructor does.
      dist->broadcast_from_rank0(sgd_.flat_params());
      reducer_ = std::make_unique<GradReducer>(*dist, sgd_.params(), sgd_.offsets(),
                                               static_cast<int64_t>(o.bucket_mb * (1 << 20)));
    }
    auto f = torch::TensorOptions().dtype(torch::kFloat).device(device);
    loss_sum_ = torch::zeros({}, f);
    test_loss_sum_ = torch::zeros({}, f);
    correct_ = torch::zeros({}, f.dtype(torch::kLong));
    if (o.precision == Precision::kFloat16) scaler_.emplace(device);
  }

  models::Model& model() { return model_; }

  void start_epoch() {
    loss_sum_.zero_();
    test_loss_sum_.zero_();
    correct_.zero_();
  }

  void train_batch(const data::Batch& b) {
    run(b, train_graph_, train_x_, train_y_, eager_train_steps_,
        [this](const torch::Tensor& x, const torch::Tensor& y, int64_t n) { train_step(x, y, n); });
  }

  void eval_batch(const data::Batch& b) {
    run(b, eval_graph_, eval_x_, eval_y_, eager_eval_steps_,
        [this](const torch::Tensor& x, const torch::Tensor& y, int64_t) { eval_step(x, y); });
  }

  // The epoch's accumulators [train loss sum, test loss sum, correct] as one device tensor.
  torch::Tensor totals() const {
    return torch::stack({loss_sum_.to(torch::kDouble), test_loss_sum_.to(torch::kDouble),
                         correct_.to(torch::kDouble)});
  }

 private:
  using StepFn = std::function<void(const torch::Tensor&, const torch::Tensor&, int64_t)>;
  static constexpr int kEagerStepsBeforeCapture = 3;

  // Full-size batches go through the graph once it is captured; warm-up and short batches run eagerly.
  void run(const data::Batch& b, StepGraph& graph, torch::Tensor& sx, torch::Tensor& sy,
           int& eager_steps, const StepFn& step) {
    const bool static_shape = o_.cuda_graph && b.images.size(0) == o_.batch;
    if (static_shape && (graph.captured() || eager_steps >= kEagerStepsBeforeCapture)) {
      if (!graph.captured()) {
        sx = b.images.clone();
        sy = b.labels.clone();
        graph.capture([&] { step(sx, sy, o_.batch); });
      } else {
        sx.copy_(b.images, /*non_blocking=*/true);
        sy.copy_(b.labels, /*non_blocking=*/true);
      }
      graph.replay();
      return;
    }
    CudnnBenchmarkOff heuristics_only(o_.benchmarks_full_batch_only() &&
                                      b.images.size(0) != o_.batch);
    step(b.images, b.labels, b.size);
    ++eager_steps;
  }

  torch::Tensor prepare(const torch::Tensor& x) const {
    auto f = x.scalar_type() == torch::kByte ? x.to(torch::kFloat).div_(255) : x;
    return o_.channels_last ? f.contiguous(torch::MemoryFormat::ChannelsLast) : f;
  }

  torch::Tensor forward(const torch::Tensor& x) {
    if (dp_devices_.size() > 1) return data_parallel_forward(model_, x, dp_devices_, o_.precision);
    return model_.forward(x);
  }

  void train_step(const torch::Tensor& x, const torch::Tensor& y, int64_t n) {
    sgd_.zero_grad();
    torch::Tensor loss;
    {
      AutocastScope autocast(device_.type(), o_.precision, /*cache=*/!o_.cuda_graph);
      loss = torch::nn::functional::cross_entropy(forward(prepare(x)), y);
    }
    if (reducer_) reducer_->begin();
    (scaler_ ? scaler_->scale(loss) : loss).backward();
    // With DDP the gradient comes back averaged over the ranks (all-reduced during backward).
    auto grad = reducer_ ? reducer_->finish() : sgd_.flat_grad();
    if (scaler_) {
      auto found_inf = scaler_->unscale_(grad);
      sgd_.step(grad, found_inf);
      scaler_->update(found_inf);
    } else {
      sgd_.step(grad);
    }
    loss_sum_.add_(loss.detach().to(torch::kFloat) * n);
  }

  void eval_step(const torch::Tensor& x, const torch::Tensor& y) {
    torch::NoGradGuard no_grad;
    torch::Tensor out;
    {
      AutocastScope autocast(device_.type(), o_.precision, /*cache=*/!o_.cuda_graph);
      out = forward(prepare(x));
    }
    correct_.add_(out.argmax(1).eq(y).sum());
    namespace F = torch::nn::functional;
    test_loss_sum_.add_(F::cross_entropy(out.to(torch::kFloat), y,
                                         F::CrossEntropyFuncOptions().reduction(torch::kSum)));
  }

  const TrainOptions& o_;
  torch::Device device_;
  models::Model model_;
  FlatSgd sgd_;
  std::optional<GradScaler> scaler_;
  StepGraph train_graph_, eval_graph_;
  torch::Tensor train_x_, train_y_, eval_x_, eval_y_;
  int eager_train_steps_ = 0, eager_eval_steps_ = 0;
  torch::Tensor loss_sum_, test_loss_sum_, correct_;
  std::vector<torch::Device> dp_devices_;
  std::unique_ptr<GradReducer> reducer_;
};

void to_channels_last(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.parameters())
    if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
}

// Small datasets: the device-resident loader, or the image loader over the arrays (worker threads,
// pinned ring, side-stream copy), both handing out uint8 images that the step normalizes.
std::unique_ptr<data::Loader> make_loader(const TrainOptions& o,
                                          const std::shared_ptr<const data::ArrayDataset>& d,
                                          torch::Device device, const WorldInfo& w, bool train) {
  data::LoaderOptions lo;
  lo.batch = static_cast<int>(o.batch);
  lo.sampler.seed = o.seed;
  lo.sampler.shuffle = train;
  lo.sampler.rank = w.rank;
  lo.sampler.world = w.world;
  lo.sampler.even = train;  // test shards need not be equal, and must not repeat samples
  // Static eval shapes for graphs and for a cuDNN benchmark of the full batch only; padding rows
  // are ignored.
  const bool pad = o.cuda_graph || o.benchmarks_full_batch_only();
  lo.last_batch = train ? o.last_batch : pad ? data::LastBatch::kPad : data::LastBatch::kKeep;
  lo.workers = o.workers;
  lo.device = device;
  lo.transform = data::Transform::kNone;
  lo.output = data::OutputType::kUint8;
  lo.normalize_on_device = false;
  if (o.loader == LoaderKind::kDevice) return data::make_device_loader(*d, lo);
  return std::make_unique<data::ImageLoader>(std::make_shared<data::ArraySource>(d), lo);
}

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& dir) {
    if (dir.empty()) return;
    fs::create_directories(dir);
    out_.open(fs::path(dir) / "metrics.jsonl", std::ios::app);
    if (!out_) FASTER_THROW("--log-dir ", dir, ": cannot write metrics.jsonl");
  }
  void write(const nlohmann::json& j) {
    if (out_.is_open()) out_ << j.dump() << std::endl;
  }

 private:
  std::ofstream out_;
};

}  // namespace

namespace {

// The process's place in a DDP job and its device (cuda:LOCAL_RANK); a world of one otherwise.
std::unique_ptr<Dist> join_job(const TrainOptions& o, WorldInfo& world, torch::Device& device) {
  if (o.parallel != Parallel::kDdp) return nullptr;
  world = world_from_env();
  if (device.is_cuda()) {
    const int n = cuda_device_count();
    if (world.local_rank >= n)
      throw Error("rank " + std::to_string(world.rank) + " has local rank " +
                      std::to_string(world.local_rank) + " but only " + std::to_string(n) +
                      " CUDA device(s) are visible",
                  "start at most " + std::to_string(n) +
                      " ranks per node (--nproc, torchrun --nproc-per-node)");
    device = torch::Device(torch::kCUDA, world.local_rank);
    c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).setDevice(device);
  }
  return Dist::connect(world, device, std::chrono::seconds(o.dist_timeout_s));
}

std::vector<torch::Device> dp_devices(const TrainOptions& o) {
  std::vector<torch::Device> devices;
  if (o.parallel != Parallel::kDp) return devices;
  const int n = o.gpus > 0 ? o.gpus : cuda_device_count();
  for (int i = 0; i < n; ++i) devices.emplace_back(torch::kCUDA, i);
  return devices;
}

}  // namespace

TrainReport train(const TrainOptions& o, const std::function<void(const EpochStats&)>& on_epoch) {
  validate(o);
  auto device = resolve_device(o.device);
  WorldInfo world;
  auto dist = join_job(o, world, device);
  const bool is_main = world.is_main();
  auto dataset = data::load_small_dataset(o.data);
  dataset.train.truncate(o.train_limit);
  dataset.test.truncate(o.test_limit);
  const auto train_set = std::make_shared<const data::ArrayDataset>(std::move(dataset.train));
  const auto test_set = std::make_shared<const data::ArrayDataset>(std::move(dataset.test));

  models::ModelOptions mo;
  mo.in_channels = train_set->channels;
  mo.blocks = o.blocks;
  mo.filters = o.filters;
  mo.norm = o.sync_bn ? models::Norm::kSync : o.norm;
  mo.fused = o.fused;
  if (o.sync_bn) mo.sync_all_reduce = [d = dist.get()](torch::Tensor& t) { d->all_reduce_sum(t); };
  const int min_side = models::min_input_size(mo);
  if (std::min(train_set->height, train_set->width) < min_side)
    FASTER_THROW(mo.name, " needs images of at least ", min_side, "x", min_side, "; ",
                 train_set->name, " has ", train_set->height, "x", train_set->width);
  torch::manual_seed(o.seed);
  at::globalContext().setBenchmarkCuDNN(o.cudnn_benchmark);
  at::globalContext().setBenchmarkLimitCuDNN(o.cudnn_benchmark_limit);
  auto model = models::make_model(mo);
  model->to(device);
  if (o.channels_last) to_channels_last(model.module());

  MetricsLog log(is_main ? o.log_dir : std::string());
  TrainReport report;
  report.options = options_json(o);
  report.options["world_size"] = world.world;
  report.device = device.str();
  if (dist) report.device += " x" + std::to_string(world.world) + " ranks (" + dist->backend() + ")";
  const auto dp = dp_devices(o);
  if (o.parallel == Parallel::kDp) report.device += " x" + std::to_string(dp.size()) + " GPUs (DataParallel)";
  log.write({{"event", "start"}, {"options", report.options}, {"device", report.device}});

  SideStreamScope side_stream(o.cuda_graph ? device : torch::Device(torch::kCPU));
  // Model, optimizer and DDP set-up (its broadcast starts NCCL) stay outside the timed region, as
  // in the peer, whose clock starts once the model, optimizer and DDP wrapper exist.
  Stepper stepper(model, o, device, dist.get(), dp);
  Timer total;  // from here: data to the device, all epochs, all tests
  auto train_loader = make_loader(o, train_set, device, world, true);
  auto test_loader = make_loader(o, test_set, device, world, false);
  int64_t train_images = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    Timer timer;
    stepper.start_epoch();
    stepper.model()->train();
    train_loader->start_epoch(epoch);
    {
      std::optional<Progress> bar;
      if (is_main)
        bar.emplace("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(o.epochs),
                    train_loader->batches_per_epoch() + test_loader->batches_per_epoch(), "batch");
      while (auto b = train_loader->next()) {
        stepper.train_batch(*b);
        if (bar) bar->add();
      }
      stepper.model()->eval();
      test_loader->start_epoch(0);
      while (auto b = test_loader->next()) {
        stepper.eval_batch(*b);
        if (bar) bar->add();
      }
    }
    auto totals = stepper.totals();
    if (dist) dist->all_reduce_sum(totals);
    totals = totals.cpu();  // the epoch's one host sync
    const double* t = totals.data_ptr<double>();
    EpochStats e;
    e.epoch = epoch + 1;
    e.train_images = train_loader->samples_per_epoch() * world.world;
    e.train_loss = t[0] / e.train_images;
    e.test_loss = t[1] / test_set->n;
    e.test_accuracy = 100.0 * t[2] / test_set->n;
    e.seconds = timer.seconds();
    train_images += e.train_images;
    report.epochs.push_back(e);
    auto entry = epoch_json(e);
    entry["event"] = "epoch";
    log.write(entry);
    if (on_epoch && is_main) on_epoch(e);
  }
  report.total_seconds = total.seconds();
  report.train_images_per_second = train_images / report.total_seconds;
  log.write({{"event", "done"}, {"result", report.to_json()}});
  if (!o.save.empty() && is_main) save_state_dict(stepper.model().module(), o.save);
  return report;
}

}  // namespace faster::train

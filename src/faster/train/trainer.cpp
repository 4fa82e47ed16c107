// The trainer: a training run as its steps, each a function below (the epochs: epoch.cpp; the
// job: job.cpp; --resume: resume.cpp; the loader plan: data_plan.cpp; the reports: report.cpp).
#include "faster/train/trainer.h"

#include <torch/torch.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <set>

#include "faster/core/early_context.h"
#include "faster/core/error.h"
#include "faster/core/log.h"
#include "faster/core/memory.h"
#include "faster/core/process_clock.h"
#include "faster/core/timer.h"
#include "faster/tools/file_io.h"
#include "faster/train/device_warm_up.h"
#include "faster/train/run.h"

namespace faster::train {
namespace fs = std::filesystem;
namespace {

// A CPU run that cannot fit in memory is refused before it starts: the kernel's out-of-memory
// killer would end it without a word.  `width` x `height`: a training image's; `ranks`: processes
// on this machine, each with its own model and batch.
void check_cpu_memory(const std::string& model, int64_t batch, int64_t width, int64_t height,
                      int ranks) {
  const int64_t pixels = width * height;
  const auto m = models::cpu_train_memory(model);
  const int64_t available = available_memory_bytes();
  if (m.per_image_224_bytes == 0 || available < 0) return;  // unknown: nothing to go by
  const double per_image = static_cast<double>(m.per_image_224_bytes) * pixels / (224.0 * 224.0);
  const double need = ranks * (static_cast<double>(m.fixed_bytes) + per_image * batch);
  // A margin for what the table leaves out (the loader's ring, the allocator's slack): ResNet-50
  // at batch 200, estimated at 22.7 GB against 23 GB available, was killed.
  const double usable = 0.85 * static_cast<double>(available);
  if (need <= usable) return;
  const auto amount = [](double bytes, double unit, const char* name) {
    char s[32];
    std::snprintf(s, sizeof s, "%.1f %s", bytes / unit, name);
    return std::string(s);
  };
  const auto gb = [&](double bytes) { return amount(bytes, 1e9, "GB"); };
  const int64_t fits =
      static_cast<int64_t>((usable / ranks - static_cast<double>(m.fixed_bytes)) / per_image);
  throw Error(model + ", batch " + std::to_string(batch) + " at " + std::to_string(width) + "x" +
                  std::to_string(height) +
                  (ranks > 1 ? ", " + std::to_string(ranks) + " ranks" : "") + ", needs about " +
                  gb(need) + " of memory to train on the CPU (" + amount(per_image, 1e6, "MB") +
                  " an image), but " + gb(static_cast<double>(available)) + " are available (" +
                  gb(usable) + " of it counted on)",
              fits >= 1 ? "--batch " + std::to_string(fits) + " fits, or a smaller --res"
                        : "a smaller --res, or a GPU");
}

// A full-size batch of `loader`'s first epoch, for the step warm-up (its sampler order, so no
// state changes: the epoch is restarted by the loop).
std::optional<data::Batch> first_full_batch(data::Loader& loader, int64_t batch) {
  loader.start_epoch(0);
  auto b = loader.next();
  if (!b || b->images.size(0) != batch) return std::nullopt;
  b->images = b->images.clone();
  b->labels = b->labels.clone();
  return b;
}

// The set-up's clock starts; cuDNN's flags are set before any convolution runs (the device
// warm-up's on its thread included).
Setup start_setup(const TrainOptions& o) {
  Setup setup;
  setup.marks = {{"start_s", process_seconds()}};
  if (main_entered_seconds() > 0) setup.marks["main_s"] = main_entered_seconds();
  if (const double ago = finish_early_context(); ago >= 0)
    setup.marks["context_s"] = process_seconds() - ago;
  at::globalContext().setBenchmarkCuDNN(o.cudnn_benchmark);
  at::globalContext().setBenchmarkLimitCuDNN(o.cudnn_benchmark_limit);
  return setup;
}

// The data, read (and unzipped) on a thread while CUDA, cuDNN and cuBLAS start on another, with
// --prewarm: the data decide the model copy's warm-up (build_run), which need not wait for the
// libraries.
TrainingData open_data(const TrainOptions& o, torch::Device device, Setup& setup) {
  double data_read_at = 0;  // before the futures: the reading thread writes it
  const auto read_data = [&o, &data_read_at] {
    auto read = open_training_data(o.data, o.val_data, o.train_limit, o.test_limit);
    data_read_at = process_seconds();
    return read;
  };
  std::future<TrainingData> reading;
  if (o.prewarm) {
    reading = std::async(std::launch::async, read_data);
    setup.device_warm = std::async(
        std::launch::async, [device, precision = o.precision, channels_last = o.channels_last] {
          warm_up_device(device, precision, channels_last);
          return process_seconds();
        });
  }
  auto d = o.prewarm ? reading.get() : read_data();
  setup.marks["data_read_s"] = data_read_at;
  return d;
}

// The loader plan (data_plan.h), whose settled options the run takes and records; what follows
// from them (test-time flips, the rate per 256 images).
DataPlan plan_run_data(TrainOptions& o, const TrainingData& d, const Job& job) {
  if (!as_stored_on_device(o, d) && is_speedrun(o.recipe))
    throw Error(std::string("--recipe ") + enum_name(kRecipeNames, o.recipe) +
                    " (speednet's) trains a small " +
                    "dataset as stored on the device: Fashion-MNIST, MNIST or CIFAR-10 files, " +
                    "--loader device, no --res",
                "for JPEG folders or LMDB, --recipe imagenet (a ResNet) or --recipe cpu");
  const auto plan =
      plan_data(o, d, models::input_channels(o.model, d.channels()), job.device, job.world);
  static_cast<DataOptions&>(o) = plan.options;
  if (o.alternate_flips && plan.as_stored_on_device && o.flip == Flip::kOff && job.is_main())
    log::warn("--alternate-flips: ", o.data,
              " is not flipped (--flip auto flips Fashion-MNIST and CIFAR-10 only): nothing to "
              "alternate");
  // A mirrored test image is only evidence where training flips.
  o.tta = o.tta && o.flip == Flip::kOn;
  if (o.lr_per_256 > 0)
    o.sgd.lr = o.lr_per_256 * static_cast<double>(o.batch * job.world.world) / 256;
  return plan;
}

// The model's options, checked against the images' sides and, on a CPU, the memory.
models::ModelOptions model_options(TrainOptions& o, const TrainingData& d, const DataPlan& plan,
                                   const Job& job) {
  models::ModelOptions mo;
  mo.name = o.model;
  mo.classes = static_cast<int>(d.classes.size());
  // ResNets take RGB (a gray array is repeated into 3 channels, as a gray JPEG decodes).
  mo.in_channels = models::input_channels(o.model, d.channels());
  mo.blocks = o.blocks;
  mo.filters = o.filters;
  if (o.stem_dims == TrainOptions::kStemDimsAuto) o.stem_dims = mo.in_channels == 1 ? 8 : 0;
  mo.stem_dims = o.stem_dims;
  mo.norm = o.sync_bn ? models::Norm::kSync : o.norm;
  mo.fused = o.fused;
  if (o.sync_bn)
    mo.sync_all_reduce = [dd = job.dist.get()](torch::Tensor& t) { dd->all_reduce_sum(t); };
  const int min_side = models::min_input_size(mo);
  const int smallest_res =
      d.arrays() && o.res.res == 0
          ? std::min(d.train_arrays->height, d.train_arrays->width)
          : std::min(o.res.end_res > 0 ? std::min(o.res.res, o.res.end_res) : o.res.res,
                     plan.val_res > 0 ? plan.val_res : o.res.res);
  if (smallest_res < min_side)
    FASTER_THROW(mo.name, " needs images of at least ", min_side, "x", min_side, "; this run has ",
                 smallest_res, "x", smallest_res);
  if (job.device.is_cpu()) {
    const bool as_stored = d.arrays() && o.res.res == 0;
    const int64_t side = std::max(o.res.res, o.res.end_res);
    check_cpu_memory(mo.name, o.batch, as_stored ? d.train_arrays->width : side,
                     as_stored ? d.train_arrays->height : side, job.world.local_world);
  }
  return mo;
}

// --weights: the model starts from them (every rank reads the same file), its classifier fresh,
// as initialised, where they classify another number of classes (fine-tuning on one's own
// classes).  --resume replaces them later.
void start_from_weights(const std::string& weights, Run& run) {
  const std::string file = weights_file(weights);
  const SavedModel saved = read_saved_model(file);
  if (saved.mo.name != run.mo.name)
    FASTER_THROW("--weights ", weights, " holds ", saved.mo.name, " weights, not --model ",
                 run.mo.name, "'s");
  std::set<std::string> fresh;
  run.from_weights = weights;
  if (saved.mo.classes != run.mo.classes) {
    fresh = {"fc.weight", "fc.bias"};
    run.from_weights +=
        " (their " + std::to_string(saved.mo.classes) + "-class fc left out: fresh)";
  }
  copy_state_dict(saved.dict, saved.prefix, run.model.module(), file, fresh);
}

// The run's model, seeded, whitened where asked.  --prewarm on one GPU per process, a small
// dataset as stored: the first step's kernels load on a copy of the model while the rest is built
// (the copy is made before the seed is set, and neither warm-up draws random numbers, so the run's
// random streams stay as they were; its BatchNorm is never synchronised: a collective on that
// thread would interleave with this one's).
Run build_model_step(const TrainOptions& o, const TrainingData& d, const DataPlan& plan,
                     const Job& job, models::ModelOptions mo, Setup& setup) {
  if (o.prewarm && job.device.is_cuda() && !plan.crops && o.parallel != Parallel::kDp) {
    models::ModelOptions plain = mo;
    if (plain.norm == models::Norm::kSync) plain.norm = models::Norm::kBatch;
    plain.sync_all_reduce = nullptr;
    const auto& a = *d.train_arrays;
    setup.model_warm = warm_up_model(build_model(plain, job.device, o.channels_last),
                                     {o.batch, mo.in_channels, a.height, a.width}, o, job.device);
  }
  torch::manual_seed(o.seed);
  Run run;
  run.model = build_model(mo, job.device, o.channels_last);
  run.mo = std::move(mo);
  if (o.whiten) {
    if (!d.arrays()) FASTER_THROW("--whiten needs a small array dataset");
    const auto set = init_from_training_images(run.model, *d.train_arrays, o.model, job.device);
    if (set.empty()) FASTER_THROW("--whiten: ", o.model, " has no layer initialised from the data");
    if (o.freeze_whitening)
      for (auto p : set) p.requires_grad_(false);
  }
  if (!o.weights.empty()) start_from_weights(o.weights, run);
  return run;
}

// The run's options as its report, checkpoints and weights record them.
nlohmann::json run_options(const TrainOptions& o, const Job& job) {
  auto options = options_json(o);
  options["world_size"] = job.world.world;
  options["local_world_size"] = job.world.local_world;  // ranks on one machine
  return options;
}

// What the report says of the run before its first epoch.
TrainReport start_report(const TrainOptions& o, const TrainingData& d, const Job& job,
                         const Run& run) {
  TrainReport report;
  report.options = run_options(o, job);
  report.model = o.model;
  report.data = d.train->describe();
  report.classes = run.mo.classes;
  report.device = job.device.str();
  if (job.dist)
    report.device +=
        " x" + std::to_string(job.world.world) + " ranks (" + job.dist->backend() + ")";
  if (o.parallel == Parallel::kDp)
    report.device += " x" + std::to_string(job.dp.size()) + " GPUs (DataParallel)";
  report.is_main = job.is_main();
  return report;
}

// The stepper (model, optimizer, scaler, average, DDP's reducer) and what a checkpoint holds.
// Model, optimizer and DDP set-up (its broadcast starts NCCL) stay outside the timed region, as
// in the peer, whose clock starts once the model, optimizer and DDP wrapper exist.
void build_stepper(const TrainOptions& o, const DataPlan& plan, Job& job, Run& run) {
  run.stepper = std::make_unique<Stepper>(run.model, o, job.device, job.dist.get(), job.dp,
                                          models::input_normalization(o.model), run.mo.in_channels,
                                          plan.layout == data::Layout::kNHWC);
  auto& stepper = *run.stepper;
  run.parts = {{"sgd.", {stepper.sgd().momentum()}}};
  if (stepper.ema()) run.parts.push_back({"ema.", stepper.ema()->state()});
  if (stepper.scaler()) run.parts.push_back({"scaler.", stepper.scaler()->state()});
  run.identity = {
      {"model", o.model}, {"classes", run.mo.classes}, {"in_channels", run.mo.in_channels}};
  // A frozen stem has no optimizer state: a checkpoint of either kind fits only its own kind.
  if (o.freeze_whitening) run.identity["freeze_whitening"] = true;
}

// The metrics log's first event and the caller's first line (rank 0).
void announce(const TrainOptions& o, const TrainingData& d, const Job& job, const Run& run,
              const TrainReport& report, MetricsLog& log, const TrainCallbacks& callbacks) {
  log.write({{"event", "start"},
             {"options", report.options},
             {"device", report.device},
             {"start_epoch", report.start_epoch}});
  if (!callbacks.on_start || !report.is_main) return;
  std::string line = o.model + " (" + std::to_string(report.classes) + " classes) on " +
                     report.data + ", " + report.device;
  if (job.device.is_cpu()) {
    const int threads = at::get_num_threads();
    line += " (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
  }
  if (report.start_epoch > 0)
    line += ", resuming after epoch " + std::to_string(report.start_epoch);
  else if (!run.from_weights.empty())
    line += ", from " + run.from_weights;
  if (!d.val) line += "; no val split: nothing is tested";
  callbacks.on_start(line);
}

// The training loader and, with a val split, the validation loader.  Batches stay uint8 (the step
// normalizes, inside its CUDA graph); test batches are padded to full size for static shapes
// (graphs, a cuDNN benchmark of the full batch only), padding rows ignored.
Loaders make_loaders(const TrainOptions& o, const TrainingData& d, const DataPlan& plan,
                     const Job& job) {
  Loaders l;
  auto lo = loader_options(plan, d, job.device, job.world, true);
  lo.normalize_on_device = false;
  const int64_t n = data::Sampler(d.train->size(), lo.sampler).per_rank();
  // BatchNorm cannot take batch statistics of one image (LibTorch refuses one value per channel,
  // as a ResNet's last stage has at 32 px): a last batch of one image is left out instead.
  if (lo.last_batch == data::LastBatch::kKeep && n > 1 && n % o.batch == 1) {
    lo.last_batch = data::LastBatch::kDrop;
    if (job.is_main())
      log::info("the last training batch of each epoch would hold 1 image, too few for ",
                "BatchNorm: it is left out (another image each epoch, as the order is shuffled)");
  }
  l.train = make_loader(plan, d, lo, true);
  if (d.val) {
    auto vo = loader_options(plan, d, job.device, job.world, false);
    vo.normalize_on_device = false;
    if (o.cuda_graph || o.benchmarks_full_batch_only()) vo.last_batch = data::LastBatch::kPad;
    l.val = make_loader(plan, d, vo, false);
  }
  l.train_images = dynamic_cast<data::ImageLoader*>(l.train.get());
  l.val_images = dynamic_cast<data::ImageLoader*>(l.val.get());
  return l;
}

// The end of the set-up: --prewarm's threads joined, and every step shape run once (graphs
// captured) before epoch 1.
void finish_setup(const TrainOptions& o, Job& job, Run& run, Loaders& loaders, Setup& setup) {
  setup.marks["loaders_ready_s"] = process_seconds();
  if (setup.device_warm.valid()) setup.marks["device_ready_s"] = setup.device_warm.get();
  if (setup.model_warm.valid()) {
    if (const std::string failed = setup.model_warm.get(); !failed.empty() && job.is_main())
      log::warn("--prewarm: the model's warm-up failed (", failed,
                "); the first step loads its kernels itself");
    setup.marks["model_warm_s"] = process_seconds();
  }
  if (!o.prewarm || !loaders.val) return;
  const auto tb = first_full_batch(*loaders.train, o.batch);
  const auto eb = first_full_batch(*loaders.val, o.batch);
  bool warm = tb && eb;
  // All ranks or none: the warm-up's training steps all-reduce (shards differ).
  if (job.dist) warm = every_rank(*job.dist, warm, job.device);
  if (warm)
    run.stepper->warm_up(*tb, *eb,
                         [&setup](const char* name) { setup.marks[name] = process_seconds(); });
  if (job.device.is_cuda()) torch::cuda::synchronize(job.device.index());
  setup.marks["steps_ready_s"] = process_seconds();
}

// Rank 0 refuses outputs that are not this run's own (check_outputs), then makes their folders;
// every rank learns whether it refused, so a refusal stops them all alike.
void claim_outputs(const TrainOptions& o, const Job& job) {
  std::exception_ptr refused;
  if (job.is_main()) {
    try {
      check_outputs(o, run_options(o, job));
      for (const auto& [flag, path] : {std::pair{"--save", &o.save},
                                       {"--checkpoint", &o.checkpoint},
                                       {"--json", &o.json},
                                       {"--profile", &o.profile}})
        if (!path->empty()) tools::make_parent_folders(*path, flag);
      if (!o.output_dir.empty())  // torchvision's train.py makes it too
        tools::make_parent_folders((fs::path(o.output_dir) / "checkpoint.pth").string(),
                                   "--output-dir");
    } catch (...) {
      refused = std::current_exception();
    }
  }
  if (job.dist && !every_rank(*job.dist, !refused, job.device) && !refused)
    throw Error("rank 0 refused the run's outputs (its message says why)");
  if (refused) std::rethrow_exception(refused);
}

// The report's totals, the log's last event and --save (the weights that were evaluated, with
// what eval needs to score them as the run did: run_meta's record, the input's normalization).
void finish(const TrainOptions& o, const TrainingData& d, Run& run, TrainReport& report,
            const EpochLoop& epochs, const Timer& total, MetricsLog& log) {
  report.total_seconds = total.seconds();
  // The clock stops at the last test pass (its accuracy read back), not at the report's writing.
  report.process_seconds =
      report.epochs.empty() ? process_seconds() : report.epochs.back().process_seconds;
  report.train_images_per_second = epochs.train_images_per_second();
  log.write({{"event", "done"}, {"result", report.to_json()}});
  if (o.save.empty() || !report.is_main) return;
  auto meta = run_meta(o, d, run, report);
  meta["format"] = "faster weights";
  meta["average"] = run.stepper->ema() != nullptr;  // of the weights (--ema): what was tested
  meta["epochs_done"] = report.run_epochs().empty() ? 0 : report.run_epochs().back().epoch;
  const auto norm = models::input_normalization(o.model);
  const int channels = run.mo.in_channels;
  meta["mean"] = std::vector<float>(norm.mean, norm.mean + channels);
  meta["std"] = std::vector<float>(norm.std, norm.std + channels);
  run.stepper->swap_ema();
  save_state_dict(run.model.module(), o.save, meta);
  run.stepper->swap_ema();
}

}  // namespace

models::Model build_model(const models::ModelOptions& mo, torch::Device device,
                          bool channels_last) {
  auto model = models::make_model(mo);
  model->to(device);
  if (channels_last) {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters())
      if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
  }
  return model;
}

std::vector<torch::Tensor> init_from_training_images(models::Model& model,
                                                     const data::ArrayDataset& a,
                                                     const std::string& name,
                                                     torch::Device device) {
  const int64_t n = std::min<int64_t>(2000, a.n);
  const auto u8 = torch::from_blob(const_cast<uint8_t*>(a.images.data()),
                                   {n, a.channels, a.height, a.width}, torch::kUInt8);
  const auto images = data::PixelNormalizer(models::input_normalization(name), a.channels,
                                            data::Layout::kNCHW, device)(u8.to(device));
  return models::init_from_data(model, images);
}

void check_resume_file(const std::string& path) {
  check_weights_file(path, "--resume");
}

void check_run_files(const TrainOptions& o) {
  // Output paths first: a run must not end by failing to write.
  // (Their folders are made, with their parents, as --log-dir's is: by rank 0, once the run has
  // passed its checks, make_output_folders.)
  if (!o.save.empty()) tools::check_output_path(o.save, "--save");
  if (!o.checkpoint.empty()) tools::check_output_path(o.checkpoint, "--checkpoint");
  if (!o.json.empty()) tools::check_output_path(o.json, "--json");
  if (!o.profile.empty()) tools::check_output_path(o.profile, "--profile");
  if (!o.log_dir.empty()) tools::check_output_dir(o.log_dir, "--log-dir");
  if (!o.resume.empty()) check_resume_file(o.resume);
  if (!o.weights.empty()) weights_file(o.weights);
  std::error_code ec;
  if (!o.data.empty() && !fs::exists(o.data, ec))
    FASTER_NOT_FOUND("dataset ", o.data, " does not exist");  // as opening it says
}

TrainReport train(const TrainOptions& options, const TrainCallbacks& callbacks) {
  validate(options);
  TrainOptions o = options;  // the run's own copy: what the data and the job settle is filled in
  check_run_files(o);
  Job job = join(o);
  Setup setup = start_setup(o);
  const TrainingData d = open_data(o, job.device, setup);
  const DataPlan plan = plan_run_data(o, d, job);
  auto mo = model_options(o, d, plan, job);
  claim_outputs(o, job);  // before any work
  // The stepper and its graphs end inside the side stream's scope: it is declared first.
  std::optional<SideStreamScope> side_stream;
  Run run = build_model_step(o, d, plan, job, std::move(mo), setup);
  MetricsLog log(job.is_main() ? o.log_dir : std::string());
  TrainReport report = start_report(o, d, job, run);
  if (job.dist) check_ranks_agree(*job.dist, report.options, run.mo.classes, job.device);
  side_stream.emplace(o.cuda_graph ? job.device : torch::Device(torch::kCPU));
  build_stepper(o, plan, job, run);
  report.start_epoch = restore(o, d, run, report, job.is_main());
  announce(o, d, job, run, report, log, callbacks);

  const Timer total;  // from here: data to the device, all epochs, all tests
  Loaders loaders = make_loaders(o, d, plan, job);
  finish_setup(o, job, run, loaders, setup);
  report.setup = setup.marks;
  if (const char* queues = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"); queues && *queues)
    report.cuda_env["CUDA_DEVICE_MAX_CONNECTIONS"] = queues;
  EpochLoop epochs(o, d, job, run, loaders, report, log);
  for (int epoch = report.start_epoch; epoch < o.epochs; ++epoch) {
    epochs.run_epoch(epoch);
    if (callbacks.on_epoch && report.is_main) callbacks.on_epoch(report.epochs.back());
  }
  finish(o, d, run, report, epochs, total, log);
  return report;
}

}  // namespace faster::train

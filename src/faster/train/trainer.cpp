// The trainer: data, model, loaders and the epoch loop.  The step itself (train/stepper) never
// makes the host wait; the loop reads the device once per epoch (and about once a second for the
// progress line's loss).
#include "faster/train/trainer.h"

#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <thread>

#include "faster/core/early_context.h"
#include "faster/core/error.h"
#include "faster/core/file.h"
#include "faster/core/gpu_info.h"
#include "faster/core/interrupt.h"
#include "faster/core/launch_env.h"
#include "faster/core/line_chart.h"
#include "faster/core/log.h"
#include "faster/core/memory.h"
#include "faster/core/process_clock.h"
#include "faster/core/progress.h"
#include "faster/core/timer.h"
#include "faster/data/loader/image_loader.h"
#include "faster/data/sources/open_source.h"
#include "faster/models/registry.h"
#include "faster/tools/file_io.h"
#include "faster/tools/tree.h"
#include "faster/train/checkpoint.h"
#include "faster/train/cpu_runtime.h"
#include "faster/train/device_warm_up.h"
#include "faster/train/parallel/data_parallel.h"
#include "faster/train/parallel/dist.h"
#include "faster/train/stepper.h"
#include "faster/train/training_data.h"

namespace faster::train {
namespace fs = std::filesystem;

nlohmann::json EpochStats::to_json() const {
  nlohmann::json j = {{"epoch", epoch},
                      {"train_loss", train_loss},
                      {"seconds", seconds},
                      {"train_seconds", train_seconds},
                      {"loader_wait_seconds", loader_wait_seconds},
                      {"train_images", train_images},
                      {"skipped_images", skipped_images},
                      {"lr", lr},
                      {"res", res},
                      {"process_seconds", process_seconds}};
  if (loader_images > 0)
    j["loader"] = {{"cpu_seconds", loader_cpu_seconds},
                   {"gpu_seconds", loader_gpu_seconds},
                   {"gpu_parse_seconds", loader_gpu_parse_seconds},
                   {"gpu_call_seconds", loader_gpu_call_seconds},
                   {"gpu_wait_seconds", loader_gpu_wait_seconds},
                   {"images", loader_images},
                   {"gpu_images", loader_gpu_images}};
  if (evaluated) {
    j["test_loss"] = test_loss;
    j["test_accuracy"] = test_accuracy;
    j["test_top5"] = test_top5;
  }
  return j;
}

EpochStats EpochStats::from_json(const nlohmann::json& j) {
  EpochStats e;
  e.epoch = j.value("epoch", 0);
  e.train_loss = j.value("train_loss", 0.0);
  e.seconds = j.value("seconds", 0.0);
  e.train_seconds = j.value("train_seconds", 0.0);
  e.loader_wait_seconds = j.value("loader_wait_seconds", 0.0);
  e.train_images = j.value("train_images", int64_t{0});
  e.skipped_images = j.value("skipped_images", int64_t{0});
  e.lr = j.value("lr", 0.0);
  e.res = j.value("res", 0);
  e.process_seconds = j.value("process_seconds", 0.0);
  if (const auto l = j.find("loader"); l != j.end() && l->is_object()) {
    e.loader_cpu_seconds = l->value("cpu_seconds", 0.0);
    e.loader_gpu_seconds = l->value("gpu_seconds", 0.0);
    e.loader_gpu_parse_seconds = l->value("gpu_parse_seconds", 0.0);
    e.loader_gpu_call_seconds = l->value("gpu_call_seconds", 0.0);
    e.loader_gpu_wait_seconds = l->value("gpu_wait_seconds", 0.0);
    e.loader_images = l->value("images", int64_t{0});
    e.loader_gpu_images = l->value("gpu_images", int64_t{0});
  }
  e.evaluated = j.contains("test_accuracy");
  if (e.evaluated) {
    e.test_loss = j.value("test_loss", 0.0);
    e.test_accuracy = j.value("test_accuracy", 0.0);
    e.test_top5 = j.value("test_top5", 0.0);
  }
  return e;
}

nlohmann::json TrainReport::to_json() const {
  nlohmann::json j;
  j["options"] = options;
  j["device"] = device;
  j["model"] = model;
  j["data"] = data;
  j["classes"] = classes;
  j["start_epoch"] = start_epoch;
  j["total_seconds"] = total_seconds;
  j["process_seconds"] = process_seconds;
  j["setup"] = setup;
  j["cuda_env"] = cuda_env;
  j["train_images_per_second"] = train_images_per_second;
  j["epochs"] = nlohmann::json::array();
  for (const auto& e : run_epochs()) j["epochs"].push_back(e.to_json());
  if (const auto acc = final_test_accuracy()) j["final_test_accuracy"] = *acc;
  return j;
}

std::vector<EpochStats> TrainReport::run_epochs() const {
  auto run = earlier_epochs;
  run.insert(run.end(), epochs.begin(), epochs.end());
  return run;
}

int64_t TrainReport::skipped_images() const {
  int64_t n = 0;
  for (const auto& e : epochs) n += e.skipped_images;
  return n;
}

std::optional<double> TrainReport::final_test_accuracy() const {
  std::optional<double> last;
  for (const auto& e : epochs)
    if (e.evaluated) last = e.test_accuracy;
  return last;
}

nlohmann::json EvalReport::to_json() const {
  return {{"model", model},
          {"data", data},
          {"device", device},
          {"classes", classes},
          {"res", res},
          {"images", images},
          {"skipped", skipped},
          {"loss", loss},
          {"top1", top1},
          {"top5", top5},
          {"seconds", seconds},
          {"tta", tta},
          {"tta_shifts", tta_shifts},
          {"ema", ema}};
}

namespace {

// The settings that decide the data order and the updates (the run's options JSON).
// clang-format off
constexpr const char* kRunKeys[] = {
    "data", "batch", "lr", "lr_per_256", "momentum", "weight_decay", "weight_decay_1d",
    "nesterov", "muon_lr", "muon_momentum", "muon_steps", "warmup_epochs", "warmup_start",
    "lr_decay", "min_lr", "lr_steps", "lr_gamma",
    "label_smoothing", "ema", "res", "res_end", "res_ramp", "res_step", "crop_scale_min",
    "translate", "flip", "alternate_flips", "seed", "last_batch", "precision", "recipe",
    "world_size", "norm", "whiten", "train_limit", "sync_bn"};
// clang-format on

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
  std::string changed;
  for (const char* key : kRunKeys) {
    if (!saved.contains(key) || !now.contains(key) || saved[key] == now[key]) continue;
    if (std::string(key) == "data" && saved[key].is_string() && now[key].is_string() &&
        resolved(saved[key].get<std::string>()) == resolved(now[key].get<std::string>()))
      continue;  // the same folder, however it is named
    changed += std::string(changed.empty() ? "" : ", ") + key + " " + now[key].dump() + " (was " +
               saved[key].dump() + ")";
  }
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

// A checkpoint of a run on image folders (or LMDB) records its class names: resumed or scored on
// folders named or ordered otherwise, its labels would mean other classes, silently.  Checkpoints
// of small datasets (their classes are indices) and older ones record none.
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

// The momentum and the weights' average are saved flat, in the parameters' memory order of the
// run that saved them (`saved`: its options): a checkpoint of the other format (channels-last or
// not) is reordered into this run's, in place.
void reorder_saved_flats(const FlatSgd& sgd, bool channels_last, const nlohmann::json& saved,
                         const std::vector<torch::Tensor>& flats) {
  if (!saved.contains("channels_last") || !saved["channels_last"].is_boolean()) return;
  const bool was = saved["channels_last"].get<bool>();
  if (was == channels_last) return;
  for (const auto& flat : flats) sgd.reorder_from(flat, was);
}

// Whether every rank says `mine` (a collective: all ranks call it).
bool every_rank(Dist& dist, bool mine, torch::Device device) {
  auto count = torch::full({1}, mine ? 1.0f : 0.0f, torch::TensorOptions().device(device));
  dist.all_reduce_sum(count);
  return count.item<float>() == static_cast<float>(dist.world().world);
}

// Ranks started with other settings (two command lines, ranks started by hand) would train out of
// step and wait in a collective until --dist-timeout, or fail there with Gloo's or NCCL's words:
// they compare theirs with rank 0's first (the data's path may differ from node to node, the
// class count may not).
void check_ranks_agree(Dist& dist, const nlohmann::json& options, int classes,
                       torch::Device device) {
  nlohmann::json mine = {{"model", options.value("model", "")},
                         {"epochs", options.value("epochs", 0)},
                         {"classes", classes}};
  for (const char* key : kRunKeys)
    if (std::string(key) != "data" && options.contains(key)) mine[key] = options[key];
  // And what shapes the collectives: the model's widths, what is trained, how gradients are sent.
  for (const char* key : {"blocks", "filters", "stem_dims", "freeze_whitening", "sync_bn",
                          "bucket_mb", "channels_last"})
    if (options.contains(key)) mine[key] = options[key];
  const std::string text = mine.dump();
  uint64_t hash = 14695981039346656037ull;  // FNV-1a
  for (const unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  const auto on = torch::TensorOptions().device(device);
  auto first = torch::full({1}, static_cast<int64_t>(hash), on.dtype(torch::kLong));
  dist.broadcast_from_rank0(first);
  const bool same = first.item<int64_t>() == static_cast<int64_t>(hash);
  if (!every_rank(dist, same, device))
    throw Error(same ? "other ranks were started with other settings than rank 0"
                     : "this rank was started with other settings than rank 0 (model, widths, "
                       "epochs, classes, batch, rates, schedule, seed, augmentation or "
                       "--bucket-mb)",
                "start every rank with the same flags and data (torchrun and srun run one "
                "command line)");
}

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

// The network `mo` names, on `device`, its 4-d parameters channels-last when asked.
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

// The process's place in a DDP job and its device (its local rank's; the one a Slurm task sees);
// a world of one otherwise.
std::unique_ptr<Dist> join_job(const TrainOptions& o, WorldInfo& world, torch::Device& device) {
  if (o.parallel != Parallel::kDdp) return nullptr;
  world = world_from_env();
  // From here every line of this rank, its error too, starts with "rank N: ".
  if (world.world > 1) log::set_source("rank " + std::to_string(world.rank) + ": ");
  if (device.is_cuda()) {
    const int n = cuda_device_count();
    // A Slurm task that sees one GPU (--gpus-per-task 1) uses it (core/launch_env.h); a world of
    // one that no launcher started, --device's (it went to GPU 0 whatever --device said); every
    // other rank its local rank's.
    const bool own_gpu =
        launch_env::one_gpu_per_task([](const char* name) { return std::getenv(name); });
    const int index = own_gpu                    ? 0
                      : world.source == "single" ? std::max<int>(0, device.index())
                                                 : world.local_rank;
    if (index >= n)
      throw Error("local rank " + std::to_string(world.local_rank) + ", but only " +
                      std::to_string(n) + " CUDA device(s) are visible",
                  "start at most " + std::to_string(n) +
                      " ranks per node (--nproc, torchrun --nproc-per-node)");
    device = torch::Device(torch::kCUDA, index);
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

// Validation crop and resize: val_res (default: the training resolution, 224 for JPEG data) and
// val_resize (default val_res * 256 / 224, torchvision's ratio).
int val_res_of(const TrainOptions& o, const TrainingData& d) {
  if (o.val_res > 0) return o.val_res;
  if (o.res.res > 0) return o.res.res;
  return d.arrays() ? 0 : 224;
}
int val_resize_of(const TrainOptions& o, int val_res) {
  return o.val_resize > 0 ? o.val_resize : val_res * 256 / 224;
}

// What the loaders are asked for, one place for the training and validation loaders.
struct LoaderPlan {
  data::Layout layout = data::Layout::kNCHW;
  int channels = 0;  // 0: the data's
  data::DecodeOn decode = data::DecodeOn::kCpu;
  int val_res = 0, val_resize = 0;
};

// --decode auto on a GPU: images of at most this many pixels (median) decode on the CPU.
// Measured on one H200 with 16 cores (BENCHMARKS.md, "Which decoder"): `faster load` of the same
// images downscaled to a short side of 32, 64 and 128 px ran 6.8x, 4.8x and 1.2x faster on the
// CPU, at ImageNet size (about 470x390) 2.4x slower; Fashion-MNIST's 28x28 JPEGs train 2.1x
// faster decoded on the CPU.
constexpr int64_t kCpuDecodeMaxPixels = 160 * 160;

// The model's channels (a gray array repeated into RGB), NHWC batches for a channels-last model
// (JPEG data: the ring is laid out so), the decoder, the validation sizes.
LoaderPlan plan_loaders(const TrainOptions& o, const TrainingData& d, int model_channels,
                        torch::Device device) {
  LoaderPlan plan;
  plan.channels = model_channels != d.channels() ? model_channels : 0;
  plan.layout = o.channels_last && !d.arrays() ? data::Layout::kNHWC : data::Layout::kNCHW;
  bool nvjpeg = o.decode == Decode::kNvjpeg;
  // A gray model's JPEG data decodes to gray, on the CPU (the image loader refuses nvJPEG).
  const bool gray_jpeg = model_channels == 1 && !d.arrays();
  if (o.decode == Decode::kAuto && device.is_cuda() && !d.arrays() && !gray_jpeg) {
    // nvJPEG unless the images are small: there its per-image cost outweighs it.
    const int64_t pixels = data::median_jpeg_pixels(d.train ? *d.train : *d.val);  // eval: val only
    nvjpeg = pixels == 0 || pixels > kCpuDecodeMaxPixels;
    if (!nvjpeg)
      log::info("decode: libjpeg-turbo on the CPU (--decode auto: images of about ", pixels,
                " pixels decode faster there than on the GPU; --decode nvjpeg overrides)");
  }
  plan.decode = nvjpeg ? data::DecodeOn::kNvjpeg : data::DecodeOn::kCpu;
  plan.val_res = val_res_of(o, d);
  plan.val_resize = val_resize_of(o, plan.val_res);
  return plan;
}

std::unique_ptr<data::Loader> make_loader(const TrainOptions& o, const TrainingData& d,
                                          const LoaderPlan& plan, torch::Device device,
                                          const WorldInfo& w, bool train) {
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
  if (train) {
    const int64_t n = data::Sampler(d.train->size(), lo.sampler).per_rank();
    // BatchNorm cannot take batch statistics of one image (LibTorch refuses one value per channel,
    // as a ResNet's last stage has at 32 px): a last batch of one image is left out instead.
    if (lo.last_batch == data::LastBatch::kKeep && n > 1 && n % o.batch == 1) {
      lo.last_batch = data::LastBatch::kDrop;
      if (w.rank == 0)
        log::info("the last training batch of each epoch would hold 1 image, too few for ",
                  "BatchNorm: it is left out (another image each epoch, as the order is shuffled)");
    }
  }
  lo.workers = o.workers;
  lo.device = device;
  lo.channels = plan.channels;
  lo.layout = plan.layout;
  lo.output = data::OutputType::kUint8;
  lo.normalize_on_device = false;  // the step normalizes (inside its CUDA graph)
  lo.on_bad_image = o.on_bad_image;
  lo.rrc.scale_min = o.crop_scale_min;
  lo.rrc.flip = o.flip == Flip::kOn;
  if (train) lo.shift_flip = {o.translate, o.flip == Flip::kOn, o.alternate_flips};
  const bool as_stored = d.arrays() && (train ? o.res.res == 0 : plan.val_res == 0);
  lo.transform = as_stored ? data::Transform::kNone
                 : train   ? data::Transform::kTrain
                           : data::Transform::kVal;
  lo.size = res_at(o.res, 0);
  lo.max_size = max_res(o.res);
  lo.val_size = plan.val_res;
  lo.val_resize = plan.val_resize;
  lo.decode = d.arrays() ? data::DecodeOn::kCpu : plan.decode;
  lo.cpu_share = o.cpu_share;
  lo.gpu_stages = o.nvjpeg_threads;
  if (train && o.loader == LoaderKind::kSynthetic) {
    data::SyntheticData s;
    s.samples = d.train->size();
    s.channels = plan.channels > 0 ? plan.channels : d.channels();
    s.size = as_stored ? d.train_arrays->height : lo.size;
    s.classes = static_cast<int>(d.classes.size());
    return data::make_synthetic_loader(s, lo);
  }
  if (train && as_stored && o.loader == LoaderKind::kDevice && plan.channels == 0)
    return data::make_device_loader(*d.train_arrays, lo);
  if (!train && as_stored && o.loader == LoaderKind::kDevice && plan.channels == 0)
    return data::make_device_loader(*d.val_arrays, lo);
  return std::make_unique<data::ImageLoader>(train ? d.train : d.val, lo);
}

// Flip::kAuto decided from the data: Fashion-MNIST (data::named_fashion_mnist) and CIFAR-10 flip;
// MNIST's digits and any other set do not (a mirrored 3 is no 3).
Flip resolve_flip(Flip flip, const TrainingData& d) {
  if (flip != Flip::kAuto) return flip;
  if (!d.arrays()) return Flip::kOff;
  const bool mirrorable =
      d.train_arrays->fashion_mnist || d.train_arrays->name.rfind("cifar10/", 0) == 0;
  return mirrorable ? Flip::kOn : Flip::kOff;
}

// Initialises the layers of `model` that start from the data (SpeedNet's whitened stem) from the
// first 2,000 training images as the model sees them (float, normalized); returns their
// parameters.  Training and eval (of a checkpoint whose stem stayed so) must start alike.
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

// metrics.jsonl (appended) and metrics.svg (rewritten after every epoch) in --log-dir.
class MetricsLog {
 public:
  explicit MetricsLog(const std::string& dir) : dir_(dir) {
    if (dir.empty()) return;
    std::error_code ec;
    fs::create_directories(dir, ec);
    out_.open(fs::path(dir) / "metrics.jsonl", std::ios::app);
    if (!out_) FASTER_THROW("--log-dir ", dir, ": cannot write metrics.jsonl");
  }
  void write(const nlohmann::json& j) {
    if (out_.is_open()) out_ << j.dump() << std::endl;
  }
  void chart(const std::string& title, const std::vector<EpochStats>& epochs) {
    if (dir_.empty()) return;
    ChartSeries train_loss{"train loss", {}}, val_loss{"val loss", {}}, top1{"val top-1 %", {}},
        top5{"val top-5 %", {}};
    for (const auto& e : epochs) {
      train_loss.points.emplace_back(e.epoch, e.train_loss);
      if (!e.evaluated) continue;
      val_loss.points.emplace_back(e.epoch, e.test_loss);
      top1.points.emplace_back(e.epoch, e.test_accuracy);
      top5.points.emplace_back(e.epoch, e.test_top5);
    }
    const auto svg = line_chart_svg(
        title, "epoch", {{"loss", {train_loss, val_loss}}, {"accuracy %", {top1, top5}}});
    tools::write_file_atomic(fs::path(dir_) / "metrics.svg", svg);
  }

 private:
  std::string dir_;
  std::ofstream out_;
};

}  // namespace

void check_resume_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) FASTER_THROW("--resume ", path, ": no such file");
}

void check_run_files(const TrainOptions& o) {
  // Output paths first: a run must not end by failing to write.
  if (!o.save.empty()) tools::check_output_file(o.save, "--save");
  if (!o.checkpoint.empty()) tools::check_output_file(o.checkpoint, "--checkpoint");
  if (!o.log_dir.empty()) tools::check_output_dir(o.log_dir, "--log-dir");
  if (!o.resume.empty()) check_resume_file(o.resume);
  std::error_code ec;
  if (!o.data.empty() && !fs::exists(o.data, ec))
    FASTER_THROW("dataset ", o.data, " does not exist");  // as opening it says
}

TrainReport train(const TrainOptions& options, const TrainCallbacks& callbacks) {
  validate(options);
  TrainOptions o = options;  // the run's own copy: derived values are filled in below
  check_run_files(o);
  auto device = resolve_device(o.device);
  WorldInfo world;
  auto dist = join_job(o, world, device);
  if (device.is_cpu()) configure_cpu_runtime(world.local_world);
  const auto dp = dp_devices(o);
  if (device.is_cuda() && o.gpu_wait != GpuWait::kAuto)  // every device the run uses, first
    for (const auto& d : dp.empty() ? std::vector<torch::Device>{device} : dp)
      set_gpu_wait(d.index(), o.gpu_wait);
  const bool is_main = world.is_main();
  // --prewarm: the data is read (and unzipped) while CUDA, cuDNN and cuBLAS start, both on threads:
  // the data decide the model copy's warm-up (below), which need not wait for the libraries.
  nlohmann::json setup = {{"start_s", process_seconds()}};
  if (main_entered_seconds() > 0) setup["main_s"] = main_entered_seconds();
  if (const double ago = finish_early_context(); ago >= 0)
    setup["context_s"] = process_seconds() - ago;
  // Set before any convolution runs, the device warm-up's on its thread included.
  at::globalContext().setBenchmarkCuDNN(o.cudnn_benchmark);
  at::globalContext().setBenchmarkLimitCuDNN(o.cudnn_benchmark_limit);
  double data_read_at = 0;  // before the futures: the reading thread writes it
  const auto read_data = [&o, &data_read_at] {
    auto read = open_training_data(o.data, o.val_data, o.train_limit, o.test_limit);
    data_read_at = process_seconds();
    return read;
  };
  std::future<TrainingData> reading;
  std::future<double> device_warm;  // when the libraries were ready
  if (o.prewarm) {
    reading = std::async(std::launch::async, read_data);
    device_warm = std::async(std::launch::async,
                             [device, precision = o.precision, channels_last = o.channels_last] {
                               warm_up_device(device, precision, channels_last);
                               return process_seconds();
                             });
  }
  const auto d = o.prewarm ? reading.get() : read_data();
  setup["data_read_s"] = data_read_at;
  // Shifts and flips are the device loader's, for small datasets as stored (crops flip anyway).
  const bool as_stored_on_device = o.loader == LoaderKind::kDevice && d.arrays() && o.res.res == 0;
  if (!as_stored_on_device && is_speedrun(o.recipe))
    throw Error(std::string("--recipe ") + enum_name(kRecipeNames, o.recipe) +
                    " (speednet's) trains a small " +
                    "dataset as stored on the device: Fashion-MNIST, MNIST or CIFAR-10 files, " +
                    "--loader device, no --res",
                "for JPEG folders or LMDB, --recipe imagenet (a ResNet) or --recipe cpu");
  if (!as_stored_on_device && o.translate > 0)
    FASTER_THROW(
        "--translate shifts small datasets as stored on the device: it needs --loader device, "
        "and no --res");
  // As stored on the device, the data decides --flip auto; crops (JPEG data, --res) flip unless
  // --flip off; the host loader serves a small dataset as stored unflipped.
  const bool crops = !d.arrays() || o.res.res > 0;
  if (!as_stored_on_device && !crops && o.flip == Flip::kOn)
    FASTER_THROW(
        "--flip on flips a small dataset as stored with --loader device, or its crops (--res N); "
        "the host loader serves it unflipped");
  o.flip = as_stored_on_device             ? resolve_flip(o.flip, d)
           : crops && o.flip != Flip::kOff ? Flip::kOn
                                           : Flip::kOff;
  if (o.alternate_flips && as_stored_on_device && o.flip == Flip::kOff && is_main)
    log::warn("--alternate-flips: ", o.data,
              " is not flipped (--flip auto flips Fashion-MNIST and CIFAR-10 only): nothing to "
              "alternate");
  // A mirrored test image is only evidence where training flips.
  o.tta = o.tta && o.flip == Flip::kOn;
  if (!d.arrays() && o.res.res == 0) o.res.res = 224;  // JPEG images of any size need a crop size
  if (o.loader == LoaderKind::kDevice && (!d.arrays() || o.res.res > 0))
    FASTER_THROW("--loader device serves small datasets as stored; with ",
                 d.arrays() ? "--res (crops)" : "JPEG data", " use --loader host");
  // A batch holds at most the rank's share of the training split: larger, it is that share (the
  // rate per 256, the memory estimate and the loader all go by the batch that is trained).
  if (const int64_t share = (d.train->size() + world.world - 1) / world.world;
      o.batch > share && share > 0) {
    if (is_main)
      log::info("--batch ", o.batch, " is more than the ", share, " training images",
                world.world > 1 ? " per rank" : "", ": batches of ", share);
    o.batch = share;
  }
  if (o.lr_per_256 > 0) o.sgd.lr = o.lr_per_256 * static_cast<double>(o.batch * world.world) / 256;

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
    mo.sync_all_reduce = [dd = dist.get()](torch::Tensor& t) { dd->all_reduce_sum(t); };
  const LoaderPlan plan = plan_loaders(o, d, mo.in_channels, device);
  const int min_side = models::min_input_size(mo);
  const int smallest_res =
      d.arrays() && o.res.res == 0
          ? std::min(d.train_arrays->height, d.train_arrays->width)
          : std::min(o.res.end_res > 0 ? std::min(o.res.res, o.res.end_res) : o.res.res,
                     plan.val_res > 0 ? plan.val_res : o.res.res);
  if (smallest_res < min_side)
    FASTER_THROW(mo.name, " needs images of at least ", min_side, "x", min_side, "; this run has ",
                 smallest_res, "x", smallest_res);
  if (device.is_cpu()) {
    const bool as_stored = d.arrays() && o.res.res == 0;
    const int64_t side = std::max(o.res.res, o.res.end_res);
    check_cpu_memory(mo.name, o.batch, as_stored ? d.train_arrays->width : side,
                     as_stored ? d.train_arrays->height : side, world.local_world);
  }
  // --prewarm on one GPU per process, a small dataset as stored: the first step's kernels load on a
  // copy of the model while the rest is built (the copy is made before the seed is set, and
  // neither warm-up draws random numbers, so the run's random streams stay as they were; its
  // BatchNorm is never synchronised: a collective on that thread would interleave with this one's).
  std::future<std::string> model_warm;
  if (o.prewarm && device.is_cuda() && !crops && o.parallel != Parallel::kDp) {
    models::ModelOptions plain = mo;
    if (plain.norm == models::Norm::kSync) plain.norm = models::Norm::kBatch;
    plain.sync_all_reduce = nullptr;
    const auto& a = *d.train_arrays;
    model_warm = warm_up_model(build_model(plain, device, o.channels_last),
                               {o.batch, mo.in_channels, a.height, a.width}, o, device);
  }
  torch::manual_seed(o.seed);
  auto model = build_model(mo, device, o.channels_last);
  if (o.whiten) {
    if (!d.arrays()) FASTER_THROW("--whiten needs a small array dataset");
    const auto set = init_from_training_images(model, *d.train_arrays, o.model, device);
    if (set.empty()) FASTER_THROW("--whiten: ", o.model, " has no layer initialised from the data");
    if (o.freeze_whitening)
      for (auto p : set) p.requires_grad_(false);
  }

  MetricsLog log(is_main ? o.log_dir : std::string());
  TrainReport report;
  report.options = options_json(o);
  report.options["world_size"] = world.world;
  report.options["local_world_size"] = world.local_world;  // ranks on one machine
  report.model = o.model;
  report.data = d.train->describe();
  report.classes = mo.classes;
  report.device = device.str();
  if (dist)
    report.device += " x" + std::to_string(world.world) + " ranks (" + dist->backend() + ")";
  if (o.parallel == Parallel::kDp)
    report.device += " x" + std::to_string(dp.size()) + " GPUs (DataParallel)";

  if (dist) check_ranks_agree(*dist, report.options, mo.classes, device);
  SideStreamScope side_stream(o.cuda_graph ? device : torch::Device(torch::kCPU));
  // Model, optimizer and DDP set-up (its broadcast starts NCCL) stay outside the timed region, as
  // in the peer, whose clock starts once the model, optimizer and DDP wrapper exist.
  Stepper stepper(model, o, device, dist.get(), dp, models::input_normalization(o.model),
                  mo.in_channels, plan.layout == data::Layout::kNHWC);
  std::vector<CheckpointPart> parts = {{"sgd.", {stepper.sgd().momentum()}}};
  if (stepper.ema()) parts.push_back({"ema.", stepper.ema()->state()});
  if (stepper.scaler()) parts.push_back({"scaler.", stepper.scaler()->state()});
  nlohmann::json identity = {
      {"model", o.model}, {"classes", mo.classes}, {"in_channels", mo.in_channels}};
  // A frozen stem has no optimizer state: a checkpoint of either kind fits only its own kind.
  if (o.freeze_whitening) identity["freeze_whitening"] = true;
  int start_epoch = 0;
  if (!o.resume.empty()) {
    const auto meta = load_checkpoint(o.resume, model.module(), parts, identity);
    check_class_names(meta, d, o.resume);
    std::vector<torch::Tensor> flats = {stepper.sgd().momentum()};
    if (stepper.ema()) flats.push_back(stepper.ema()->state()[0]);
    reorder_saved_flats(stepper.sgd(), o.channels_last,
                        meta.value("options", nlohmann::json::object()), flats);
    start_epoch = meta.value("epochs_done", 0);
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
    check_resumed_options(saved, report.options, o.resume, o.outputs_from_checkpoint, is_main);
  }
  report.start_epoch = start_epoch;
  report.is_main = is_main;
  log.write({{"event", "start"},
             {"options", report.options},
             {"device", report.device},
             {"start_epoch", start_epoch}});
  if (callbacks.on_start && is_main) {
    std::string line = o.model + " (" + std::to_string(mo.classes) + " classes) on " + report.data +
                       ", " + report.device;
    if (device.is_cpu()) {
      const int threads = at::get_num_threads();
      line += " (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
    }
    if (start_epoch > 0) line += ", resuming after epoch " + std::to_string(start_epoch);
    if (!d.val) line += "; no val split: nothing is tested";
    callbacks.on_start(line);
  }

  Timer total;  // from here: data to the device, all epochs, all tests
  auto train_loader = make_loader(o, d, plan, device, world, true);
  std::unique_ptr<data::Loader> val_loader;
  if (d.val) val_loader = make_loader(o, d, plan, device, world, false);
  setup["loaders_ready_s"] = process_seconds();
  if (device_warm.valid()) setup["device_ready_s"] = device_warm.get();
  if (model_warm.valid()) {
    if (const std::string failed = model_warm.get(); !failed.empty() && is_main)
      log::warn("--prewarm: the model's warm-up failed (", failed,
                "); the first step loads its kernels itself");
    setup["model_warm_s"] = process_seconds();
  }
  if (o.prewarm && val_loader) {  // every step shape once (graphs captured) before epoch 1
    const auto tb = first_full_batch(*train_loader, o.batch);
    const auto eb = first_full_batch(*val_loader, o.batch);
    bool warm = tb && eb;
    // All ranks or none: the warm-up's training steps all-reduce (shards differ).
    if (dist) warm = every_rank(*dist, warm, device);
    if (warm)
      stepper.warm_up(*tb, *eb, [&setup](const char* name) { setup[name] = process_seconds(); });
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
    setup["steps_ready_s"] = process_seconds();
  }
  report.setup = setup;
  if (const char* queues = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"); queues && *queues)
    report.cuda_env["CUDA_DEVICE_MAX_CONNECTIONS"] = queues;
  auto* image_loader = dynamic_cast<data::ImageLoader*>(train_loader.get());
  auto* val_image_loader = dynamic_cast<data::ImageLoader*>(val_loader.get());
  const int64_t steps_per_epoch = train_loader->batches_per_epoch();
  // The schedule's position: a checkpoint ends an epoch, and a run resumed with another --batch
  // (or world size) has other steps per epoch than the checkpoint's "step" counted.
  int64_t step = start_epoch * steps_per_epoch;
  int64_t train_images = 0;
  double train_seconds = 0;
  // Ctrl-C or SIGTERM stops a single process between steps and says where it stopped (the ranks
  // of a job are stopped by their launcher).
  std::optional<InterruptScope> interrupt;
  if (world.source == "single") interrupt.emplace();
  std::error_code same_ec;  // the checkpoint written is the one read, however either is named
  int epochs_saved =
      !o.resume.empty() && fs::equivalent(o.checkpoint, o.resume, same_ec) ? start_epoch : 0;
  const auto stop_if_interrupted = [&](int epoch, const char* where) {
    const int signal = interrupt ? InterruptScope::received() : 0;
    if (signal == 0) return;
    log.write({{"event", "interrupted"}, {"epoch", epoch + 1}, {"step", step}});
    std::string hint;
    if (epochs_saved >= o.epochs)  // the last epoch trained, its test pass cut short
      hint = o.checkpoint + " holds the trained run (" + std::to_string(o.epochs) +
             (o.epochs == 1 ? " epoch" : " epochs") + "): 'faster eval --weights " + o.checkpoint +
             "' scores it";
    else if (epochs_saved > 0)
      hint = o.checkpoint + " holds epoch " + std::to_string(epochs_saved) + ": --resume " +
             o.checkpoint + " goes on from there";
    else
      hint = o.checkpoint.empty() ? "--checkpoint FILE saves every epoch, for --resume"
                                  : "no epoch had ended: nothing was saved to " + o.checkpoint;
    throw Interrupted(signal,
                      "interrupted (" + signal_name(signal) + ") " + where + " epoch " +
                          std::to_string(epoch + 1) + "/" + std::to_string(o.epochs),
                      hint);
  };
  // The checkpoint of a finished epoch (rank 0 writes it).
  const auto save_epoch = [&](int epoch) {
    if (!is_main || o.checkpoint.empty()) return;
    auto meta = identity;
    if (!d.arrays()) meta["class_names"] = d.classes;
    // Trained on a small dataset as stored: the side eval scores its images at elsewhere (the
    // tree `faster export` makes of it).
    if (d.arrays() && o.res.res == 0 && d.train_arrays->height == d.train_arrays->width)
      meta["stored_side"] = d.train_arrays->height;  // (a square's: eval's crops are square)
    meta["epochs_done"] = epoch + 1;
    meta["step"] = step;
    meta["options"] = report.options;
    // The run's history so far: a resumed run's report and chart go on from it.
    auto& history = meta["epochs"] = nlohmann::json::array();
    for (const auto& e : report.run_epochs()) history.push_back(e.to_json());
    save_checkpoint(o.checkpoint, model.module(), parts, meta);
    epochs_saved = epoch + 1;
    if (o.keep_checkpoints) {  // a second name for the same file (torchvision's model_N.pth)
      const auto kept = o.checkpoint + ".epoch" + std::to_string(epoch + 1);
      std::error_code ec;
      fs::remove(kept, ec);
      fs::create_hard_link(o.checkpoint, kept, ec);
      if (ec) fs::copy_file(o.checkpoint, kept, fs::copy_options::overwrite_existing);
    }
  };
  for (int epoch = start_epoch; epoch < o.epochs; ++epoch) {
    Timer timer;
    const int res = res_at(o.res, epoch);
    if (image_loader && o.res.res > 0) image_loader->set_size(res);
    stepper.start_epoch();
    model->train();
    const data::LoaderStats before = image_loader ? image_loader->stats() : data::LoaderStats{};
    train_loader->start_epoch(epoch);
    const bool evaluate = val_loader && ((epoch + 1) % o.eval_every == 0 || epoch + 1 == o.epochs);
    double lr = 0;
    {
      std::optional<Progress> bar;
      if (is_main)
        bar.emplace(
            "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(o.epochs),
            train_loader->batches_per_epoch() + (evaluate ? val_loader->batches_per_epoch() : 0),
            "batch");
      Timer since_line;
      int64_t seen = 0;
      while (auto b = train_loader->next()) {
        lr = o.sgd.lr * lr_factor(o.schedule, step++, steps_per_epoch, o.epochs);
        stepper.set_lr(lr);
        stepper.train_batch(*b);
        stop_if_interrupted(epoch, "in");
        seen += b->size;
        if (!bar) continue;
        bar->add();
        if (since_line.seconds() >= 2) {  // reading the loss waits for the device: now and then
          char s[96];
          std::snprintf(s, sizeof s, "%s img/s  loss %.4f",
                        format_count(seen * world.world / timer.seconds()).c_str(),
                        stepper.train_loss_so_far() / std::max<int64_t>(1, seen));
          bar->set_suffix(s);
          since_line = Timer();
        }
      }
      if (device.is_cuda()) torch::cuda::synchronize(device.index());
      const double epoch_train_s = timer.seconds();
      train_seconds += epoch_train_s;
      stepper.sync_buffers();  // DDP: rank 0's statistics, tested and saved alike
      // torchvision's EMA follows the model during the learning-rate warm-up.
      if (stepper.ema() && epoch + 1 <= o.schedule.warmup_epochs) stepper.ema()->reset();
      if (evaluate) {
        model->eval();
        stepper.swap_ema();
        val_loader->start_epoch(0);
        while (auto b = val_loader->next()) {
          stepper.eval_batch(*b);
          if (interrupt && InterruptScope::received()) {
            // The epoch's training is done: it is saved before stopping (a long test pass
            // interrupted lost a whole epoch).
            stepper.swap_ema();
            if (torch::isfinite(stepper.sgd().flat_params()).all().item<bool>()) {
              // Its history holds the epoch too (untested): a resumed report has no gap.
              EpochStats e;
              e.epoch = epoch + 1;
              e.train_loss = stepper.train_loss_so_far() / std::max<int64_t>(1, seen);
              e.train_seconds = e.seconds = epoch_train_s;
              e.train_images = seen;
              e.lr = lr;
              e.res = res;
              e.process_seconds = process_seconds();
              report.epochs.push_back(e);
              save_epoch(epoch);  // not a diverged one (the check after the test pass)
            }
            stop_if_interrupted(epoch, "testing after");
          }
          if (bar) bar->add();
        }
        stepper.swap_ema();
      }
      if (bar) bar->finish();
      // Bad images the job's loaders skipped in the epoch (training and test), summed with the
      // step's totals over the ranks: every rank knows the job's count, and rank 0 reports it.
      int64_t skipped = image_loader ? image_loader->skipped_this_epoch() : 0;
      if (evaluate && val_image_loader) skipped += val_image_loader->skipped_this_epoch();
      auto totals = stepper.totals();
      totals =
          torch::cat({totals, torch::full({1}, static_cast<double>(skipped), totals.options())});
      if (dist) dist->all_reduce_sum(totals);
      totals = totals.to(torch::kCPU);  // the epoch's one host sync
      const StepTotals t = Stepper::read(totals);
      EpochStats e;
      e.skipped_images = static_cast<int64_t>(totals[-1].item<double>());
      e.epoch = epoch + 1;
      e.train_images = train_loader->samples_per_epoch() * world.world;
      e.train_loss = t.train_loss / std::max<int64_t>(1, e.train_images);
      e.evaluated = evaluate;
      if (evaluate) {
        const auto s = t.scores();
        e.test_loss = s.loss, e.test_accuracy = s.top1, e.test_top5 = s.top5;
      }
      e.seconds = timer.seconds();
      e.train_seconds = epoch_train_s;
      if (image_loader) {
        const data::LoaderStats now = image_loader->stats();
        e.loader_wait_seconds = now.wait_s - before.wait_s;
        e.loader_cpu_seconds = now.worker_s() - before.worker_s();
        e.loader_gpu_seconds = now.gpu_s - before.gpu_s;
        e.loader_gpu_parse_seconds = now.gpu_parse_s - before.gpu_parse_s;
        e.loader_gpu_call_seconds = now.gpu_call_s - before.gpu_call_s;
        e.loader_gpu_wait_seconds = now.gpu_wait_s - before.gpu_wait_s;
        e.loader_images = now.images - before.images;
        e.loader_gpu_images = now.gpu_images - before.gpu_images;
      }
      e.lr = lr;
      e.res = res;
      e.process_seconds = process_seconds();
      train_images += e.train_images;
      // A diverged run stops here (the fp16 scaler skips the steps it can).
      const bool weights_finite = torch::isfinite(stepper.sgd().flat_params()).all().item<bool>();
      if (!weights_finite || (!stepper.scaler() && !std::isfinite(e.train_loss)))
        throw Error(
            detail::concat("training diverged in epoch ", e.epoch, ": the loss is ", e.train_loss,
                           weights_finite ? "" : " and the weights are no longer finite"),
            detail::concat("lower --lr (it is ", o.sgd.lr,
                           "), or warm up for longer (--warmup-epochs)"));
      report.epochs.push_back(e);
      save_epoch(epoch);  // first: a failed write of the metrics must not lose the epoch
      auto entry = e.to_json();
      entry["event"] = "epoch";
      log.write(entry);
      log.chart(o.model + " on " + report.data, report.run_epochs());
    }
    if (callbacks.on_epoch && is_main) callbacks.on_epoch(report.epochs.back());
  }
  report.total_seconds = total.seconds();
  // The clock stops at the last test pass (its accuracy read back), not at the report's writing.
  report.process_seconds =
      report.epochs.empty() ? process_seconds() : report.epochs.back().process_seconds;
  report.train_images_per_second = train_seconds > 0 ? train_images / train_seconds : 0;
  log.write({{"event", "done"}, {"result", report.to_json()}});
  if (!o.save.empty() && is_main) {
    stepper.swap_ema();  // the weights that were evaluated
    save_state_dict(model.module(), o.save);
    stepper.swap_ema();
  }
  return report;
}

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

EvalReport evaluate(const EvalOptions& e) {
  check_range("--batch", e.batch, 1, data::kMaxBatch);
  check_range("--workers", e.workers, 1, data::kMaxWorkers);
  if (e.val_res != 0) check_range("--val-res", e.val_res, 8, data::kMaxSide);
  if (e.val_resize != 0)
    check_range("--val-resize", e.val_resize, std::max(e.val_res, 8), 2 * data::kMaxSide);
  const auto device = resolve_device(e.device);
  if (device.is_cpu() && e.precision == Precision::kFloat16)
    refuse_on_cpu(e.device, "--precision fp16", "--precision bf16 runs on the CPU");
  if (device.is_cpu() && e.decode == Decode::kNvjpeg)
    refuse_on_cpu(e.device, "--decode nvjpeg", "--decode cpu decodes on the CPU");
  if (device.is_cpu()) configure_cpu_runtime(1);
  if (!e.model.empty()) models::family(e.model);  // a name faster knows (a usage error if not)
  // The data: a small dataset's test split, a root's val/, or the split named (folder or LMDB).
  TrainingData d;
  const fs::path root(e.data);
  std::error_code ec;
  if (data::is_small_dataset(root)) {
    d = open_training_data(e.data, "");
  } else if (!data::is_lmdb_path(root) && fs::is_directory(root / "val", ec)) {
    d.val = open_split((root / "val").string());
  } else if (!data::is_lmdb_path(root) && fs::is_directory(root / "train", ec)) {
    FASTER_THROW(e.data, " has train/ but no val/: name the split to evaluate");
  } else {
    d.val = open_split(e.data);
  }
  d.classes = d.val->classes();

  // The weights: a state_dict (faster's or torchvision's) or a faster checkpoint's model.
  const auto dict = as_plain_state_dict(read_state_dict(e.weights));
  const std::string prefix = is_checkpoint(dict) ? "model." : "";
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& kv : dict)
    if (kv.key().rfind(prefix, 0) == 0)
      shapes[kv.key().substr(prefix.size())] = kv.value().sizes().vec();
  auto mo = models::infer_model_options(shapes, e.weights);
  if (!e.model.empty() && e.model != mo.name)
    FASTER_THROW(e.weights, " holds ", mo.name, " weights, not --model ", e.model);
  if (mo.classes != static_cast<int>(d.classes.size()))
    FASTER_THROW(e.weights, " classifies ", mo.classes, " classes, but ", d.val->describe(),
                 " has ", d.classes.size());
  // A checkpoint's run's options (none for a state_dict).
  const auto meta = prefix.empty() ? nlohmann::json::object() : checkpoint_meta(dict, e.weights);
  check_class_names(meta, d, e.weights);
  const auto run = meta.value("options", nlohmann::json::object());
  // The average of the weights (--ema) is what such a run tested, and is scored by default.
  const double ema_decay = run.value("ema", 0.0);
  const bool ema = e.ema.value_or(ema_decay > 0);
  if (ema && !(ema_decay > 0 && ema_decay < 1 && dict.contains("ema.0")))
    throw Error(e.weights + " holds no average of weights (its run had no --ema)",
                "a --save file of a run with --ema already is that average: drop --ema");
  auto model = build_model(mo, device, e.channels_last);
  if (ema && run.value("freeze_whitening", false)) {
    // The average covers the trained parameters: the stem stayed as initialised, out of it.
    if (!d.train_arrays) FASTER_THROW(e.weights, ": its frozen stem needs the training split");
    for (auto p : init_from_training_images(model, *d.train_arrays, mo.name, device))
      p.requires_grad_(false);
  }
  copy_state_dict(dict, prefix, model.module(), e.weights);
  model->eval();

  TrainOptions o;  // what the step reads when it only evaluates
  o.batch = e.batch;
  o.workers = e.workers;
  o.precision = e.precision;
  o.channels_last = e.channels_last;
  o.decode = e.decode;
  o.val_res = e.val_res;
  o.val_resize = e.val_resize;
  o.ema_decay = ema ? ema_decay : 0;
  if (!prefix.empty() && e.val_res == 0) {
    // A checkpoint knows the resolution it was tested at: its run's --val-res, else its --res.
    const int val_res = run.value("val_res", 0), res = run.value("res", 0);
    o.val_res = val_res > 0 ? val_res : res;
    if (e.val_resize == 0) o.val_resize = run.value("val_resize", 0);
    // A run on a small dataset as stored tested whole images of its side: so are JPEGs scored.
    const int stored = meta.value("stored_side", 0);
    if (o.val_res == 0 && stored > 0 && !d.arrays()) {
      o.val_res = stored;
      if (e.val_resize == 0) o.val_resize = stored;
    }
  }
  // Weights that record no resolution (a state_dict, an older checkpoint of a small dataset's
  // run): JPEG data is scored at torchvision's 224 px, which a model trained at another one
  // scores far below its accuracy.  Said once, before the pass.
  if (o.val_res == 0 && !d.arrays())
    log::warn(e.weights,
              " records no resolution: scoring at 224 px; --val-res R for the resolution it was "
              "trained at");
  o.tta = e.tta.value_or(run.value("tta", false));
  o.tta_shifts = e.tta_shifts.value_or(run.value("tta_shifts", false));
  const LoaderPlan plan = plan_loaders(o, d, mo.in_channels, device);
  Stepper stepper(model, o, device, nullptr, {}, models::input_normalization(mo.name),
                  mo.in_channels, plan.layout == data::Layout::kNHWC);
  if (ema) {  // the checkpoint's average, in its run's memory order, swapped into the model
    copy_checkpoint_parts(dict, {{"ema.", stepper.ema()->state()}}, e.weights);
    reorder_saved_flats(stepper.sgd(), o.channels_last, run, {stepper.ema()->state()[0]});
    stepper.swap_ema();
  }
  // A diverged run's weights score as chance with a NaN loss: said, not scored.
  for (const auto& named : {model->named_parameters(), model->named_buffers()})
    for (const auto& kv : named)
      if (kv.value().is_floating_point() && !torch::isfinite(kv.value()).all().item<bool>())
        throw Error(e.weights + " holds weights that are not finite (" + kv.key() +
                        (ema ? ", in the average of weights" : "") + ")",
                    "a run that diverged? Its earlier checkpoints (--keep-checkpoints) may not");
  auto loader = make_loader(o, d, plan, device, WorldInfo{}, false);
  Timer timer;
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
  r.model = mo.name;
  r.data = d.val->describe();
  r.device = device.str();
  r.classes = mo.classes;
  r.res = plan.val_res;
  r.tta = o.tta;
  r.tta_shifts = o.tta_shifts;
  r.ema = ema;
  r.images = static_cast<int64_t>(t.evaluated);
  r.skipped = d.val->size() - r.images;
  const auto s = t.scores();
  r.loss = s.loss, r.top1 = s.top1, r.top5 = s.top5;
  r.seconds = timer.seconds();
  return r;
}

}  // namespace faster::train

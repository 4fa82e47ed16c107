// The data options' ranges (data_options.h) and the loader plan (data_plan.h).
#include "faster/train/data_plan.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "faster/core/error.h"
#include "faster/core/log.h"
#include "faster/data/loader/image_loader.h"

namespace faster::train {
namespace {

// Flip::kAuto decided from the data: Fashion-MNIST (data::named_fashion_mnist) and CIFAR-10 flip;
// MNIST's digits and any other set do not (a mirrored 3 is no 3).
Flip resolve_flip(Flip flip, const TrainingData& d) {
  if (flip != Flip::kAuto) return flip;
  if (!d.arrays()) return Flip::kOff;
  const bool mirrorable =
      d.train_arrays->fashion_mnist || d.train_arrays->name.rfind("cifar10/", 0) == 0;
  return mirrorable ? Flip::kOn : Flip::kOff;
}

// What the training split decides: flips, JPEG data's crop side, a batch no larger than a rank's
// share.  Checks the options that only apply to some data.
void settle_training(DataOptions& o, const TrainingData& d, const WorldInfo& w) {
  const bool on_device = as_stored_on_device(o, d);
  if (!on_device && o.translate > 0)
    FASTER_THROW(
        "--translate shifts small datasets as stored on the device: it needs --loader device, "
        "and no --res");
  // As stored on the device, the data decides --flip auto; crops (JPEG data, --res) flip unless
  // --flip off; the host loader serves a small dataset as stored unflipped.
  const bool crops = !d.arrays() || o.res.res > 0;
  if (!on_device && !crops && o.flip == Flip::kOn)
    FASTER_THROW(
        "--flip on flips a small dataset as stored with --loader device, or its crops (--res N); "
        "the host loader serves it unflipped");
  o.flip = on_device                       ? resolve_flip(o.flip, d)
           : crops && o.flip != Flip::kOff ? Flip::kOn
                                           : Flip::kOff;
  if (!d.arrays() && o.res.res == 0) o.res.res = 224;  // JPEG images of any size need a crop size
  if (o.ra_reps > 0 && !crops)
    FASTER_THROW(
        "--ra-sampler repeats each image in other random crops: a small dataset as stored has "
        "none (give --res N for crops)");
  if (o.loader == LoaderKind::kDevice && (!d.arrays() || o.res.res > 0))
    FASTER_THROW("--loader device serves small datasets as stored; with ",
                 d.arrays() ? "--res (crops)" : "JPEG data", " use --loader host");
  // A batch holds at most the rank's share of the training split: larger, it is that share (the
  // rate per 256, the memory estimate and the loader all go by the batch that is trained).
  if (const int64_t share = (d.train->size() + w.world - 1) / w.world;
      o.batch > share && share > 0) {
    if (w.is_main())
      log::info("--batch ", o.batch, " is more than the ", share, " training images",
                w.world > 1 ? " per rank" : "", ": batches of ", share);
    o.batch = share;
  }
}

// nvJPEG, or libjpeg-turbo on the CPU: --decode, and for auto the device and the images' size.
data::DecodeOn choose_decoder(const DataOptions& o, const TrainingData& d, int model_channels,
                              torch::Device device) {
  bool nvjpeg = o.decode == Decode::kNvjpeg;
  // A gray model's JPEG data decodes to gray, on the CPU (the image loader refuses nvJPEG).
  const bool gray_jpeg = model_channels == 1 && !d.arrays();
  if (o.decode == Decode::kAuto && !d.arrays() && !gray_jpeg)
    nvjpeg = data::auto_decode(d.train ? *d.train : *d.val, device) == data::DecodeOn::kNvjpeg;
  return nvjpeg ? data::DecodeOn::kNvjpeg : data::DecodeOn::kCpu;
}

}  // namespace

void validate(const DataOptions& o) {
  check_range("--batch", o.batch, 1, data::kMaxBatch);
  check_range("--workers", o.workers, 0, data::kMaxWorkers);
  check_range("--cpu-share", o.cpu_share.value, 0, 1);
  check_range("--nvjpeg-threads", o.nvjpeg_threads, 1, 64);
  check_range("--translate", o.translate, 0, 16);
  check_res_side(o.res.res);
  if (!(o.crop_scale_min > 0 && o.crop_scale_min <= 1))
    FASTER_USAGE_ERROR("--crop-scale must be in (0, 1] (got ", o.crop_scale_min, ")");
  if (!(o.crop_scale_max >= o.crop_scale_min && o.crop_scale_max <= 1))
    FASTER_USAGE_ERROR("--crop-scale's largest crop must be in [", o.crop_scale_min, ", 1] (got ",
                       o.crop_scale_max, ")");
  if (!(o.crop_ratio_min > 0 && o.crop_ratio_max >= o.crop_ratio_min &&
        std::isfinite(o.crop_ratio_max)))
    FASTER_USAGE_ERROR("--crop-ratio must be two ratios 0 < A <= B (got ", o.crop_ratio_min, ", ",
                       o.crop_ratio_max, ")");
  if (o.val_res != 0) check_range("--val-res", o.val_res, 8, data::kMaxSide);
  if (o.val_resize != 0)
    check_range("--val-resize", o.val_resize, std::max(o.val_res, 8), 2 * data::kMaxSide);
  check_range("--ra-magnitude", o.auto_augment.ra_magnitude, 0, 30);
  check_range("--augmix-severity", o.auto_augment.augmix_severity, 1, 10);
  check_range("--ra-reps", o.ra_reps, 0, 256);
  if (o.last_batch == data::LastBatch::kPad)
    FASTER_USAGE_ERROR("--last-batch must be keep or drop (padding is for evaluation batches)");
}

bool as_stored_on_device(const DataOptions& o, const TrainingData& d) {
  return o.loader == LoaderKind::kDevice && d.arrays() && o.res.res == 0;
}

DataPlan plan_data(const DataOptions& o, const TrainingData& d, int model_channels,
                   torch::Device device, const WorldInfo& w) {
  DataPlan plan;
  plan.options = o;
  auto& p = plan.options;
  if (d.train) settle_training(p, d, w);
  if (p.workers == 0)
    p.workers =
        d.arrays() ? 4 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  plan.as_stored_on_device = as_stored_on_device(p, d);
  plan.crops = !d.arrays() || p.res.res > 0;
  // The model's channels (a gray array repeated into RGB), NHWC batches for a channels-last model
  // (JPEG data: the ring is laid out so).
  plan.channels = model_channels > 0 && model_channels != d.channels() ? model_channels : 0;
  plan.layout = p.channels_last && !d.arrays() ? data::Layout::kNHWC : data::Layout::kNCHW;
  plan.decode = choose_decoder(p, d, model_channels, device);
  // Validation crop and resize: val_res (default: the training resolution, 224 for JPEG data) and
  // val_resize (default val_res * 256 / 224, torchvision's ratio).
  plan.val_res = p.val_res > 0 ? p.val_res : p.res.res > 0 ? p.res.res : d.arrays() ? 0 : 224;
  plan.val_resize = p.val_resize > 0 ? p.val_resize : plan.val_res * 256 / 224;
  return plan;
}

data::LoaderOptions loader_options(const DataPlan& plan, const TrainingData& d,
                                   torch::Device device, const WorldInfo& w, bool train) {
  const DataOptions& o = plan.options;
  data::LoaderOptions lo;
  lo.batch = static_cast<int>(o.batch);
  lo.sampler.seed = o.seed;
  lo.sampler.shuffle = train;
  lo.sampler.rank = w.rank;
  lo.sampler.world = w.world;
  lo.sampler.even = train;  // test shards need not be equal, and must not repeat samples
  lo.sampler.repetitions = train ? o.ra_reps : 0;
  lo.last_batch = train ? o.last_batch : data::LastBatch::kKeep;
  lo.workers = o.workers;
  lo.device = device;
  lo.channels = plan.channels;
  lo.layout = plan.layout;
  lo.output = data::OutputType::kUint8;
  lo.on_bad_image = o.on_bad_image;
  lo.rrc.scale_min = o.crop_scale_min;
  lo.rrc.scale_max = o.crop_scale_max;
  lo.rrc.ratio_min = o.crop_ratio_min;
  lo.rrc.ratio_max = o.crop_ratio_max;
  lo.rrc.flip = o.flip == Flip::kOn;
  if (train) lo.auto_augment = o.auto_augment;
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
  return lo;
}

std::unique_ptr<data::Loader> make_loader(const DataPlan& plan, const TrainingData& d,
                                          const data::LoaderOptions& lo, bool train) {
  const DataOptions& o = plan.options;
  const bool as_stored = lo.transform == data::Transform::kNone;
  if (train && o.loader == LoaderKind::kSynthetic) {
    data::SyntheticData s;
    s.samples = d.train->size();
    s.channels = plan.channels > 0 ? plan.channels : d.channels();
    s.size = as_stored ? d.train_arrays->height : lo.size;
    s.classes = static_cast<int>(d.classes.size());
    return data::make_synthetic_loader(s, lo);
  }
  if (as_stored && o.loader == LoaderKind::kDevice && plan.channels == 0)
    return data::make_device_loader(train ? *d.train_arrays : *d.val_arrays, lo);
  return std::make_unique<data::ImageLoader>(train ? d.train : d.val, lo);
}

}  // namespace faster::train

// The image pipeline's options as a user states them: `faster train`'s data flags and the Python
// module's ImageLoader keywords fill the same fields.  Each option's default is its initializer
// here and its range is checked once, in validate(DataOptions) (a UsageError naming the flag);
// data_plan.h turns the options, the data and the device into what the loaders are asked for.
#pragma once

#include <cstdint>

#include "faster/core/enum_names.h"
#include "faster/data/loader/cpu_share.h"
#include "faster/data/loader/loader.h"
#include "faster/train/schedule.h"

namespace faster::train {

// host = worker threads fill pinned batches that a side stream copies to the device (or nvJPEG
// decodes there); device = a small dataset resident on the device, batches gathered there;
// synthetic = one random batch at every step, no data read (the model alone, for measuring).
enum class LoaderKind { kHost, kDevice, kSynthetic };
inline constexpr EnumName<LoaderKind> kLoaderNames[] = {{"host", LoaderKind::kHost},
                                                        {"device", LoaderKind::kDevice},
                                                        {"synthetic", LoaderKind::kSynthetic}};

// JPEG decoding for image datasets: auto = nvJPEG on a CUDA device, the CPU otherwise.
enum class Decode { kAuto, kCpu, kNvjpeg };
inline constexpr EnumName<Decode> kDecodeChoices[] = {
    {"auto", Decode::kAuto}, {"cpu", Decode::kCpu}, {"nvjpeg", Decode::kNvjpeg}};

// Horizontal flips of small datasets as stored (training and test-time augmentation): auto (the
// speedrun recipes') flips Fashion-MNIST and CIFAR-10 (a mirrored coat is a coat) but not MNIST's
// digits or an unknown set.
enum class Flip { kAuto, kOn, kOff };
inline constexpr EnumName<Flip> kFlipNames[] = {
    {"auto", Flip::kAuto}, {"on", Flip::kOn}, {"off", Flip::kOff}};

struct DataOptions {
  int64_t batch = 512;  // per process
  uint64_t seed = 0;    // the per-epoch shuffle and the crops (and a run's weights)
  // Image datasets (and arrays with a resolution): random-resized-crop side per epoch; 0 keeps
  // arrays as stored.  Validation: shorter side to val_resize (0: val_res * 256 / 224), center
  // crop val_res (0: the training resolution).
  ResSchedule res{0};
  int val_res = 0, val_resize = 0;
  // RandomResizedCrop's scale=(crop_scale_min, crop_scale_max) of the image's area and
  // ratio=(crop_ratio_min, crop_ratio_max) of width to height: torchvision's defaults.
  double crop_scale_min = data::RandomResizedCropOptions{}.scale_min;
  double crop_scale_max = data::RandomResizedCropOptions{}.scale_max;
  double crop_ratio_min = data::RandomResizedCropOptions{}.ratio_min;
  double crop_ratio_max = data::RandomResizedCropOptions{}.ratio_max;
  Decode decode = Decode::kAuto;
  // nvJPEG: the share of images the loader threads decode anyway, adapted while training (auto),
  // with 4 threads feeding the decoder, one batch in flight each: on an H200 with 16 cores the
  // fastest ResNet-18 from JPEG of the settings tried (BENCHMARKS.md).  `faster load` alone keeps
  // a fixed share of none and 2 threads, where the engines alone were faster.
  data::CpuShare cpu_share{data::kAutoShareStart, true};
  int nvjpeg_threads = 4;
  data::BadImagePolicy on_bad_image = data::BadImagePolicy::kSkip;
  // Small datasets as stored, device loader: shift by up to `translate` pixels (zeros enter) and
  // flip per `flip` (crops flip unless it is off); `alternate_flips`: ShiftFlipOptions::alternate.
  int translate = 0;
  Flip flip = Flip::kOff;
  bool alternate_flips = false;
  // Crops (JPEG data, or --res): torchvision's --auto-augment policy and --ra-magnitude.
  data::AutoAugmentOptions auto_augment;
  // Training: torchvision's repeated-augmentation sampler with this many repetitions of each
  // image (data::SamplerOptions::repetitions; 0: off).  Crops only: each repetition is its own.
  int ra_reps = 0;
  bool channels_last = false;  // JPEG batches arrive NHWC, as a channels-last model takes them
  LoaderKind loader = LoaderKind::kHost;
  // Loader threads; 0: the default, all cores for JPEG data and 4 for a small dataset (held in
  // memory, a sample is a copy).
  int workers = 0;
  data::LastBatch last_batch = data::LastBatch::kKeep;  // training batches: keep or drop
};

// The options' ranges, each named by its flag (a UsageError); the resolution's schedule is
// checked with the run's epochs (validate(ResSchedule, epochs)).
void validate(const DataOptions& o);

}  // namespace faster::train

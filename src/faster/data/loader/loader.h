// One interface for every loader the trainer and `faster load` take: batches of (images, labels)
// on the training device, an epoch at a time, with DistributedSampler semantics per rank and one
// rule for the short last batch.  Three implementations:
//  - ImageLoader (image_loader.h): worker threads read, decode, crop, resize and store samples of
//    any Source (JPEG folders, LMDB, arrays held in memory) into a fixed ring of pinned host
//    batches, copied to the device on a side stream (or decoded there by nvJPEG);
//  - the device-resident loader (make_device_loader): a small array dataset uploaded whole, each
//    batch one gather on the device;
//  - the synthetic loader (make_synthetic_loader): the model alone, no data read.
#pragma once

#include <torch/types.h>

#include <memory>
#include <optional>
#include <vector>

#include "faster/core/enum_names.h"
#include "faster/core/flag_rules.h"
#include "faster/data/augment/auto_augment.h"
#include "faster/data/augment/crop_params.h"
#include "faster/data/augment/resample.h"
#include "faster/data/augment/shift_flip.h"
#include "faster/data/augment/store.h"
#include "faster/data/decode/jpeg_decoder.h"
#include "faster/data/loader/cpu_share.h"
#include "faster/data/loader/sampler.h"
#include "faster/data/sources/array_dataset.h"

namespace faster::data {

// What a loader may be asked for (larger values are refused as usage errors, before anything is
// allocated): images per batch, threads, the side of an output image.
constexpr int kMaxBatch = 1 << 20;
constexpr int kMaxWorkers = static_cast<int>(faster::kMaxWorkers);  // core/flag_rules.h
constexpr int kMaxSide = 4096;

// Label of the padding rows of a padded batch: cross_entropy's default ignore_index.
constexpr int64_t kPadLabel = -100;

enum class BadImagePolicy { kSkip, kFail };
inline constexpr EnumName<BadImagePolicy> kBadImageNames[] = {{"skip", BadImagePolicy::kSkip},
                                                              {"fail", BadImagePolicy::kFail}};
enum class DecodeOn { kCpu, kNvjpeg };
inline constexpr EnumName<DecodeOn> kDecodeNames[] = {{"cpu", DecodeOn::kCpu},
                                                      {"nvjpeg", DecodeOn::kNvjpeg}};

// What each image goes through before it is stored into its batch.
enum class Transform {
  kTrain,  // torchvision RandomResizedCrop(size) + RandomHorizontalFlip
  kVal,    // torchvision Resize(val_resize) + CenterCrop(val_size)
  kNone,   // as stored: sources of fixed-size pixels (arrays in memory), no crop, no resize
};

struct LoaderOptions {
  int batch = 256;
  int workers = 4;
  int ring = 0;  // host batch buffers; 0: enough to keep every worker busy
  Transform transform = Transform::kTrain;
  int size = 224;    // kTrain output side
  int max_size = 0;  // kTrain: the largest side set_size() may ask for later (0: size)
  int val_resize = 256, val_size = 224;
  // Channels of the output: 0 keeps the data's (3 for JPEG, the array's own for arrays); 3 turns
  // a grayscale array into RGB (the value repeated), as a grayscale JPEG decodes.
  int channels = 0;
  RandomResizedCropOptions rrc;
  // kTrain: torchvision's TrivialAugmentWide, RandAugment or AutoAugment after the crop and flip
  // (auto_augment.h), on the CPU: with nvJPEG, the training images then decode on the CPU too.
  AutoAugmentOptions auto_augment;
  // The device-resident loader, kNone: a random shift and flip of every sample (shift_flip.h).
  ShiftFlipOptions shift_flip;
  Filter filter = Filter::kAntialias;
  OutputType output = OutputType::kUint8;
  Layout layout = Layout::kNCHW;
  Normalization norm;
  // uint8 batches on a CUDA device are normalized there (same layout) before next() returns, as
  // `dtype` (float32, float16 or bfloat16: computed in float32, then rounded once).
  bool normalize_on_device = true;
  torch::ScalarType dtype = torch::kFloat32;
  BadImagePolicy on_bad_image = BadImagePolicy::kSkip;
  SamplerOptions sampler;
  LastBatch last_batch = LastBatch::kKeep;
  JpegDecoderOptions decoder;
  torch::Device device = torch::kCPU;
  // kNvjpeg: decode on the GPU (needs a CUDA device; output uint8 there, normalized unless told
  // otherwise).  cpu_share: the fraction of GPU-decodable images the workers decode anyway, to use
  // idle cores beside the GPU's JPEG engines, fixed or adapted (cpu_share.h).  gpu_stages: threads
  // feeding the GPU, each with its own decoder, so one batch decodes while the next is prepared.
  DecodeOn decode = DecodeOn::kCpu;
  CpuShare cpu_share;
  int gpu_stages = 2;
};

struct Batch {
  torch::Tensor images;          // [batch, C, H, W] or [batch, H, W, C] (layout), on the device
  torch::Tensor labels;          // [batch] int64, on the device; padding rows are kPadLabel
  int64_t size = 0;              // real samples; rows from `size` on are padding (LastBatch::kPad)
  std::vector<int64_t> indices;  // source index of each real sample (after bad-image replacement)
  int64_t epoch = 0, number = 0;
};

// uint8 pixels -> (x / 255 - mean) / std as float (or `dtype`), on the device the constants were
// made for: the one place this is written (the image loader on the device, the step for uint8
// batches, the images the data-initialised layers start from).  Empty (defined() false) until
// constructed.
class PixelNormalizer {
 public:
  PixelNormalizer() = default;
  // Constants for `channels` of `norm` in `layout`, on `device`.
  PixelNormalizer(const Normalization& norm, int channels, Layout layout, torch::Device device,
                  torch::ScalarType dtype = torch::kFloat32);
  bool defined() const { return mean_.defined(); }
  // A float copy of `pixels` (uint8, `layout`, on the device), normalized.
  torch::Tensor operator()(const torch::Tensor& pixels) const;

 private:
  torch::Tensor mean_, std_;  // 255 * mean and 255 * std, shaped to broadcast over a batch
  torch::ScalarType dtype_ = torch::kFloat32;
  Layout layout_ = Layout::kNCHW;
};

class Loader {
 public:
  virtual ~Loader() = default;
  // Starts (or restarts) an epoch: the sampler's order for `epoch`; batches still in flight from
  // an earlier epoch are abandoned.
  virtual void start_epoch(int64_t epoch) = 0;
  // The next batch of the epoch, or nothing at its end.  Its tensors stay valid until the next
  // call (on the CPU they may be the ring's memory: clone them to keep them).
  virtual std::optional<Batch> next() = 0;
  virtual int64_t batches_per_epoch() const = 0;
  // Real samples this rank delivers per epoch (padding not counted, a dropped batch left out).
  virtual int64_t samples_per_epoch() const = 0;
};

// The device-resident loader: `data` uploaded to o.device once as uint8 NCHW, each epoch's order
// uploaded once, a batch one gather (o.batch, o.sampler, o.last_batch, o.shift_flip and o.device
// are read).  With o.shift_flip the epoch's samples are shifted and flipped at once when it starts.
std::unique_ptr<Loader> make_device_loader(const ArrayDataset& data, const LoaderOptions& o);

// What the synthetic loader imitates: a dataset of `samples` images of `channels` x size x size
// in `classes` classes.
struct SyntheticData {
  int64_t samples = 0;
  int channels = 3, size = 224, classes = 1000;
};
// The model alone (PyTorch users' "synthetic data" benchmark): one batch of random uint8 pixels
// and random labels made on o.device once (seeded by o.sampler.seed) and delivered at every step,
// as many batches per epoch and rank as the dataset would give (o.batch, o.sampler, o.last_batch,
// o.layout and o.device are read).
std::unique_ptr<Loader> make_synthetic_loader(const SyntheticData& data, const LoaderOptions& o);

}  // namespace faster::data

// Where to crop and whether to flip, per sample: torchvision's RandomResizedCrop +
// RandomHorizontalFlip (train) and Resize + CenterCrop (val).  Random draws come from a generator
// seeded by (seed, epoch, index), so a run is reproducible whatever the thread scheduling.
#pragma once

#include <cstdint>

#include "faster/data/image.h"

namespace faster::data {

// A small, fast generator (splitmix64) seeded per sample.
class SampleRng {
 public:
  SampleRng(uint64_t seed, int64_t epoch, int64_t index);
  uint64_t next_u64();
  double uniform(double lo, double hi);     // [lo, hi)
  int64_t integer(int64_t lo, int64_t hi);  // [lo, hi], inclusive like Python's randint
  bool coin() { return next_u64() >> 63; }

 private:
  uint64_t state_;
};

struct RandomResizedCropOptions {
  double scale_min = 0.08, scale_max = 1.0;             // of the image's area
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;  // width / height, drawn log-uniformly
  int tries = 10;                                       // then the center-crop fallback
  // train_crop: mirror half the crops (RandomHorizontalFlip); false mirrors none (the coin is
  // still drawn, so the crops are those of a flipping run).
  bool flip = true;
};

// torchvision RandomResizedCrop.get_params: up to `tries` random (area, ratio) draws, keeping the
// first that fits; otherwise the whole image, cropped centrally to the nearest allowed ratio.
// `fell_back` (optional) says whether the fallback was taken.
Rect random_resized_crop(int width, int height, const RandomResizedCropOptions& options,
                         SampleRng& rng, bool* fell_back = nullptr);

// torchvision Resize(resize) (shorter side to `resize`, the other truncated as torchvision does)
// then CenterCrop(crop), expressed as the region of the source image that ends up in the output.
RegionF center_crop_region(int width, int height, int resize, int crop);

// The integer rectangle of source pixels that covers `region` (what the decoder must produce).
Rect enclosing_rect(const RegionF& region, int width, int height);

struct TrainCrop {
  Rect crop;
  bool flip = false;
};

// Train-time parameters of sample `index` in `epoch`: its crop, then the flip coin.
TrainCrop train_crop(int width, int height, const RandomResizedCropOptions& options, uint64_t seed,
                     int64_t epoch, int64_t index);

}  // namespace faster::data

// Crop parameters, transcribed from torchvision.transforms (RandomResizedCrop.get_params,
// Resize's size rule, CenterCrop's offsets), including Python's round-half-to-even.
#include "faster/data/augment/crop_params.h"

#include <algorithm>
#include <cmath>

#include "faster/core/error.h"

namespace faster::data {
namespace {

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Python's round(): halves go to the even neighbour (nearbyint under the default rounding mode).
int py_round(double v) {
  return static_cast<int>(std::nearbyint(v));
}

}  // namespace

SampleRng::SampleRng(uint64_t seed, int64_t epoch, int64_t index) : state_(seed) {
  // Mix each input through the generator so that nearby (epoch, index) pairs are unrelated.
  state_ ^= splitmix(state_) + static_cast<uint64_t>(epoch);
  state_ ^= splitmix(state_) + static_cast<uint64_t>(index);
  splitmix(state_);
}

uint64_t SampleRng::next_u64() {
  return splitmix(state_);
}

double SampleRng::uniform(double lo, double hi) {
  return lo + (hi - lo) * ((next_u64() >> 11) * (1.0 / 9007199254740992.0));
}

int64_t SampleRng::integer(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(next_u64() % span);  // bias < span / 2^64: negligible here
}

Rect random_resized_crop(int width, int height, const RandomResizedCropOptions& o, SampleRng& rng,
                         bool* fell_back) {
  const double area = double(width) * height;
  const double log_lo = std::log(o.ratio_min), log_hi = std::log(o.ratio_max);
  if (fell_back) *fell_back = false;
  for (int t = 0; t < o.tries; ++t) {
    const double target = area * rng.uniform(o.scale_min, o.scale_max);
    const double ratio = std::exp(rng.uniform(log_lo, log_hi));
    const int w = py_round(std::sqrt(target * ratio));
    const int h = py_round(std::sqrt(target / ratio));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int y = static_cast<int>(rng.integer(0, height - h));
      const int x = static_cast<int>(rng.integer(0, width - w));
      return {x, y, w, h};
    }
  }
  if (fell_back) *fell_back = true;
  const double in_ratio = double(width) / height;
  int w = width, h = height;
  if (in_ratio < o.ratio_min) {
    h = py_round(w / o.ratio_min);
  } else if (in_ratio > o.ratio_max) {
    w = py_round(h * o.ratio_max);
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

RegionF center_crop_region(int width, int height, int resize, int crop) {
  if (crop > resize) FASTER_THROW("val crop ", crop, " is larger than the resize ", resize);
  // torchvision Resize(int): the shorter side becomes `resize`, the longer int(resize * long /
  // short).
  int rw = resize, rh = resize;
  if (width < height) rh = static_cast<int>(double(resize) * height / width);
  if (height < width) rw = static_cast<int>(double(resize) * width / height);
  const int top = py_round((rh - crop) / 2.0), left = py_round((rw - crop) / 2.0);
  const double sx = double(width) / rw, sy = double(height) / rh;
  return {left * sx, top * sy, crop * sx, crop * sy};
}

Rect enclosing_rect(const RegionF& r, int width, int height) {
  const int x0 = std::max(0, static_cast<int>(std::floor(r.x)));
  const int y0 = std::max(0, static_cast<int>(std::floor(r.y)));
  const int x1 = std::min(width, static_cast<int>(std::ceil(r.x + r.width)));
  const int y1 = std::min(height, static_cast<int>(std::ceil(r.y + r.height)));
  return {x0, y0, std::max(1, x1 - x0), std::max(1, y1 - y0)};
}

TrainCrop train_crop(int width, int height, const RandomResizedCropOptions& options, uint64_t seed,
                     int64_t epoch, int64_t index) {
  SampleRng rng(seed, epoch, index);
  TrainCrop t;
  t.crop = random_resized_crop(width, height, options, rng);
  const bool coin = rng.coin();
  t.flip = options.flip && coin;
  return t;
}

}  // namespace faster::data

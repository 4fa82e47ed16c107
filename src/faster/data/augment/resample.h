// Separable resampling of 8-bit interleaved images: a fractional source region to a destination
// size, with the two filters datasets are prepared and trained with.  Compute only: the Resampler
// owns its weight tables and scratch, reused across calls, and knows nothing of threads.
#pragma once

#include <cstdint>
#include <vector>

#include "faster/data/image.h"

namespace faster::data {

enum class Filter {
  // torchvision/PIL antialiased bilinear: a triangle filter whose support widens with the downscale
  // factor (plain bilinear when upscaling).  What Resize(antialias=True) and PIL do.
  kAntialias,
  // OpenCV INTER_AREA when downscaling: each output pixel averages the source pixels it covers,
  // with fractional coverage at its edges.  Upscaling falls back to the bilinear filter.
  kArea,
};

class Resampler {
 public:
  // Resamples `region` of `src` into all of `dst` (same channel count).  Source pixels outside the
  // region are never read: the region's edges are clamped as if it had been cropped first
  // (torchvision's crop-then-resize).  The region must lie inside src (checked).
  void resample(const ImageView& src, const RegionF& region, const MutableImageView& dst,
                Filter filter);

 private:
  // One axis' weights: for output i, taps start at first_[i], count_[i] taps of weights_ from
  // offset i * max_taps_.
  struct Axis {
    std::vector<int> first, count;
    std::vector<float> weights;
    int max_taps = 0;
  };
  static void compute_axis(double start, double length, int in_lo, int in_hi, int out_size,
                           Filter filter, Axis& axis);

  Axis horizontal_, vertical_;
  std::vector<float> rows_;  // vertically resampled region rows, float to avoid double rounding
  std::vector<float> line_;  // two output rows' sums before rounding
  std::vector<const uint8_t*> taps_;  // the source rows of one output row (as many as the factor)
};

}  // namespace faster::data

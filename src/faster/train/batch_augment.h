// The augmentations torchvision's classification references apply to whole tensors after
// Normalize, here on the device inside the training step: RandomErasing (per image, p, scale
// (0.02, 0.33), ratio (0.3, 3.3), value 0: the mean colour once normalized) and RandomMixup /
// RandomCutmix (one of the two per batch, as their RandomChoice picks, pairing each image with
// the one before it in the batch, batch.roll(1, 0); the targets become the mixed one-hot labels).
//
// Each step's draws are made on the host from a generator seeded by (seed, step, rank), so a
// resumed run draws what the straight one did, and written into small device tensors of fixed
// address that the step reads: a captured CUDA graph replays them with each step's new draws.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <random>
#include <vector>

namespace faster::train {

struct BatchAugmentOptions {
  double random_erase = 0;  // --random-erase: each image's chance of an erased rectangle
  double mixup_alpha = 0;   // --mixup-alpha: Beta(alpha, alpha) mixing weight; 0: off
  double cutmix_alpha = 0;  // --cutmix-alpha: Beta(alpha, alpha) area kept; 0: off
  bool any() const { return random_erase > 0 || mixes(); }
  bool mixes() const { return mixup_alpha > 0 || cutmix_alpha > 0; }
};

// One image's erased rectangle, rows [top, top + h) and columns [left, left + w); h = 0: none.
struct EraseBox {
  int64_t top = 0, left = 0, h = 0, w = 0;
};

// A batch's mixing: pixels outside the box are image * keep + previous image * (1 - keep), inside
// it the previous image's (cutmix); the target is label * lam + previous label * (1 - lam).
struct MixDraw {
  double keep = 1, lam = 1;
  int64_t top = 0, bottom = 0, left = 0, right = 0;  // cutmix's box: rows [top, bottom), columns
  bool cutmix = false;
};

// torchvision's RandomErasing.get_params for an h x w image: up to 10 tries of an area in
// scale x h * w and a log-uniform aspect ratio, sides rounded half to even, kept where both are
// under the image's; else nothing erased.  `p`: the chance of trying at all.
EraseBox draw_erase(std::mt19937_64& gen, double p, int64_t h, int64_t w);
// RandomMixup or RandomCutmix (one at random where both alphas are set) for h x w images: lambda
// from Beta(alpha, alpha); cutmix's box centred on a uniform pixel with sides sqrt(1 - lambda) of
// the image's (halves truncated, clipped to the image), its lambda then 1 - box area / image area.
MixDraw draw_mix(std::mt19937_64& gen, const BatchAugmentOptions& o, int64_t h, int64_t w);

// One step's draws.
struct BatchDraws {
  std::vector<EraseBox> erase;  // per image (empty without random erasing)
  MixDraw mix;                  // keep = lam = 1 without mixing
};

class BatchAugment {
 public:
  BatchAugment(const BatchAugmentOptions& o, uint64_t seed, int rank, int64_t max_batch,
               torch::Device device);

  bool mixes() const { return o_.mixes(); }
  // Draws step `step`'s parameters for n images of h x w and writes them where the step reads
  // them (asynchronously; the next kernels on the current stream see them); returns them.
  BatchDraws draw(int64_t step, int64_t n, int64_t h, int64_t w);
  // x: the step's normalized images [n, c, h, w] (any memory format); returns them erased and
  // mixed as drawn, in x's memory format.
  torch::Tensor images(const torch::Tensor& x) const;
  // y: the labels [n]; returns the soft targets [n, classes] (float) of the mix drawn.
  torch::Tensor targets(const torch::Tensor& y, int64_t classes) const;

 private:
  BatchAugmentOptions o_;
  uint64_t seed_;
  int rank_;
  torch::Tensor boxes_;  // [max_batch, 4] int64: top, bottom, left, right (erase)
  torch::Tensor mix_;    // [6] float: keep, lam, top, bottom, left, right
};

}  // namespace faster::train

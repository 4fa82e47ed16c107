// torchvision's automatic augmentation policies on one uint8 HWC image, after its random-resized
// crop and flip, as torchvision's train.py applies them (--auto-augment): TrivialAugmentWide
// (ta_wide: one op of 14 at a random one of 31 strengths), RandAugment (ra: 2 ops at strength
// --ra-magnitude of 31) and AutoAugment's ImageNet policy (imagenet: one of 25 pairs of ops, each
// with its probability and strength).  Each op is torchvision's functional op on a uint8 tensor
// (transforms/autoaugment.py's _apply_op on a tensor, zeros entering; the geometry bilinear, as
// train.py's default --interpolation passes it, or nearest, the transforms' own default), computed
// in float32 as torch does, so the results match torchvision's to a level (ties of the nearest
// sample excepted: tests/data/auto_augment_test.cpp states the tolerances).  No LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "faster/core/enum_names.h"
#include "faster/data/augment/crop_params.h"
#include "faster/data/image.h"

namespace faster::data {

enum class AutoAugmentPolicy { kNone, kTrivialAugmentWide, kRandAugment, kImagenet, kAugMix };
inline constexpr EnumName<AutoAugmentPolicy> kAutoAugmentNames[] = {
    {"none", AutoAugmentPolicy::kNone},
    {"ta_wide", AutoAugmentPolicy::kTrivialAugmentWide},
    {"ra", AutoAugmentPolicy::kRandAugment},
    {"imagenet", AutoAugmentPolicy::kImagenet},
    {"augmix", AutoAugmentPolicy::kAugMix}};

struct AutoAugmentOptions {
  AutoAugmentPolicy policy = AutoAugmentPolicy::kNone;
  int ra_magnitude = 9;  // RandAugment's strength, a bin of 31 (torchvision's --ra-magnitude)
  int ra_ops = 2;        // RandAugment's ops per image
  // AugMix (torchvision's defaults): strengths drawn from the first `augmix_severity` of 10 bins
  // (--augmix-severity, 1-10), `mixture_width` chains of 1-3 ops (chain_depth <= 0) or of
  // chain_depth ops, mixed by Dirichlet(alpha) weights, the original by a Beta(alpha, alpha) one.
  int augmix_severity = 3;
  int mixture_width = 3;
  int chain_depth = -1;
  double alpha = 1.0;
  bool bilinear = true;  // the geometric ops' sampling: bilinear (train.py's) or nearest
  bool on() const { return policy != AutoAugmentPolicy::kNone; }
};

// The ops, in torchvision's order of TrivialAugmentWide's and RandAugment's spaces (Invert is
// AutoAugment's only).
enum class AugmentOp {
  kIdentity,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
  kRotate,
  kBrightness,
  kColor,
  kContrast,
  kSharpness,
  kPosterize,
  kSolarize,
  kAutoContrast,
  kEqualize,
  kInvert
};
inline constexpr EnumName<AugmentOp> kAugmentOpNames[] = {
    {"Identity", AugmentOp::kIdentity},
    {"ShearX", AugmentOp::kShearX},
    {"ShearY", AugmentOp::kShearY},
    {"TranslateX", AugmentOp::kTranslateX},
    {"TranslateY", AugmentOp::kTranslateY},
    {"Rotate", AugmentOp::kRotate},
    {"Brightness", AugmentOp::kBrightness},
    {"Color", AugmentOp::kColor},
    {"Contrast", AugmentOp::kContrast},
    {"Sharpness", AugmentOp::kSharpness},
    {"Posterize", AugmentOp::kPosterize},
    {"Solarize", AugmentOp::kSolarize},
    {"AutoContrast", AugmentOp::kAutoContrast},
    {"Equalize", AugmentOp::kEqualize},
    {"Invert", AugmentOp::kInvert}};

// An op with its signed strength, as _apply_op takes it (degrees for Rotate, pixels for the
// translations, a factor - 1 for the colour ops, bits for Posterize, a threshold for Solarize).
struct AppliedOp {
  AugmentOp op = AugmentOp::kIdentity;
  double magnitude = 0;
};

// A policy's strengths for `op` over `bins` bins for an h x w image (torchvision's
// _augmentation_space), and whether a random sign applies; empty: the op takes none.
struct OpSpace {
  std::vector<double> magnitudes;
  bool signed_ = false;
};
OpSpace op_space(AutoAugmentPolicy policy, AugmentOp op, int bins, int height, int width);
// The ops a policy draws from, in torchvision's order.
std::vector<AugmentOp> policy_ops(AutoAugmentPolicy policy);
// AutoAugment's ImageNet sub-policies: pairs of (op, probability, strength bin or -1).
struct SubPolicyOp {
  AugmentOp op;
  double p;
  int bin;
};
const std::vector<std::pair<SubPolicyOp, SubPolicyOp>>& imagenet_policy();

// The ops drawn for one image of h x w (a policy's own draws, from rng).
std::vector<AppliedOp> draw_ops(const AutoAugmentOptions& o, int height, int width, SampleRng& rng);

// Applies one op to `src` into `dst` (same size and channels, 1 or 3; not the same memory), the
// geometric ones sampling bilinearly or at the nearest pixel.
void apply_op(const AppliedOp& op, const ImageView& src, const MutableImageView& dst,
              bool bilinear = true);

// Applies `ops` in turn to `image` (read and rewritten, mirrored first where `flip`), using
// `scratch`; false where there is nothing to do (no op but Identity: `image` as it was, unflipped).
bool apply_ops(const std::vector<AppliedOp>& ops, bool flip, bool bilinear, ImageBuffer& image,
               ImageBuffer& scratch);

// A worker's scratch for the policies.
struct AugmentBuffers {
  ImageBuffer scratch, chain;
  std::vector<float> mix;
};

// AugMix's draws for one image: the original's weight and its chains' (float32, as torch samples
// them: the chains' are Dirichlet draws times the augmented share, 1 - original), each chain's
// ops.
struct AugMixDraw {
  float original = 1;
  std::vector<float> dirichlet;  // the chains' Dirichlet draw, before the share
  float augmented = 0;           // the Beta draw's other part
  std::vector<std::vector<AppliedOp>> chains;
};
AugMixDraw draw_augmix(const AutoAugmentOptions& o, int height, int width, SampleRng& rng);
// AugMix.forward on `image` (rewritten, mirrored first where `flip`): the original and each
// chain's result weighted, summed in float32 in torch's order, truncated to uint8.
void apply_augmix(const AugMixDraw& d, bool flip, bool bilinear, ImageBuffer& image,
                  AugmentBuffers& b);

// Draws `o`'s policy for `image` (the crop as resized) from `rng` and applies it after the flip;
// false where nothing was done (`image` as it was, unflipped).
bool augment_image(const AutoAugmentOptions& o, SampleRng& rng, bool flip, ImageBuffer& image,
                   AugmentBuffers& b);

}  // namespace faster::data

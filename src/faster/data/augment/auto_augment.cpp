// torchvision's automatic augmentation ops, as its tensor functional ops compute them.
#include "faster/data/augment/auto_augment.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>

#include "faster/core/error.h"

namespace faster::data {
namespace {

constexpr double kPi = 3.14159265358979323846;

// torch.linspace(start, end, steps) as float32 values: its CPU kernel's own rounding depends on
// the vector width the machine runs it at, so they agree with torchvision's to a float32 ulp.
std::vector<double> linspace(double start, double end, int steps) {
  std::vector<double> v(steps);
  const double step = steps > 1 ? (end - start) / (steps - 1) : 0.0;
  for (int i = 0; i < steps; ++i)
    v[i] = static_cast<float>(i < steps / 2 ? start + step * i : end - step * (steps - i - 1));
  return v;
}

// top - (arange(bins) / ((bins - 1) / divisor)).round(): Posterize's bits (top 8, AugMix's 4).
std::vector<double> posterize_bits(int bins, double divisor, int top) {
  std::vector<double> v(bins);
  const float d = static_cast<float>((bins - 1) / divisor);
  for (int i = 0; i < bins; ++i) v[i] = top - std::nearbyint(static_cast<float>(i) / d);
  return v;
}

uint8_t to_uint8(float v) {  // clamp(0, 255) then .to(uint8): truncation
  return static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, v)));
}

// _blend(img1, img2, ratio): ratio * img1 + (1 - ratio) * img2 in float32, each product rounded.
struct Blend {
  float a, b;
  explicit Blend(double ratio) : a(static_cast<float>(ratio)), b(static_cast<float>(1.0 - ratio)) {}
  uint8_t operator()(float x, float y) const {
    const float ax = a * x, by = b * y;
    return to_uint8(ax + by);
  }
};

// A horizontal flip in place.
void mirror(ImageBuffer& image) {
  const int w = image.width(), c = image.channels();
  for (int y = 0; y < image.height(); ++y) {
    uint8_t* row = image.row(y);
    for (int a = 0, b = w - 1; a < b; ++a, --b)
      for (int k = 0; k < c; ++k) std::swap(row[a * c + k], row[b * c + k]);
  }
}

// Applies `ops` in turn to `image` (Identity skipped), through `scratch`.
void apply_chain(const std::vector<AppliedOp>& ops, bool bilinear, ImageBuffer& image,
                 ImageBuffer& scratch) {
  for (const auto& op : ops) {
    if (op.op == AugmentOp::kIdentity) continue;
    scratch.reshape(image.width(), image.height(), image.channels());
    apply_op(op, image.view(), scratch.mutable_view(), bilinear);
    std::swap(image, scratch);
  }
}

// rgb_to_grayscale of a uint8 pixel: (0.2989 r + 0.587 g + 0.114 b) in float32, truncated.
uint8_t gray(const uint8_t* p) {
  const float r = 0.2989f * p[0], g = 0.587f * p[1], b = 0.114f * p[2];
  return static_cast<uint8_t>(r + g + b);
}

// _get_inverse_affine_matrix(center, angle, translate, scale 1, shear) in degrees.
std::array<double, 6> inverse_affine(double cx, double cy, double angle, double tx, double ty,
                                     double shear_x, double shear_y) {
  const double rot = angle * kPi / 180, sx = shear_x * kPi / 180, sy = shear_y * kPi / 180;
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m{d, -b, 0.0, -c, a, 0.0};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

// The matrix applied through _gen_affine_grid and grid_sample(zeros, align_corners False), in
// float32: output pixel (x, y) reads the source at
// ((theta . (xc, yc, 1)) / (size / 2) + 1) * size - 1) / 2: the nearest pixel, or the four around
// it weighted bilinearly and rounded (half to even, as torch.round) back to uint8; zeros outside.
void affine(const std::array<double, 6>& matrix, bool bilinear, const ImageView& src,
            const MutableImageView& dst) {
  const int w = src.width, h = src.height, c = src.channels;
  const float hw = 0.5f * static_cast<float>(w), hh = 0.5f * static_cast<float>(h);
  float r[6];
  for (int i = 0; i < 6; ++i) r[i] = static_cast<float>(matrix[i]) / (i < 3 ? hw : hh);
  const auto at = [&](int64_t x, int64_t y, int k) -> float {
    return x >= 0 && x < w && y >= 0 && y < h ? src.row(static_cast<int>(y))[x * c + k] : 0.0f;
  };
  for (int y = 0; y < h; ++y) {
    const float yc = -static_cast<float>(h) * 0.5f + 0.5f + static_cast<float>(y);
    uint8_t* out = dst.row(y);
    for (int x = 0; x < w; ++x, out += c) {
      const float xc = -static_cast<float>(w) * 0.5f + 0.5f + static_cast<float>(x);
      const float gx = xc * r[0] + yc * r[1] + r[2], gy = xc * r[3] + yc * r[4] + r[5];
      const float ix = ((gx + 1.0f) * static_cast<float>(w) - 1) / 2;
      const float iy = ((gy + 1.0f) * static_cast<float>(h) - 1) / 2;
      if (!bilinear) {
        const auto sx = static_cast<int64_t>(std::nearbyint(ix));
        const auto sy = static_cast<int64_t>(std::nearbyint(iy));
        for (int k = 0; k < c; ++k) out[k] = static_cast<uint8_t>(at(sx, sy, k));
        continue;
      }
      // grid_sample's weights, as its CPU kernel forms them.
      const float x0 = std::floor(ix), y0 = std::floor(iy);
      const float tw = ix - x0, te = 1 - tw, tn = iy - y0, ts = 1 - tn;
      const float nw = ts * te, ne = ts * tw, sw = tn * te, se = tn * tw;
      const auto X = static_cast<int64_t>(x0), Y = static_cast<int64_t>(y0);
      for (int k = 0; k < c; ++k) {
        const float v = at(X, Y, k) * nw + at(X + 1, Y, k) * ne + at(X, Y + 1, k) * sw +
                        at(X + 1, Y + 1, k) * se;
        out[k] = static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, std::nearbyint(v))));
      }
    }
  }
}

template <typename F>
void per_value(const ImageView& src, const MutableImageView& dst, F f) {
  const int n = src.width * src.channels;
  for (int y = 0; y < src.height; ++y) {
    const uint8_t* in = src.row(y);
    uint8_t* out = dst.row(y);
    for (int i = 0; i < n; ++i) out[i] = f(in[i]);
  }
}

// _blend of every value with its own reference (a pixel's gray level, a constant...).
template <typename Ref>
void blend_with(const ImageView& src, const MutableImageView& dst, double ratio, Ref ref) {
  const Blend blend(ratio);
  const int c = src.channels;
  for (int y = 0; y < src.height; ++y) {
    const uint8_t* in = src.row(y);
    uint8_t* out = dst.row(y);
    for (int x = 0; x < src.width; ++x)
      for (int k = 0; k < c; ++k) out[x * c + k] = blend(in[x * c + k], ref(x, y, k, in + x * c));
  }
}

void contrast(const ImageView& src, const MutableImageView& dst, double factor) {
  double sum = 0;  // integers: exact, as float32's sum is below 2^24
  for (int y = 0; y < src.height; ++y) {
    const uint8_t* in = src.row(y);
    for (int x = 0; x < src.width; ++x)
      sum += src.channels == 3 ? gray(in + 3 * x) : in[x * src.channels];
  }
  const int64_t n = int64_t{src.width} * src.height * (src.channels == 3 ? 1 : src.channels);
  const float mean = static_cast<float>(sum) / static_cast<float>(n);
  blend_with(src, dst, factor, [&](int, int, int, const uint8_t*) { return mean; });
}

// _blurred_degenerate_image: the 3x3 kernel [1 1 1; 1 5 1; 1 1 1] / 13 inside, rounded; the
// border as it is.  Then blended.
void sharpness(const ImageView& src, const MutableImageView& dst, double factor) {
  const int w = src.width, h = src.height, c = src.channels;
  if (w <= 2 || h <= 2) return per_value(src, dst, [](uint8_t v) { return v; });
  const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
  const auto blurred = [&](int x, int y, int k, const uint8_t* p) -> float {
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) return p[k];
    float s = 0;
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx)
        s += (dx == 0 && dy == 0 ? k5 : k1) * src.row(y + dy)[(x + dx) * c + k];
    return std::nearbyint(s);
  };
  blend_with(src, dst, factor, blurred);
}

void autocontrast(const ImageView& src, const MutableImageView& dst) {
  const int c = src.channels;
  std::array<float, 3> lo{255, 255, 255}, scale{1, 1, 1};
  std::array<float, 3> hi{0, 0, 0};
  for (int y = 0; y < src.height; ++y)
    for (int x = 0; x < src.width; ++x)
      for (int k = 0; k < c; ++k) {
        const float v = src.row(y)[x * c + k];
        lo[k] = std::min(lo[k], v), hi[k] = std::max(hi[k], v);
      }
  for (int k = 0; k < c; ++k) {
    scale[k] = 255.0f / (hi[k] - lo[k]);
    if (!std::isfinite(scale[k])) lo[k] = 0, scale[k] = 1;
  }
  for (int y = 0; y < src.height; ++y)
    for (int x = 0; x < src.width; ++x)
      for (int k = 0; k < c; ++k)
        dst.row(y)[x * c + k] = to_uint8((src.row(y)[x * c + k] - lo[k]) * scale[k]);
}

void equalize(const ImageView& src, const MutableImageView& dst) {
  const int c = src.channels;
  for (int k = 0; k < c; ++k) {
    std::array<int64_t, 256> hist{};
    for (int y = 0; y < src.height; ++y)
      for (int x = 0; x < src.width; ++x) ++hist[src.row(y)[x * c + k]];
    // The sum of the non-zero bins but the last non-zero one, over 255.
    int64_t total = 0, last = 0;
    for (int64_t v : hist)
      if (v != 0) total += v, last = v;
    const int64_t step = (total - last) / 255;
    std::array<uint8_t, 256> lut{};
    int64_t cumulative = 0;
    for (int v = 0; v < 256; ++v) {
      // lut[v] = (cumsum[v - 1] + step // 2) // step, clamped; identity where step is 0.
      lut[v] = step == 0
                   ? static_cast<uint8_t>(v)
                   : static_cast<uint8_t>(std::min<int64_t>(255, (cumulative + step / 2) / step));
      cumulative += hist[v];
    }
    for (int y = 0; y < src.height; ++y)
      for (int x = 0; x < src.width; ++x) dst.row(y)[x * c + k] = lut[src.row(y)[x * c + k]];
  }
}

}  // namespace

std::vector<AugmentOp> policy_ops(AutoAugmentPolicy policy) {
  using A = AugmentOp;
  if (policy == AutoAugmentPolicy::kAugMix)  // its all_ops space, in its order: no Identity
    return {A::kShearX,    A::kShearY,   A::kTranslateX,   A::kTranslateY, A::kRotate,
            A::kPosterize, A::kSolarize, A::kAutoContrast, A::kEqualize,   A::kBrightness,
            A::kColor,     A::kContrast, A::kSharpness};
  std::vector<AugmentOp> ops{A::kIdentity,     A::kShearX,    A::kShearY,     A::kTranslateX,
                             A::kTranslateY,   A::kRotate,    A::kBrightness, A::kColor,
                             A::kContrast,     A::kSharpness, A::kPosterize,  A::kSolarize,
                             A::kAutoContrast, A::kEqualize};
  if (policy == AutoAugmentPolicy::kImagenet) {  // AutoAugment: no Identity, Invert too
    ops.erase(ops.begin());
    ops.push_back(A::kInvert);
  }
  return ops;
}

OpSpace op_space(AutoAugmentPolicy policy, AugmentOp op, int bins, int height, int width) {
  const bool wide = policy == AutoAugmentPolicy::kTrivialAugmentWide;
  const bool augmix = policy == AutoAugmentPolicy::kAugMix;
  const double shear = wide ? 0.99 : 0.3, color = wide ? 0.99 : 0.9, rotate = wide ? 135.0 : 30.0;
  const auto translate = [&](int side) {
    return wide ? 32.0 : augmix ? side / 3.0 : 150.0 / 331.0 * side;
  };
  switch (op) {
    case AugmentOp::kShearX:
    case AugmentOp::kShearY:
      return {linspace(0, shear, bins), true};
    case AugmentOp::kTranslateX:
      return {linspace(0, translate(width), bins), true};
    case AugmentOp::kTranslateY:
      return {linspace(0, translate(height), bins), true};
    case AugmentOp::kRotate:
      return {linspace(0, rotate, bins), true};
    case AugmentOp::kBrightness:
    case AugmentOp::kColor:
    case AugmentOp::kContrast:
    case AugmentOp::kSharpness:
      return {linspace(0, color, bins), true};
    case AugmentOp::kPosterize:
      return {posterize_bits(bins, wide ? 6 : 4, augmix ? 4 : 8), false};
    case AugmentOp::kSolarize:
      return {linspace(255, 0, bins), false};
    default:
      return {};
  }
}

const std::vector<std::pair<SubPolicyOp, SubPolicyOp>>& imagenet_policy() {
  using A = AugmentOp;
  // torchvision's AutoAugmentPolicy.IMAGENET, in its order.
  static const std::vector<std::pair<SubPolicyOp, SubPolicyOp>> policy{
      {{A::kPosterize, 0.4, 8}, {A::kRotate, 0.6, 9}},
      {{A::kSolarize, 0.6, 5}, {A::kAutoContrast, 0.6, -1}},
      {{A::kEqualize, 0.8, -1}, {A::kEqualize, 0.6, -1}},
      {{A::kPosterize, 0.6, 7}, {A::kPosterize, 0.6, 6}},
      {{A::kEqualize, 0.4, -1}, {A::kSolarize, 0.2, 4}},
      {{A::kEqualize, 0.4, -1}, {A::kRotate, 0.8, 8}},
      {{A::kSolarize, 0.6, 3}, {A::kEqualize, 0.6, -1}},
      {{A::kPosterize, 0.8, 5}, {A::kEqualize, 1.0, -1}},
      {{A::kRotate, 0.2, 3}, {A::kSolarize, 0.6, 8}},
      {{A::kEqualize, 0.6, -1}, {A::kPosterize, 0.4, 6}},
      {{A::kRotate, 0.8, 8}, {A::kColor, 0.4, 0}},
      {{A::kRotate, 0.4, 9}, {A::kEqualize, 0.6, -1}},
      {{A::kEqualize, 0.0, -1}, {A::kEqualize, 0.8, -1}},
      {{A::kInvert, 0.6, -1}, {A::kEqualize, 1.0, -1}},
      {{A::kColor, 0.6, 4}, {A::kContrast, 1.0, 8}},
      {{A::kRotate, 0.8, 8}, {A::kColor, 1.0, 2}},
      {{A::kColor, 0.8, 8}, {A::kSolarize, 0.8, 7}},
      {{A::kSharpness, 0.4, 7}, {A::kInvert, 0.6, -1}},
      {{A::kShearX, 0.6, 5}, {A::kEqualize, 1.0, -1}},
      {{A::kColor, 0.4, 0}, {A::kEqualize, 0.6, -1}},
      {{A::kEqualize, 0.4, -1}, {A::kSolarize, 0.2, 4}},
      {{A::kSolarize, 0.6, 5}, {A::kAutoContrast, 0.6, -1}},
      {{A::kInvert, 0.6, -1}, {A::kEqualize, 1.0, -1}},
      {{A::kColor, 0.6, 4}, {A::kContrast, 1.0, 8}},
      {{A::kEqualize, 0.8, -1}, {A::kEqualize, 0.6, -1}}};
  return policy;
}

std::vector<AppliedOp> draw_ops(const AutoAugmentOptions& o, int height, int width,
                                SampleRng& rng) {
  std::vector<AppliedOp> ops;
  const auto sign = [&](const OpSpace& s, double m) { return s.signed_ && rng.coin() ? -m : m; };
  switch (o.policy) {
    case AutoAugmentPolicy::kNone:
      break;
    case AutoAugmentPolicy::kTrivialAugmentWide: {
      const auto names = policy_ops(o.policy);
      const AugmentOp op = names[rng.integer(0, static_cast<int64_t>(names.size()) - 1)];
      const auto space = op_space(o.policy, op, 31, height, width);
      double m = 0;
      if (!space.magnitudes.empty())
        m = space.magnitudes[rng.integer(0, static_cast<int64_t>(space.magnitudes.size()) - 1)];
      ops.push_back({op, sign(space, m)});
      break;
    }
    case AutoAugmentPolicy::kRandAugment: {
      const auto names = policy_ops(o.policy);
      for (int i = 0; i < o.ra_ops; ++i) {
        const AugmentOp op = names[rng.integer(0, static_cast<int64_t>(names.size()) - 1)];
        const auto space = op_space(o.policy, op, 31, height, width);
        const double m = space.magnitudes.empty() ? 0 : space.magnitudes[o.ra_magnitude];
        ops.push_back({op, sign(space, m)});
      }
      break;
    }
    case AutoAugmentPolicy::kAugMix:
      FASTER_CHECK(false, "draw_ops: AugMix mixes chains (draw_augmix)");
    case AutoAugmentPolicy::kImagenet: {
      const auto& policy = imagenet_policy();
      const auto& pair = policy[rng.integer(0, static_cast<int64_t>(policy.size()) - 1)];
      const double probs[2] = {rng.uniform(0, 1), rng.uniform(0, 1)};
      const bool signs[2] = {rng.coin(), rng.coin()};
      int i = 0;
      for (const SubPolicyOp& s : {pair.first, pair.second}) {
        if (probs[i] <= s.p) {
          const auto space = op_space(o.policy, s.op, 10, height, width);
          double m = s.bin >= 0 && !space.magnitudes.empty() ? space.magnitudes[s.bin] : 0;
          if (space.signed_ && !signs[i]) m = -m;  // torchvision negates where its coin is 0
          ops.push_back({s.op, m});
        }
        ++i;
      }
      break;
    }
  }
  return ops;
}

void apply_op(const AppliedOp& a, const ImageView& src, const MutableImageView& dst,
              bool bilinear) {
  FASTER_CHECK(src.width == dst.width && src.height == dst.height && src.channels == dst.channels &&
                   (src.channels == 1 || src.channels == 3),
               "apply_op: images of different shapes");
  const double m = a.magnitude;
  const double cx = -0.5 * src.width, cy = -0.5 * src.height;  // center=[0, 0] of shears
  switch (a.op) {
    case AugmentOp::kShearX:
      return affine(inverse_affine(cx, cy, 0, 0, 0, std::atan(m) * 180 / kPi, 0), bilinear, src,
                    dst);
    case AugmentOp::kShearY:
      return affine(inverse_affine(cx, cy, 0, 0, 0, 0, std::atan(m) * 180 / kPi), bilinear, src,
                    dst);
    case AugmentOp::kTranslateX:
      return affine(inverse_affine(0, 0, 0, std::trunc(m), 0, 0, 0), bilinear, src, dst);
    case AugmentOp::kTranslateY:
      return affine(inverse_affine(0, 0, 0, 0, std::trunc(m), 0, 0), bilinear, src, dst);
    case AugmentOp::kRotate:  // F.rotate: the inverse of -angle about the centre
      return affine(inverse_affine(0, 0, -m, 0, 0, 0, 0), bilinear, src, dst);
    case AugmentOp::kBrightness:
      return blend_with(src, dst, 1 + m, [](int, int, int, const uint8_t*) { return 0.0f; });
    case AugmentOp::kColor:
      if (src.channels == 1) return per_value(src, dst, [](uint8_t v) { return v; });
      return blend_with(src, dst, 1 + m,
                        [](int, int, int, const uint8_t* p) { return float(gray(p)); });
    case AugmentOp::kContrast:
      return contrast(src, dst, 1 + m);
    case AugmentOp::kSharpness:
      return sharpness(src, dst, 1 + m);
    case AugmentOp::kPosterize: {
      const auto mask = static_cast<uint8_t>(-(1 << (8 - static_cast<int>(m))));
      return per_value(src, dst, [mask](uint8_t v) { return static_cast<uint8_t>(v & mask); });
    }
    case AugmentOp::kSolarize:
      return per_value(src, dst, [m](uint8_t v) {
        return static_cast<double>(v) >= m ? static_cast<uint8_t>(255 - v) : v;
      });
    case AugmentOp::kAutoContrast:
      return autocontrast(src, dst);
    case AugmentOp::kEqualize:
      return equalize(src, dst);
    case AugmentOp::kInvert:
      return per_value(src, dst, [](uint8_t v) { return static_cast<uint8_t>(255 - v); });
    case AugmentOp::kIdentity:
      break;
  }
  per_value(src, dst, [](uint8_t v) { return v; });
}

bool apply_ops(const std::vector<AppliedOp>& ops, bool flip, bool bilinear, ImageBuffer& image,
               ImageBuffer& scratch) {
  if (std::all_of(ops.begin(), ops.end(),
                  [](const AppliedOp& a) { return a.op == AugmentOp::kIdentity; }))
    return false;
  if (flip) mirror(image);  // torchvision flips before it augments
  apply_chain(ops, bilinear, image, scratch);
  return true;
}

namespace {
// Gamma(alpha) draws from a SampleRng, through the standard library's distribution.
struct RngBits {
  using result_type = uint64_t;
  SampleRng& rng;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()() { return rng.next_u64(); }
};

// A Dirichlet draw of n parameters alpha (torch._sample_dirichlet: Gammas over their sum), as
// float32.
std::vector<float> dirichlet(double alpha, int n, SampleRng& rng) {
  RngBits bits{rng};
  std::gamma_distribution<double> gamma(alpha, 1.0);
  std::vector<double> g(n);
  double sum = 0;
  for (double& v : g) sum += v = gamma(bits);
  std::vector<float> out(n);
  for (int i = 0; i < n; ++i) out[i] = static_cast<float>(sum > 0 ? g[i] / sum : 1.0 / n);
  return out;
}

}  // namespace

AugMixDraw draw_augmix(const AutoAugmentOptions& o, int height, int width, SampleRng& rng) {
  constexpr int kBins = 10;  // AugMix's _PARAMETER_MAX
  AugMixDraw d;
  const auto beta = dirichlet(o.alpha, 2, rng);
  d.original = beta[0], d.augmented = beta[1];
  d.dirichlet = dirichlet(o.alpha, o.mixture_width, rng);
  const auto ops = policy_ops(AutoAugmentPolicy::kAugMix);
  for (int i = 0; i < o.mixture_width; ++i) {
    const int depth = o.chain_depth > 0 ? o.chain_depth : static_cast<int>(rng.integer(1, 3));
    auto& chain = d.chains.emplace_back();
    for (int k = 0; k < depth; ++k) {
      const AugmentOp op = ops[rng.integer(0, static_cast<int64_t>(ops.size()) - 1)];
      const auto space = op_space(AutoAugmentPolicy::kAugMix, op, kBins, height, width);
      double m = 0;
      if (!space.magnitudes.empty()) m = space.magnitudes[rng.integer(0, o.augmix_severity - 1)];
      if (space.signed_ && rng.coin()) m = -m;
      chain.push_back({op, m});
    }
  }
  return d;
}

void apply_augmix(const AugMixDraw& d, bool flip, bool bilinear, ImageBuffer& image,
                  AugmentBuffers& b) {
  if (flip) mirror(image);  // torchvision flips before it augments
  const size_t n = static_cast<size_t>(image.width()) * image.height() * image.channels();
  b.mix.resize(n);
  // mix = m[0] * image, then += (dirichlet[i] * m[1]) * chain_i, each product rounded to float32
  // (ImageBuffer's rows are contiguous).
  const uint8_t* src = image.data();
  for (size_t k = 0; k < n; ++k) b.mix[k] = d.original * static_cast<float>(src[k]);
  for (size_t i = 0; i < d.chains.size(); ++i) {
    b.chain.reshape(image.width(), image.height(), image.channels());
    std::memcpy(b.chain.data(), src, n);
    apply_chain(d.chains[i], bilinear, b.chain, b.scratch);
    const float w = d.dirichlet[i] * d.augmented;
    const uint8_t* aug = b.chain.data();
    for (size_t k = 0; k < n; ++k) {
      const float term = w * static_cast<float>(aug[k]);
      b.mix[k] += term;
    }
  }
  uint8_t* out = image.data();
  for (size_t k = 0; k < n; ++k) out[k] = to_uint8(b.mix[k]);
}

bool augment_image(const AutoAugmentOptions& o, SampleRng& rng, bool flip, ImageBuffer& image,
                   AugmentBuffers& b) {
  if (o.policy == AutoAugmentPolicy::kAugMix) {
    apply_augmix(draw_augmix(o, image.height(), image.width(), rng), flip, o.bilinear, image, b);
    return true;
  }
  return apply_ops(draw_ops(o, image.height(), image.width(), rng), flip, o.bilinear, image,
                   b.scratch);
}

}  // namespace faster::data

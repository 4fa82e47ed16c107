// Resampler implementation: per-axis weight tables (PIL's antialias formulas, OpenCV's area
// coverage), then a horizontal pass over only the source rows the vertical pass needs, kept in
// float, then the vertical pass, rounded to 8 bits once.
#include "faster/data/augment/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "faster/core/error.h"
#include "faster/core/hot_loop.h"

namespace faster::data {
namespace {

float triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? static_cast<float>(1.0 - x) : 0.0f;
}

// The two hot loops are FASTER_HOT_LOOP: with AVX2 the vertical pass vectorizes over 8 floats
// instead of 4.

// Four floats in one SSE/NEON register (GCC/Clang vector extension, portable across CPUs).
typedef float Float4 __attribute__((vector_size(16)));

inline Float4 load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// RGB output rows `rows` at a time (1 or 2) from float rows of the vertically resampled region
// (x relative to its start), `in_stride` floats apart.  A pixel's three channels are one 4-lane
// multiply-add per tap; the 4th lane reads the next pixel's red (or the row's padding float) and
// is discarded.  Two rows share each pixel's weights and loop: 1.25-1.45x one row at a time.
// Every pixel runs the same `taps` (the most any pixel has; the others' extra weights are zero and
// read finite floats past their taps, so the sums are unchanged): a loop whose length varies from
// pixel to pixel mispredicts its exit at every other pixel.  The sums go to `line` (each pixel's
// 4th lane overwritten by the next pixel) and are rounded to bytes a whole row at a time: per
// pixel, extracting three lanes and storing them byte by byte cost as much as the taps.  kTaps > 0
// fixes the tap count at compile time (the loop unrolled), 0 takes `taps`.
template <int kRows, int kTaps>
FASTER_HOT_LOOP void horizontal_rows_rgb(const float* __restrict in, size_t in_stride, int out_w,
                                         const int* first, int taps, const float* weights,
                                         int max_taps, float* __restrict line,
                                         uint8_t* __restrict out, size_t out_stride) {
  const Float4 half = {0.5f, 0.5f, 0.5f, 0.5f};
  const size_t line_stride = static_cast<size_t>(out_w) * 3 + 1;
  if (kTaps > 0) taps = kTaps;
  for (int x = 0; x < out_w; ++x) {
    const float* p = in + first[x] * 3;
    const float* w = weights + x * max_taps;
    Float4 acc[kRows];
    for (int r = 0; r < kRows; ++r) acc[r] = half;
    for (int k = 0; k < taps; ++k)
      for (int r = 0; r < kRows; ++r) acc[r] += w[k] * load4(p + r * in_stride + 3 * k);
    for (int r = 0; r < kRows; ++r) std::memcpy(line + r * line_stride + x * 3, &acc[r], 16);
  }
  for (int r = 0; r < kRows; ++r) {
    const float* __restrict l = line + r * line_stride;
    uint8_t* __restrict o = out + r * out_stride;
    for (int i = 0; i < out_w * 3; ++i)  // truncation: the sums already have + 0.5
      o[i] = static_cast<uint8_t>(static_cast<int>(std::min(std::max(l[i], 0.0f), 255.0f)));
  }
}

// horizontal_rows_rgb with the tap counts of downscales up to about 3x unrolled.
template <int kRows>
void horizontal_rows_rgb_any(const float* in, size_t in_stride, int out_w, const int* first,
                             int taps, const float* weights, int max_taps, float* line,
                             uint8_t* out, size_t out_stride) {
  auto run = [&](auto fixed) {
    horizontal_rows_rgb<kRows, decltype(fixed)::value>(in, in_stride, out_w, first, taps, weights,
                                                       max_taps, line, out, out_stride);
  };
  switch (taps) {
    case 2:
      return run(std::integral_constant<int, 2>());
    case 3:
      return run(std::integral_constant<int, 3>());
    case 4:
      return run(std::integral_constant<int, 4>());
    case 5:
      return run(std::integral_constant<int, 5>());
    case 6:
      return run(std::integral_constant<int, 6>());
    case 7:
      return run(std::integral_constant<int, 7>());
    case 8:
      return run(std::integral_constant<int, 8>());
    default:
      return run(std::integral_constant<int, 0>());
  }
}

void horizontal_row_any(const float* in, int channels, int out_w, const int* first,
                        const int* count, const float* weights, int max_taps, uint8_t* out) {
  for (int x = 0; x < out_w; ++x) {
    const float* p = in + first[x] * channels;
    const float* w = weights + x * max_taps;
    for (int c = 0; c < channels; ++c) {
      float acc = 0;
      for (int k = 0; k < count[x]; ++k) acc += w[k] * p[k * channels + c];
      out[x * channels + c] = static_cast<uint8_t>(std::clamp(acc + 0.5f, 0.0f, 255.0f));
    }
  }
}

// acc[j] = sum_k w[k] * rows[k][j]: contiguous, so the compiler vectorizes it.  Two taps per pass
// over acc (half the loads and stores of it), added in the same order as one at a time.
FASTER_HOT_LOOP void vertical_row(const uint8_t* const* rows, const float* w, int taps, size_t n,
                                  float* __restrict acc) {
  const uint8_t* __restrict r0 = rows[0];
  const float w0 = w[0];
  int k = 1;
  if (taps >= 2) {
    const uint8_t* __restrict r1 = rows[1];
    const float w1 = w[1];
    for (size_t j = 0; j < n; ++j) acc[j] = w0 * r0[j] + w1 * r1[j];
    k = 2;
  } else {
    for (size_t j = 0; j < n; ++j) acc[j] = w0 * r0[j];
  }
  for (; k + 1 < taps; k += 2) {
    const uint8_t* __restrict ra = rows[k];
    const uint8_t* __restrict rb = rows[k + 1];
    const float wa = w[k], wb = w[k + 1];
    for (size_t j = 0; j < n; ++j) acc[j] = (acc[j] + wa * ra[j]) + wb * rb[j];
  }
  if (k < taps) {
    const uint8_t* __restrict r = rows[k];
    const float wk = w[k];
    for (size_t j = 0; j < n; ++j) acc[j] += wk * r[j];
  }
}

}  // namespace

void Resampler::compute_axis(double start, double length, int in_lo, int in_hi, int out_size,
                             Filter filter, Axis& axis) {
  const double scale = length / out_size;
  const bool area = filter == Filter::kArea && scale >= 1.0;
  const double filterscale = std::max(scale, 1.0);
  const double support = area ? scale : filterscale;  // half-width of the triangle, or box width
  axis.max_taps = static_cast<int>(std::ceil(2 * support)) + 2;
  axis.first.resize(out_size);
  axis.count.resize(out_size);
  axis.weights.assign(static_cast<size_t>(out_size) * axis.max_taps, 0.0f);
  for (int i = 0; i < out_size; ++i) {
    int lo, hi;
    float* w = axis.weights.data() + static_cast<size_t>(i) * axis.max_taps;
    if (area) {  // output pixel i covers [a, b) of the source
      const double a = start + i * scale, b = a + scale;
      lo = std::max(static_cast<int>(std::floor(a)), in_lo);
      hi = std::min(static_cast<int>(std::ceil(b)), in_hi);
      for (int x = lo; x < hi; ++x)
        w[x - lo] = static_cast<float>(std::min(b, x + 1.0) - std::max(a, double(x)));
    } else {  // PIL: a triangle centred on the output pixel, stretched by the downscale factor
      const double center = start + (i + 0.5) * scale;
      lo = std::max(static_cast<int>(std::floor(center - support + 0.5)), in_lo);
      hi = std::min(static_cast<int>(std::floor(center + support + 0.5)), in_hi);
      for (int x = lo; x < hi; ++x) w[x - lo] = triangle((x + 0.5 - center) / filterscale);
    }
    hi = std::max(hi, lo + 1);  // a degenerate region still reads one pixel
    FASTER_CHECK(hi - lo <= axis.max_taps, "resample taps ", hi - lo, " > ", axis.max_taps);
    float total = 0;
    for (int k = 0; k < hi - lo; ++k) total += w[k];
    if (total <= 0) {  // the clamped support missed every weight: nearest pixel
      w[0] = 1, total = 1, hi = lo + 1;
    }
    for (int k = 0; k < hi - lo; ++k) w[k] /= total;
    axis.first[i] = lo;
    axis.count[i] = hi - lo;
  }
}

void Resampler::resample(const ImageView& src, const RegionF& r, const MutableImageView& dst,
                         Filter filter) {
  FASTER_CHECK(src.channels == dst.channels, "resample: channels differ");
  FASTER_CHECK(dst.width > 0 && dst.height > 0 && r.width > 0 && r.height > 0,
               "resample: empty image or region");
  const double eps = 1e-6;
  FASTER_CHECK(r.x >= -eps && r.y >= -eps && r.x + r.width <= src.width + eps &&
                   r.y + r.height <= src.height + eps,
               "resample: region ", r.x, ",", r.y, " ", r.width, "x", r.height, " outside ",
               src.width, "x", src.height);
  // The region's pixels, rounded outwards: the filters never read beyond them.
  const int x_lo = std::max(0, static_cast<int>(std::floor(r.x + eps)));
  const int x_hi = std::min(src.width, static_cast<int>(std::ceil(r.x + r.width - eps)));
  const int y_lo = std::max(0, static_cast<int>(std::floor(r.y + eps)));
  const int y_hi = std::min(src.height, static_cast<int>(std::ceil(r.y + r.height - eps)));
  compute_axis(r.x, r.width, x_lo, std::max(x_hi, x_lo + 1), dst.width, filter, horizontal_);
  compute_axis(r.y, r.height, y_lo, std::max(y_hi, y_lo + 1), dst.height, filter, vertical_);

  // Vertical pass first, over the region's columns only: it is the larger pass (the region has more
  // rows than the output) and vectorizes over contiguous bytes; the horizontal pass then runs on
  // output rows only.  Kept in float in between so pixels are rounded once.
  const int C = src.channels;
  const int in_w = std::max(x_hi, x_lo + 1) - x_lo;
  const size_t row_len = static_cast<size_t>(in_w) * C;
  // Past the last row: the RGB pass's 4th lane and its zero-weight taps (finite floats: zeros when
  // the buffer grows, earlier rows after).
  const size_t need = row_len * dst.height + 3 * horizontal_.max_taps + 1;
  if (rows_.size() < need) rows_.resize(need);  // grows only: no refill per call
  const auto& v = vertical_;
  if (taps_.size() < static_cast<size_t>(v.max_taps)) taps_.resize(v.max_taps);
  const uint8_t** taps = taps_.data();
  for (int y = 0; y < dst.height; ++y) {
    for (int k = 0; k < v.count[y]; ++k) taps[k] = src.row(v.first[y] + k) + size_t(x_lo) * C;
    vertical_row(taps, v.weights.data() + size_t(y) * v.max_taps, v.count[y], row_len,
                 rows_.data() + y * row_len);
  }
  auto& h = horizontal_;
  for (int& f : h.first) f -= x_lo;  // relative to the region's first column
  const int h_taps = *std::max_element(h.count.begin(), h.count.end());
  line_.resize(2 * (static_cast<size_t>(dst.width) * 3 + 1));
  for (int y = 0; y < dst.height;) {
    const float* in = rows_.data() + y * row_len;
    const int* first = h.first.data();
    if (C != 3) {
      horizontal_row_any(in, C, dst.width, first, h.count.data(), h.weights.data(), h.max_taps,
                         dst.row(y));
      y += 1;
    } else if (y + 1 < dst.height) {
      horizontal_rows_rgb_any<2>(in, row_len, dst.width, first, h_taps, h.weights.data(),
                                 h.max_taps, line_.data(), dst.row(y), dst.stride);
      y += 2;
    } else {
      horizontal_rows_rgb_any<1>(in, row_len, dst.width, first, h_taps, h.weights.data(),
                                 h.max_taps, line_.data(), dst.row(y), dst.stride);
      y += 1;
    }
  }
}

}  // namespace faster::data

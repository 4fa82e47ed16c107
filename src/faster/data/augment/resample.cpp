// Resampler implementation: per-axis weight tables (PIL's antialias formulas, OpenCV's area
// coverage), then a horizontal pass over only the source rows the vertical pass needs, kept in
// float, then the vertical pass, rounded to 8 bits once.
#include "faster/data/augment/resample.h"

#include <algorithm>
#include <cmath>

#include "faster/core/error.h"

namespace faster::data {
namespace {

float triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? static_cast<float>(1.0 - x) : 0.0f;
}

template <int C>
void horizontal_row(const uint8_t* src, int out_w, const int* first, const int* count,
                    const float* weights, int max_taps, float* dst) {
  for (int x = 0; x < out_w; ++x) {
    const uint8_t* p = src + first[x] * C;
    const float* w = weights + x * max_taps;
    float acc[C] = {};
    for (int k = 0; k < count[x]; ++k)
      for (int c = 0; c < C; ++c) acc[c] += w[k] * p[k * C + c];
    for (int c = 0; c < C; ++c) dst[x * C + c] = acc[c];
  }
}

void horizontal_row_any(const uint8_t* src, int channels, int out_w, const int* first,
                        const int* count, const float* weights, int max_taps, float* dst) {
  for (int x = 0; x < out_w; ++x) {
    const uint8_t* p = src + first[x] * channels;
    const float* w = weights + x * max_taps;
    for (int c = 0; c < channels; ++c) {
      float acc = 0;
      for (int k = 0; k < count[x]; ++k) acc += w[k] * p[k * channels + c];
      dst[x * channels + c] = acc;
    }
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

  const int row_min = vertical_.first.front();
  const int row_max = vertical_.first.back() + vertical_.count.back();
  const int C = src.channels;
  const size_t row_len = static_cast<size_t>(dst.width) * C;
  const size_t need = row_len * (row_max - row_min) + row_len;  // + one accumulator row
  if (rows_.size() < need) rows_.resize(need);                  // grows only: no refill per call
  const auto& h = horizontal_;
  for (int y = row_min; y < row_max; ++y) {
    float* out = rows_.data() + (y - row_min) * row_len;
    if (C == 3)
      horizontal_row<3>(src.row(y), dst.width, h.first.data(), h.count.data(), h.weights.data(),
                        h.max_taps, out);
    else
      horizontal_row_any(src.row(y), C, dst.width, h.first.data(), h.count.data(), h.weights.data(),
                         h.max_taps, out);
  }
  float* acc = rows_.data() + row_len * (row_max - row_min);
  const auto& v = vertical_;
  for (int y = 0; y < dst.height; ++y) {
    const float* w = v.weights.data() + static_cast<size_t>(y) * v.max_taps;
    std::fill(acc, acc + row_len, 0.0f);
    for (int k = 0; k < v.count[y]; ++k) {
      const float* in = rows_.data() + (v.first[y] - row_min + k) * row_len;
      const float wk = w[k];
      for (size_t j = 0; j < row_len; ++j) acc[j] += wk * in[j];
    }
    uint8_t* out = dst.row(y);
    for (size_t j = 0; j < row_len; ++j)
      out[j] = static_cast<uint8_t>(std::clamp(acc[j] + 0.5f, 0.0f, 255.0f));
  }
}

}  // namespace faster::data

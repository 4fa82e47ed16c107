// Store implementation: one pass over the image; a flip only changes which source column is read,
// and a gray source feeding RGB output reads its one channel three times.
#include "faster/data/augment/store.h"

#include "faster/core/error.h"

namespace faster::data {
namespace {

// Calls put(y, x, p) for every pixel of the (optionally flipped) image; p points at its channels.
template <typename Put>
void for_each_pixel(const ImageView& src, bool flip, Put put) {
  const int c = src.channels;
  for (int y = 0; y < src.height; ++y) {
    const uint8_t* row = src.row(y);
    for (int x = 0; x < src.width; ++x) put(y, x, row + c * (flip ? src.width - 1 - x : x));
  }
}

// Writes value(p[k * kStep], k) for every pixel and output channel k < kOut in `layout`; the
// channel counts are constants so the per-pixel loop unrolls.
template <int kOut, int kStep, typename T, typename Value>
void store_as(const ImageView& src, bool flip, Layout layout, T* dst, Value value) {
  const size_t plane = static_cast<size_t>(src.width) * src.height;
  if (layout == Layout::kNHWC) {
    for_each_pixel(src, flip, [&](int y, int x, const uint8_t* p) {
      T* q = dst + (static_cast<size_t>(y) * src.width + x) * kOut;
      for (int k = 0; k < kOut; ++k) q[k] = value(p[k * kStep], k);
    });
  } else {
    for_each_pixel(src, flip, [&](int y, int x, const uint8_t* p) {
      const size_t i = static_cast<size_t>(y) * src.width + x;
      for (int k = 0; k < kOut; ++k) dst[k * plane + i] = value(p[k * kStep], k);
    });
  }
}

template <typename T, typename Value>
void store(const ImageView& src, bool flip, Layout layout, T* dst, int channels, Value value) {
  const int out = channels > 0 ? channels : src.channels;
  if (src.channels == 3 && out == 3) return store_as<3, 1>(src, flip, layout, dst, value);
  if (src.channels == 1 && out == 3) return store_as<3, 0>(src, flip, layout, dst, value);
  if (src.channels == 1 && out == 1) return store_as<1, 1>(src, flip, layout, dst, value);
  FASTER_THROW("store: ", src.channels, " source channel(s) cannot make ", out);
}

}  // namespace

std::vector<int64_t> batch_shape(Layout layout, int64_t n, int64_t channels, int64_t height,
                                 int64_t width) {
  if (layout == Layout::kNCHW) return {n, channels, height, width};
  return {n, height, width, channels};
}

void store_uint8(const ImageView& src, bool flip, Layout layout, uint8_t* dst, int channels) {
  store(src, flip, layout, dst, channels, [](uint8_t v, int) { return v; });
}

void store_float(const ImageView& src, bool flip, Layout layout, const Normalization& norm,
                 float* dst, int channels) {
  float scale[3], shift[3];  // (v / 255 - mean) / std as one multiply-add
  for (int c = 0; c < 3; ++c) {
    scale[c] = 1.0f / (255.0f * norm.std[c]);
    shift[c] = -norm.mean[c] / norm.std[c];
  }
  store(src, flip, layout, dst, channels,
        [&](uint8_t v, int k) { return v * scale[k] + shift[k]; });
}

}  // namespace faster::data

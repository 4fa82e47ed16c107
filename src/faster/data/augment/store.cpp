// Store implementation: one pass over the image; a flip only changes which source column is read.
#include "faster/data/augment/store.h"

namespace faster::data {
namespace {

// Calls put(channel, y, x, value) for every pixel of the (optionally flipped) image.
template <typename Put>
void for_each_pixel(const ImageView& src, bool flip, Put put) {
  for (int y = 0; y < src.height; ++y) {
    const uint8_t* row = src.row(y);
    for (int x = 0; x < src.width; ++x) {
      const uint8_t* p = row + 3 * (flip ? src.width - 1 - x : x);
      put(y, x, p);
    }
  }
}

}  // namespace

std::vector<int64_t> batch_shape(Layout layout, int64_t n, int64_t side) {
  if (layout == Layout::kNCHW) return {n, 3, side, side};
  return {n, side, side, 3};
}

void store_uint8(const ImageView& src, bool flip, Layout layout, uint8_t* dst) {
  const size_t plane = static_cast<size_t>(src.width) * src.height;
  if (layout == Layout::kNHWC) {
    for_each_pixel(src, flip, [&](int y, int x, const uint8_t* p) {
      uint8_t* q = dst + (static_cast<size_t>(y) * src.width + x) * 3;
      q[0] = p[0], q[1] = p[1], q[2] = p[2];
    });
  } else {
    for_each_pixel(src, flip, [&](int y, int x, const uint8_t* p) {
      const size_t i = static_cast<size_t>(y) * src.width + x;
      dst[i] = p[0], dst[plane + i] = p[1], dst[2 * plane + i] = p[2];
    });
  }
}

void store_float(const ImageView& src, bool flip, Layout layout, const Normalization& norm,
                 float* dst) {
  const size_t plane = static_cast<size_t>(src.width) * src.height;
  float scale[3], shift[3];  // (v / 255 - mean) / std as one multiply-add
  for (int c = 0; c < 3; ++c) {
    scale[c] = 1.0f / (255.0f * norm.std[c]);
    shift[c] = -norm.mean[c] / norm.std[c];
  }
  if (layout == Layout::kNHWC) {
    for_each_pixel(src, flip, [&](int y, int x, const uint8_t* p) {
      float* q = dst + (static_cast<size_t>(y) * src.width + x) * 3;
      for (int c = 0; c < 3; ++c) q[c] = p[c] * scale[c] + shift[c];
    });
  } else {
    for_each_pixel(src, flip, [&](int y, int x, const uint8_t* p) {
      const size_t i = static_cast<size_t>(y) * src.width + x;
      for (int c = 0; c < 3; ++c) dst[c * plane + i] = p[c] * scale[c] + shift[c];
    });
  }
}

}  // namespace faster::data

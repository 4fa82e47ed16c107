// JPEG fixtures generated at test time (no binary blobs): photo-like content from the synth
// renderer, encoded with libjpeg in every layout the decoder must handle, plus hand-crafted broken
// files.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "faster/data/decode/jpeg_encoder.h"
#include "faster/data/image.h"
#include "faster/tools/synth.h"

namespace faster::test {

inline void photo(int width, int height, data::ImageBuffer& out, int64_t index = 7) {
  tools::render_synth_image(42, 3, index, width, height, out);
}

// channels: 1 = grayscale file, 3 = YCbCr, 4 = YCCK (CMYK with the Adobe marker).
inline std::vector<uint8_t> make_jpeg(int width, int height, int channels = 3,
                                      data::JpegEncodeOptions options = {}) {
  data::ImageBuffer rgb, img;
  photo(width, height, rgb);
  img.reshape(width, height, channels);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const uint8_t* p = rgb.row(y) + 3 * x;
      uint8_t* q = img.row(y) + channels * x;
      if (channels == 1) q[0] = static_cast<uint8_t>((p[0] * 77 + p[1] * 150 + p[2] * 29) >> 8);
      if (channels >= 3) q[0] = p[0], q[1] = p[1], q[2] = p[2];
      if (channels == 4) q[3] = 255;  // Adobe-inverted CMYK of (r,g,b) without black: (r,g,b,255)
    }
  std::vector<uint8_t> bytes;
  data::JpegEncoder().encode(img.view(), options, bytes);
  return bytes;
}

// Rewrites the frame header's dimensions (SOFn marker) to claim another size.
inline void patch_dimensions(std::vector<uint8_t>& jpeg, int width, int height) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i)
    if (jpeg[i] == 0xFF && (jpeg[i + 1] == 0xC0 || jpeg[i + 1] == 0xC2)) {
      jpeg[i + 5] = static_cast<uint8_t>(height >> 8), jpeg[i + 6] = height & 0xFF;
      jpeg[i + 7] = static_cast<uint8_t>(width >> 8), jpeg[i + 8] = width & 0xFF;
      return;
    }
}

// Peak signal-to-noise ratio of two same-sized 8-bit images (inf when identical).
inline double psnr(const data::ImageView& a, const data::ImageView& b) {
  double se = 0;
  for (int y = 0; y < a.height; ++y)
    for (int x = 0; x < a.width * a.channels; ++x) {
      const double d = double(a.row(y)[x]) - b.row(y)[x];
      se += d * d;
    }
  const double mse = se / (double(a.width) * a.height * a.channels);
  return mse == 0 ? INFINITY : 10 * std::log10(255.0 * 255.0 / mse);
}

inline int max_abs_diff(const data::ImageView& a, const data::ImageView& b) {
  int m = 0;
  for (int y = 0; y < a.height; ++y)
    for (int x = 0; x < a.width * a.channels; ++x)
      m = std::max(m, std::abs(int(a.row(y)[x]) - int(b.row(y)[x])));
  return m;
}

// A view of a sub-rectangle.
inline data::ImageView crop_view(const data::ImageView& v, int x, int y, int w, int h) {
  return {v.row(y) + size_t(x) * v.channels, w, h, v.channels, v.stride};
}

}  // namespace faster::test

// PNG decoding and encoding with libspng, for image trees of PNG files (torchvision's ImageFolder
// reads them too).  A PNG decodes to RGB (or gray) as PIL's Image.open(f).convert("RGB") has it,
// so that faster and a torchvision pipeline see the same pixels: a palette is looked up,
// transparency and gamma are ignored, alpha is dropped, 1/2/4-bit gray is scaled to 8 bits,
// 16-bit samples keep their high byte, but for 16-bit gray without alpha, which PIL clips to 255.
// One PngDecoder (or PngEncoder) per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "faster/data/image.h"

namespace faster::data {

// Whether `data` starts with the PNG signature.
bool is_png(const uint8_t* data, size_t size);

// The formats an image tree may hold besides JPEG and PNG that faster does not read, by their
// file's signature: "BMP", "WebP", "TIFF", "GIF", "PPM/PGM"; empty for anything else.
std::string unsupported_image_format(const uint8_t* data, size_t size);

struct PngInfo {
  int width = 0, height = 0;
  int bit_depth = 0;
  int color_type = 0;  // PNG's: 0 gray, 2 RGB, 3 palette, 4 gray + alpha, 6 RGBA
};

class PngDecoder {
 public:
  // Images with more pixels are refused from their header (as JpegDecoderOptions::max_pixels).
  explicit PngDecoder(int64_t max_pixels = 100'000'000) : max_pixels_(max_pixels) {}

  // The header of `data`; faster::Error names the problem (not a PNG, corrupt, too large).
  PngInfo info(const uint8_t* data, size_t size);
  // Decodes the whole image into `out`: 3 channels (RGB), or 1 with `gray` (gray PNGs as they
  // are, colour ones as PIL's convert("L") weighs them: 299/587/114).  Throws faster::Error on a
  // corrupt or truncated file (bad CRC, bad zlib data, missing rows).
  PngInfo decode(const uint8_t* data, size_t size, ImageBuffer& out, bool gray = false);

 private:
  int64_t max_pixels_;
  std::vector<uint8_t> raw_;  // 16-bit gray samples before clipping
  ImageBuffer rgb_;           // a colour image on its way to gray
};

class PngEncoder {
 public:
  // Encodes an 8-bit image of 1 (gray) or 3 (RGB) channels as a PNG into `out`.
  void encode(const ImageView& image, std::vector<uint8_t>& out);
};

}  // namespace faster::data

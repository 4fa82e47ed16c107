// PNG through libspng: one context per image (owned, freed on every path), the conversions PIL's
// convert("RGB") makes.
#include "faster/data/decode/png_codec.h"

#include <spng.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

#include "faster/core/error.h"

namespace faster::data {
namespace {

constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

struct ContextFree {
  void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};
using Context = std::unique_ptr<spng_ctx, ContextFree>;

// One check per libspng call: its message, in faster's words.
void check(int error, const char* what) {
  if (error != 0) FASTER_THROW("PNG: ", what, ": ", spng_strerror(error));
}

Context decoder_for(const uint8_t* data, size_t size) {
  Context ctx(spng_ctx_new(0));
  if (!ctx) FASTER_THROW("PNG: out of memory");
  check(spng_set_png_buffer(ctx.get(), data, size), "reading");
  // Chunks (text, ICC profiles) are capped: a file cannot make the decoder hold a large cache.
  check(spng_set_chunk_limits(ctx.get(), 1 << 26, 1 << 26), "limits");
  return ctx;
}

}  // namespace

bool is_png(const uint8_t* data, size_t size) {
  return size >= sizeof kSignature && std::memcmp(data, kSignature, sizeof kSignature) == 0;
}

std::string unsupported_image_format(const uint8_t* d, size_t n) {
  const auto starts = [&](std::string_view s, size_t at = 0) {
    return n >= at + s.size() && std::memcmp(d + at, s.data(), s.size()) == 0;
  };
  if (starts("BM")) return "BMP";
  if (starts("RIFF") && starts("WEBP", 8)) return "WebP";
  if (starts(std::string_view("II*\0", 4)) || starts(std::string_view("MM\0*", 4))) return "TIFF";
  if (starts("GIF8")) return "GIF";
  if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6') return "PPM/PGM";
  return "";
}

PngInfo PngDecoder::info(const uint8_t* data, size_t size) {
  if (!is_png(data, size)) FASTER_THROW("not a PNG file");
  auto ctx = decoder_for(data, size);
  spng_ihdr ihdr{};
  check(spng_get_ihdr(ctx.get(), &ihdr), "header");
  PngInfo info{static_cast<int>(ihdr.width), static_cast<int>(ihdr.height), ihdr.bit_depth,
               ihdr.color_type};
  if (int64_t{info.width} * info.height > max_pixels_)
    FASTER_THROW("PNG of ", info.width, "x", info.height, " pixels: more than ", max_pixels_);
  return info;
}

PngInfo PngDecoder::decode(const uint8_t* data, size_t size, ImageBuffer& out, bool gray) {
  const PngInfo info = this->info(data, size);
  auto ctx = decoder_for(data, size);
  const int w = info.width, h = info.height;
  const size_t pixels = static_cast<size_t>(w) * h;
  const bool gray_source = info.color_type == SPNG_COLOR_TYPE_GRAYSCALE ||
                           info.color_type == SPNG_COLOR_TYPE_GRAYSCALE_ALPHA;
  ImageBuffer* target = &out;
  out.reshape(w, h, gray ? 1 : 3);
  if (gray) target = &rgb_;
  if (info.color_type == SPNG_COLOR_TYPE_GRAYSCALE && info.bit_depth == 16) {
    // PIL opens it as 32-bit integers ("I") and clips them to 0..255 on the way to RGB.
    raw_.resize(pixels * 2);
    check(spng_decode_image(ctx.get(), raw_.data(), raw_.size(), SPNG_FMT_RAW, 0), "decoding");
    for (size_t i = 0; i < pixels; ++i) {
      const int v = (raw_[2 * i] << 8) | raw_[2 * i + 1];  // big-endian
      const uint8_t g = static_cast<uint8_t>(v > 255 ? 255 : v);
      if (gray) {
        out.data()[i] = g;
      } else {
        uint8_t* p = out.data() + 3 * i;
        p[0] = p[1] = p[2] = g;
      }
    }
    return info;
  }
  // Everything else through libspng's RGB8: palette looked up, gray scaled to 8 bits and
  // repeated, 16-bit samples' high byte, alpha and tRNS dropped, gamma not applied.
  target->reshape(w, h, 3);
  check(spng_decode_image(ctx.get(), target->data(), pixels * 3, SPNG_FMT_RGB8, 0), "decoding");
  if (!gray) return info;
  for (size_t i = 0; i < pixels; ++i) {
    const uint8_t* p = rgb_.data() + 3 * i;
    out.data()[i] = gray_source
                        ? p[0]
                        : static_cast<uint8_t>((p[0] * 299 + p[1] * 587 + p[2] * 114 + 500) / 1000);
  }
  return info;
}

void PngEncoder::encode(const ImageView& image, std::vector<uint8_t>& out) {
  if (image.channels != 1 && image.channels != 3)
    FASTER_THROW("PNG: cannot encode ", image.channels, " channels");
  Context ctx(spng_ctx_new(SPNG_CTX_ENCODER));
  if (!ctx) FASTER_THROW("PNG: out of memory");
  check(spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1), "encoding");
  spng_ihdr ihdr{};
  ihdr.width = static_cast<uint32_t>(image.width);
  ihdr.height = static_cast<uint32_t>(image.height);
  ihdr.bit_depth = 8;
  ihdr.color_type = image.channels == 1 ? SPNG_COLOR_TYPE_GRAYSCALE : SPNG_COLOR_TYPE_TRUECOLOR;
  check(spng_set_ihdr(ctx.get(), &ihdr), "encoding");
  // libspng takes packed rows: a strided view is copied row by row first.
  const size_t row = static_cast<size_t>(image.width) * image.channels;
  std::vector<uint8_t> packed;
  const uint8_t* pixels = image.data;
  if (image.stride != row) {
    packed.resize(row * image.height);
    for (int y = 0; y < image.height; ++y) std::memcpy(&packed[y * row], image.row(y), row);
    pixels = packed.data();
  }
  check(
      spng_encode_image(ctx.get(), pixels, row * image.height, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE),
      "encoding");
  int error = 0;
  size_t size = 0;
  std::unique_ptr<uint8_t, decltype(&std::free)> buffer(
      static_cast<uint8_t*>(spng_get_png_buffer(ctx.get(), &size, &error)), &std::free);
  check(error, "encoding");
  out.assign(buffer.get(), buffer.get() + size);
}

}  // namespace faster::data

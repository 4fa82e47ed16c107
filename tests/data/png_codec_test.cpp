// PNG decoding against PIL's Image.open(f).convert("RGB") (what torchvision's ImageFolder loader
// does): PNGs of every colour type and bit depth, written here byte by byte (zlib, CRCs), decoded
// by faster and by Debian's python3-pil; within 1 level, measured exact.  And the encoder's PNGs
// decode back to their pixels; damaged files fail with a message.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "faster/core/error.h"
#include "faster/data/decode/png_codec.h"
#include "support/test_support.h"

namespace faster::data {
namespace {
namespace fs = std::filesystem;

// A PNG file: IHDR, optional PLTE and tRNS, one IDAT of unfiltered rows, IEND.
std::string png_file(int width, int height, int bit_depth, int color_type,
                     const std::vector<std::string>& rows, const std::string& plte = "",
                     const std::string& trns = "") {
  const auto be32 = [](uint32_t v) {
    return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  };
  const auto chunk = [&](const std::string& type, const std::string& data) {
    const std::string body = type + data;
    const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(body.data()), body.size());
    return be32(static_cast<uint32_t>(data.size())) + body + be32(static_cast<uint32_t>(crc));
  };
  std::string raw;
  for (const auto& r : rows) raw += '\0' + r;  // filter type 0 per row
  uLongf size = compressBound(raw.size());
  std::string z(size, '\0');
  compress(reinterpret_cast<Bytef*>(z.data()), &size, reinterpret_cast<const Bytef*>(raw.data()),
           raw.size());
  z.resize(size);
  std::string ihdr = be32(width) + be32(height);
  ihdr += {char(bit_depth), char(color_type), 0, 0, 0};
  std::string f = "\x89PNG\r\n\x1a\n";
  f += chunk("IHDR", ihdr);
  if (!plte.empty()) f += chunk("PLTE", plte);
  if (!trns.empty()) f += chunk("tRNS", trns);
  return f + chunk("IDAT", z) + chunk("IEND", "");
}

// Random rows of `bytes_per_row` bytes.
std::vector<std::string> noise(int height, int bytes_per_row, std::mt19937& rng) {
  std::vector<std::string> rows(height, std::string(bytes_per_row, '\0'));
  for (auto& r : rows)
    for (auto& c : r) c = static_cast<char>(rng() & 0xFF);
  return rows;
}

bool have_pil() {
  return test::run_shell("/usr/bin/python3 -c 'import PIL' 2>/dev/null").exit_code == 0;
}

TEST(PngDecoder, EveryKindDecodesAsPilConvertsItToRgb) {
  if (!have_pil()) GTEST_SKIP() << "python3-pil not installed";
  test::TempDir t;
  std::mt19937 rng(7);
  const int w = 13, h = 5;  // odd widths: sub-byte rows end mid-byte
  std::string plte;
  for (int i = 0; i < 256 * 3; ++i) plte += static_cast<char>(rng() & 0xFF);
  // 16-bit gray: values above 255 too (PIL clips them), and small ones.
  std::vector<std::string> gray16(h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int v = (x * 37 + y * 1009) % 700;
      gray16[y] += {char(v >> 8), char(v & 0xFF)};
    }
  const std::vector<std::pair<std::string, std::string>> files = {
      {"rgb8", png_file(w, h, 8, 2, noise(h, w * 3, rng))},
      {"gray8", png_file(w, h, 8, 0, noise(h, w, rng))},
      {"gray1", png_file(w, h, 1, 0, noise(h, (w + 7) / 8, rng))},
      {"gray2", png_file(w, h, 2, 0, noise(h, (w * 2 + 7) / 8, rng))},
      {"gray4", png_file(w, h, 4, 0, noise(h, (w * 4 + 7) / 8, rng))},
      {"palette8", png_file(w, h, 8, 3, noise(h, w, rng), plte)},
      {"palette4", png_file(w, h, 4, 3, noise(h, (w * 4 + 7) / 8, rng), plte.substr(0, 48),
                            std::string("\x00\x80\xff", 3))},
      {"rgba8", png_file(w, h, 8, 6, noise(h, w * 4, rng))},
      {"gray_alpha8", png_file(w, h, 8, 4, noise(h, w * 2, rng))},
      {"rgb16", png_file(w, h, 16, 2, noise(h, w * 6, rng))},
      {"rgba16", png_file(w, h, 16, 6, noise(h, w * 8, rng))},
      {"gray16", png_file(w, h, 16, 0, gray16)},
      {"gray_alpha16", png_file(w, h, 16, 4, noise(h, w * 4, rng))},
      {"rgb8_trns", png_file(w, h, 8, 2, noise(h, w * 3, rng), "", std::string(6, '\x10'))},
  };
  for (const auto& [name, bytes] : files) test::write_file(t / (name + ".png"), bytes);
  const auto r = test::run_shell(
      "cd " + t.path().string() +
      " && /usr/bin/python3 -c \"import glob; from PIL import Image\n"
      "for f in glob.glob('*.png'): open(f + '.rgb', 'wb').write(Image.open(f).convert('RGB')"
      ".tobytes())\" 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  PngDecoder decoder;
  ImageBuffer image, gray;
  for (const auto& [name, bytes] : files) {
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    const PngInfo info = decoder.decode(data, bytes.size(), image);
    ASSERT_EQ(info.width, w) << name;
    ASSERT_EQ(image.channels(), 3) << name;
    const std::string ref = test::read_file(t / (name + ".png.rgb"));
    ASSERT_EQ(ref.size(), static_cast<size_t>(w * h * 3)) << name;
    int worst = 0;
    for (size_t i = 0; i < ref.size(); ++i)
      worst = std::max(worst, std::abs(int(image.data()[i]) - int(uint8_t(ref[i]))));
    EXPECT_LE(worst, 1) << name << ": off by " << worst << " levels from PIL";
    // Gray output: a gray PNG's own samples, a colour one's luma.
    decoder.decode(data, bytes.size(), gray, /*gray=*/true);
    ASSERT_EQ(gray.channels(), 1) << name;
    if (info.color_type == 0 || info.color_type == 4)
      for (int i = 0; i < w * h; ++i) ASSERT_EQ(gray.data()[i], image.data()[3 * i]) << name;
  }
}

TEST(PngCodec, EncodedImagesDecodeToTheirPixelsAndDamageIsNamed) {
  std::mt19937 rng(3);
  PngEncoder encoder;
  PngDecoder decoder;
  for (int channels : {1, 3}) {
    ImageBuffer src;
    src.reshape(31, 17, channels);
    for (size_t i = 0; i < size_t{31} * 17 * channels; ++i) src.data()[i] = rng() & 0xFF;
    std::vector<uint8_t> png;
    encoder.encode(src.view(), png);
    ImageBuffer back;
    decoder.decode(png.data(), png.size(), back, channels == 1);
    ASSERT_EQ(back.channels(), channels);
    EXPECT_EQ(std::memcmp(back.data(), src.data(), size_t{31} * 17 * channels), 0);
    EXPECT_TRUE(is_png(png.data(), png.size()));
    // Truncated, and one byte of the compressed rows flipped (its CRC no longer matches).
    std::vector<uint8_t> cut(png.begin(), png.begin() + static_cast<long>(png.size() / 2));
    EXPECT_THROW(decoder.decode(cut.data(), cut.size(), back), Error);
    png[png.size() - 20] ^= 0x40;
    try {
      decoder.decode(png.data(), png.size(), back);
      ADD_FAILURE() << "a damaged PNG decoded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("PNG: "), std::string::npos) << e.what();
    }
  }
  const std::string bmp("BM\x36\x00\x00\x00", 6), webp("RIFF\x10\x00\x00\x00WEBPVP8 ", 16);
  EXPECT_EQ(unsupported_image_format(reinterpret_cast<const uint8_t*>(bmp.data()), bmp.size()),
            "BMP");
  EXPECT_EQ(unsupported_image_format(reinterpret_cast<const uint8_t*>(webp.data()), webp.size()),
            "WebP");
}

}  // namespace
}  // namespace faster::data

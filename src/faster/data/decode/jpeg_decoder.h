// JPEG decoding on the CPU with libjpeg-turbo: header, then a region of interest decoded at the
// coarsest DCT scale that still covers the requested output size, as RGB (or as gray: luma).
// One JpegDecoder per thread: it owns a libjpeg decompressor and is not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "faster/data/image.h"

namespace faster::data {

enum class JpegColor { kGray, kRgb, kYCbCr, kCmyk, kYcck, kUnknown };
const char* to_string(JpegColor color);

struct JpegInfo {
  int width = 0, height = 0;
  int components = 0;                     // in the file: 1 (gray), 3 (YCbCr/RGB), 4 (CMYK/YCCK)
  JpegColor color = JpegColor::kUnknown;  // colour space in the file
  bool progressive = false;
  // One sequential scan holding every component, well formed (see jpeg_scan.h), then the
  // end-of-image marker within the file's last 64 bytes: the plain layout every decoder reads
  // alike.  Files without it (progressive, several scans, truncated, data appended) are decoded
  // by libjpeg only.
  bool one_scan = false;
};

struct JpegDecoderOptions {
  // Images with more pixels are refused right after the header, before anything is allocated
  // (decompression bombs).  100 MP covers every ImageNet image (the largest is under 25 MP) and
  // bounds one full-size decode to 300 MB of pixels.  A small file claiming a large size (9999 x
  // 9999 is under the cap) is refused by open() for being too short to hold its blocks.
  int64_t max_pixels = 100'000'000;
  // Only DCT scales 1/8, 1/4, 1/2, 1 (libjpeg-turbo has SIMD IDCTs for those); false allows every
  // n/8, which decodes fewer pixels but through slower C IDCTs.
  bool power_of_two_scales = true;
  // JDCT_IFAST instead of JDCT_ISLOW: faster, slightly less accurate (PIL and OpenCV use ISLOW).
  bool fast_idct = false;
  // One channel, the luma (libjpeg's own conversion; CMYK through RGB), for a model that takes
  // gray images: a gray JPEG's samples as they are.
  bool gray = false;
};

// What decode() produced: the image in `out` is the decoded rows and columns around the requested
// region (libjpeg crops at iMCU boundaries), at scale `scale_num`/8; `region` says where the
// requested source rectangle lies in `out`, in out's pixels (fractional when scaled).
struct Decoded {
  int scale_num = 8;
  RegionF region;
};

class JpegDecoder {
 public:
  explicit JpegDecoder(JpegDecoderOptions options = {});
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // Parses the headers of `data` (which must stay alive until decode() returns).  Throws
  // faster::Error naming the problem: not a JPEG, corrupt header, too many pixels, or fewer
  // bytes than the image's blocks need (nothing is allocated for the image before these checks);
  // for a sequential file also a Huffman or quantization table that decoding would refuse, and
  // a damaged scan (a stray marker, restart markers out of order or miscounted), wherever it
  // lies: what a region's decode sees must not depend on which rows the region covers.
  const JpegInfo& open(const uint8_t* data, size_t size);

  // Decodes `roi` (source pixels, clipped to the image; an empty roi means the whole image) of the
  // opened image into `out` as RGB (gray with options.gray), at the smallest DCT scale whose output
  // keeps the roi at least min_width x min_height (0: full scale).  Throws faster::Error on corrupt
  // or truncated data.
  Decoded decode(const Rect& roi, int min_width, int min_height, ImageBuffer& out);

  // open() + decode() of the whole image.
  Decoded decode_all(const uint8_t* data, size_t size, ImageBuffer& out, int min_width = 0,
                     int min_height = 0);

  const JpegInfo& info() const { return info_; }

  // The DCT scale numerator (of 8) decode() would use for a roi of roi_w x roi_h.
  int choose_scale(int roi_w, int roi_h, int min_width, int min_height) const;

 private:
  void check_size_holds_blocks(size_t size);
  void check_sequential(const uint8_t* data, size_t size);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  JpegDecoderOptions options_;
  JpegInfo info_;
  bool opened_ = false;
};

// Cheap sniffing for error messages: "PNG", "GIF", "empty", ... or "" if it looks like a JPEG.
const char* guess_non_jpeg(const uint8_t* data, size_t size);

}  // namespace faster::data

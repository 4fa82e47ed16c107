// JpegDecoder implementation.  libjpeg reports errors through a callback that must not return, so
// it longjmps back into the function that called libjpeg; that function then throws.  Functions
// that call setjmp hold no C++ objects with destructors, so the jump skips no destructor.
#include "faster/data/decode/jpeg_decoder.h"

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

// jpeglib.h needs size_t and FILE declared before it.
#include <jpeglib.h>

// jerror.h after jpeglib.h, never before (an include sorter would put it first): its message codes
// depend on JPEG_LIB_VERSION, from the jconfig.h that jpeglib.h includes.  Read without it, they
// are numbered for the jpeg62 ABI, and against a jpeg8-ABI libjpeg (libjpeg.so.8, Ubuntu's)
// JWRN_JPEG_EOF is then the library's JWRN_HIT_MARKER: damaged entropy-coded data that libjpeg
// decodes would be refused as truncated.
#ifndef JPEG_LIB_VERSION
#error "jpeglib.h must be included before jerror.h"
#endif
#include <jerror.h>

#include "faster/core/error.h"
#include "faster/data/decode/jpeg_error.h"
#include "faster/data/decode/jpeg_scan.h"

namespace faster::data {
namespace {

// Decoded rows and columns kept around the requested region (in output pixels) so that its edge
// pixels see the same chroma upsampling context as in a full decode.
constexpr int kMarginPixels = 4;
constexpr int kRowsPerRead = 16;

// Warnings are silent, except running out of data: libjpeg would pad a truncated file with grey and
// call it a success; we want the sample counted as bad instead (PIL refuses truncated files too).
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_error_exit(cinfo);
  if (level < 0) cinfo->err->num_warnings++;
}

JpegColor color_of(J_COLOR_SPACE space) {
  switch (space) {
    case JCS_GRAYSCALE:
      return JpegColor::kGray;
    case JCS_RGB:
      return JpegColor::kRgb;
    case JCS_YCbCr:
      return JpegColor::kYCbCr;
    case JCS_CMYK:
      return JpegColor::kCmyk;
    case JCS_YCCK:
      return JpegColor::kYcck;
    default:
      return JpegColor::kUnknown;
  }
}

// CMYK to RGB.  Adobe applications store CMYK inverted (and mark the file with an Adobe marker),
// which is what nearly every CMYK JPEG in the wild is.
void cmyk_to_rgb(const uint8_t* in, uint8_t* out, int width, bool inverted) {
  for (int x = 0; x < width; ++x, in += 4, out += 3) {
    const int k = inverted ? in[3] : 255 - in[3];
    for (int c = 0; c < 3; ++c) {
      const int v = inverted ? in[c] : 255 - in[c];
      out[c] = static_cast<uint8_t>((v * k + 127) / 255);
    }
  }
}

// ITU-R BT.601's luma, as libjpeg converts RGB to gray (16-bit fixed point, weights summing to 1).
void cmyk_to_gray(const uint8_t* in, uint8_t* out, int width, bool inverted) {
  uint8_t rgb[3];
  for (int x = 0; x < width; ++x, in += 4) {
    cmyk_to_rgb(in, rgb, 1, inverted);
    out[x] = static_cast<uint8_t>((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 32768) >> 16);
  }
}

// The checks libjpeg makes when it builds a decoding table (jpeg_make_d_derived_tbl), which it
// only does in jpeg_start_decompress: at most 256 codes, none the all-ones code of its length
// (canonical codes, assigned in order, must fit their lengths), DC symbols at most 15.
bool huffman_table_ok(const JHUFF_TBL& t, bool dc) {
  int64_t code = 0;
  int symbols = 0;
  for (int length = 1; length <= 16; ++length) {
    code += t.bits[length];
    symbols += t.bits[length];
    if (symbols > 256 || code >= (int64_t{1} << length)) return false;
    code <<= 1;
  }
  if (dc)
    for (int i = 0; i < symbols; ++i)
      if (t.huffval[i] > 15) return false;
  return true;
}

}  // namespace

const char* to_string(JpegColor color) {
  switch (color) {
    case JpegColor::kGray:
      return "gray";
    case JpegColor::kRgb:
      return "RGB";
    case JpegColor::kYCbCr:
      return "YCbCr";
    case JpegColor::kCmyk:
      return "CMYK";
    case JpegColor::kYcck:
      return "YCCK";
    default:
      return "unknown";
  }
}

const char* guess_non_jpeg(const uint8_t* d, size_t n) {
  if (n == 0) return "an empty file";
  if (n >= 2 && d[0] == 0xFF && d[1] == 0xD8) return "";
  if (n >= 8 && std::memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return "a PNG image";
  if (n >= 4 && std::memcmp(d, "GIF8", 4) == 0) return "a GIF image";
  if (n >= 2 && d[0] == 'B' && d[1] == 'M') return "a BMP image";
  if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0)
    return "a WebP image";
  if (n >= 4 && (std::memcmp(d, "II*", 4) == 0 || std::memcmp(d, "MM\0*", 4) == 0))
    return "a TIFF image";
  return "not an image format we know";
}

struct JpegDecoder::Impl {
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  std::vector<uint8_t> cmyk_rows;  // CMYK scanlines before conversion; kept between images

  Impl() {
    cinfo.err = install_jpeg_errors(err);
    err.pub.emit_message = on_message;
    jpeg_create_decompress(&cinfo);
  }
  ~Impl() { jpeg_destroy_decompress(&cinfo); }

  // Returns false (with err.message set) if libjpeg reported an error.
  bool read_header(const uint8_t* data, size_t size) {
    if (setjmp(err.jump)) {
      jpeg_abort_decompress(&cinfo);
      return false;
    }
    jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
    jpeg_read_header(&cinfo, TRUE);
    return true;
  }

  bool start(int scale_num, J_COLOR_SPACE space, bool fast_idct) {
    if (setjmp(err.jump)) {
      jpeg_abort_decompress(&cinfo);
      return false;
    }
    cinfo.scale_num = static_cast<unsigned>(scale_num);
    cinfo.scale_denom = 8;
    cinfo.out_color_space = space;
    cinfo.dct_method = fast_idct ? JDCT_IFAST : JDCT_ISLOW;
    cinfo.do_fancy_upsampling = TRUE;
    jpeg_start_decompress(&cinfo);
    return true;
  }

  // Crops columns [x0, x1) of the scaled output; libjpeg moves x0 down to an iMCU boundary.
  bool crop(JDIMENSION& x0, JDIMENSION x1) {
    if (setjmp(err.jump)) {
      jpeg_abort_decompress(&cinfo);
      return false;
    }
    JDIMENSION width = x1 - x0;
    if (x0 > 0 || width < cinfo.output_width) jpeg_crop_scanline(&cinfo, &x0, &width);
    return true;
  }

  // Skips to row y0 and reads rows [y0, y1) into `rows` (each row a pointer into the output).
  bool read_rows(JDIMENSION y0, JDIMENSION y1, uint8_t* first, size_t stride) {
    if (setjmp(err.jump)) {
      jpeg_abort_decompress(&cinfo);
      return false;
    }
    if (y0 > 0) jpeg_skip_scanlines(&cinfo, y0);
    JSAMPROW rows[kRowsPerRead];
    while (cinfo.output_scanline < y1) {
      const JDIMENSION at = cinfo.output_scanline;
      const JDIMENSION want = std::min<JDIMENSION>(kRowsPerRead, y1 - at);
      for (JDIMENSION i = 0; i < want; ++i) rows[i] = first + (at - y0 + i) * stride;
      jpeg_read_scanlines(&cinfo, rows, want);
    }
    jpeg_abort_decompress(&cinfo);  // rows below the region are never decoded
    return true;
  }
};

JpegDecoder::JpegDecoder(JpegDecoderOptions options)
    : impl_(std::make_unique<Impl>()), options_(options) {}

JpegDecoder::~JpegDecoder() = default;

const JpegInfo& JpegDecoder::open(const uint8_t* data, size_t size) {
  if (opened_) jpeg_abort_decompress(&impl_->cinfo);
  opened_ = false;
  info_ = {};
  const char* other = guess_non_jpeg(data, size);
  if (*other) FASTER_THROW("not a JPEG: ", other);
  if (!impl_->read_header(data, size)) FASTER_THROW("corrupt JPEG header: ", impl_->err.message);
  const auto& c = impl_->cinfo;
  info_.width = static_cast<int>(c.image_width);
  info_.height = static_cast<int>(c.image_height);
  info_.components = c.num_components;
  info_.color = color_of(c.jpeg_color_space);
  info_.progressive = c.progressive_mode;
  const int64_t pixels = int64_t{info_.width} * info_.height;
  if (pixels > options_.max_pixels) {
    jpeg_abort_decompress(&impl_->cinfo);
    FASTER_THROW("JPEG of ", info_.width, "x", info_.height, " has more than the ",
                 options_.max_pixels, " pixels allowed (decompression bomb?)");
  }
  if (pixels == 0) {
    jpeg_abort_decompress(&impl_->cinfo);
    FASTER_THROW("JPEG header says the image is ", info_.width, "x", info_.height);
  }
  check_size_holds_blocks(size);
  if (!info_.progressive) check_sequential(data, size);
  opened_ = true;
  return info_;
}

// A Huffman-coded scan spends at least one bit per block on its DC code and, in a sequential
// scan, one more on the AC end-of-block code; a progressive file's DC scans code every block.  A
// file shorter than that for the blocks its header claims cannot decode (a forged or truncated
// header): refusing it here costs nothing, where decoding would allocate for the claimed size
// first.  Arithmetic coding can spend less than a bit per block and is not bounded this way.
void JpegDecoder::check_size_holds_blocks(size_t size) {
  const auto& c = impl_->cinfo;
  if (c.arith_code) return;
  uint64_t blocks = 0;
  for (int i = 0; i < c.num_components; ++i)
    blocks += uint64_t{c.comp_info[i].width_in_blocks} * c.comp_info[i].height_in_blocks;
  const uint64_t min_bits = blocks * (c.progressive_mode ? 1 : 2);
  if (uint64_t{size} * 8 >= min_bits) return;
  jpeg_abort_decompress(&impl_->cinfo);
  FASTER_THROW("corrupt JPEG: its header claims ", info_.width, "x", info_.height, " pixels (",
               blocks, " blocks), which need at least ", (min_bits + 7) / 8,
               " bytes; the file has ", size, " (truncated, or a forged header)");
}

// Throws for what libjpeg would refuse only once decoding starts (a bad table) or paper over (a
// damaged scan: it pads the rest with grey and warns); sets info_.one_scan.
void JpegDecoder::check_sequential(const uint8_t* data, size_t size) {
  const auto& c = impl_->cinfo;
  const auto refuse = [&](auto... what) {
    jpeg_abort_decompress(&impl_->cinfo);
    FASTER_THROW("corrupt JPEG: ", what...);
  };
  bool tables = true;  // every Huffman table the scan uses is in the file (libjpeg has defaults)
  for (int i = 0; i < c.comps_in_scan; ++i) {
    const jpeg_component_info& comp = *c.cur_comp_info[i];
    // The headers' table numbers are 4-bit fields, not checked against the 4 slots until then.
    const auto defined = [](int n, auto* const* slots, int count) {
      return n >= 0 && n < count && slots[n] != nullptr;
    };
    if (!defined(comp.quant_tbl_no, c.quant_tbl_ptrs, NUM_QUANT_TBLS))
      refuse("quantization table ", comp.quant_tbl_no, " is not defined");
    if (c.arith_code) continue;
    if (comp.dc_tbl_no < 0 || comp.dc_tbl_no >= NUM_HUFF_TBLS || comp.ac_tbl_no < 0 ||
        comp.ac_tbl_no >= NUM_HUFF_TBLS)
      refuse("Huffman table number ", comp.dc_tbl_no, "/", comp.ac_tbl_no, " out of range");
    const JHUFF_TBL* dc = c.dc_huff_tbl_ptrs[comp.dc_tbl_no];
    const JHUFF_TBL* ac = c.ac_huff_tbl_ptrs[comp.ac_tbl_no];
    if ((dc && !huffman_table_ok(*dc, true)) || (ac && !huffman_table_ok(*ac, false)))
      refuse("a bad Huffman table");
    tables = tables && dc && ac;
  }
  // MCUs in the scan: blocks of its one component, or the frame's interleaved MCUs.
  int64_t mcus;
  if (c.comps_in_scan == 1) {
    mcus = int64_t{c.cur_comp_info[0]->width_in_blocks} * c.cur_comp_info[0]->height_in_blocks;
  } else {
    const int64_t w = DCTSIZE * c.max_h_samp_factor, h = DCTSIZE * c.max_v_samp_factor;
    mcus = (c.image_width + w - 1) / w * ((c.image_height + h - 1) / h);
  }
  const size_t start = static_cast<size_t>(c.src->next_input_byte - data);  // after SOS
  const ScanWalk walk = walk_scan(data, size, start, static_cast<int>(c.restart_interval), mcus);
  if (walk.corrupt) refuse(walk.corrupt, " (at byte ", walk.at, " of ", size, ")");
  info_.one_scan = tables && c.comps_in_scan == c.num_components &&
                   walk.end == ScanEnd::kEndOfImage && walk.after_end <= 64;
}

int JpegDecoder::choose_scale(int roi_w, int roi_h, int min_width, int min_height) const {
  if (min_width <= 0 && min_height <= 0) return 8;
  for (int n = 1; n < 8; ++n) {
    if (options_.power_of_two_scales && (n & (n - 1)) != 0) continue;
    if (int64_t{roi_w} * n >= int64_t{min_width} * 8 &&
        int64_t{roi_h} * n >= int64_t{min_height} * 8)
      return n;
  }
  return 8;
}

Decoded JpegDecoder::decode(const Rect& requested, int min_width, int min_height,
                            ImageBuffer& out) {
  FASTER_CHECK(opened_, "JpegDecoder::decode without a successful open()");
  opened_ = false;  // whatever happens below, libjpeg is back in its start state afterwards
  Rect roi = requested;
  if (roi.width <= 0 || roi.height <= 0) roi = {0, 0, info_.width, info_.height};
  roi.x = std::clamp(roi.x, 0, info_.width - 1);
  roi.y = std::clamp(roi.y, 0, info_.height - 1);
  roi.width = std::min(roi.width, info_.width - roi.x);
  roi.height = std::min(roi.height, info_.height - roi.y);

  const int n = choose_scale(roi.width, roi.height, min_width, min_height);
  const bool cmyk = info_.color == JpegColor::kCmyk || info_.color == JpegColor::kYcck;
  auto& c = impl_->cinfo;
  const J_COLOR_SPACE space = cmyk ? JCS_CMYK : options_.gray ? JCS_GRAYSCALE : JCS_RGB;
  if (!impl_->start(n, space, options_.fast_idct))
    FASTER_THROW("corrupt JPEG: ", impl_->err.message);

  // The region in scaled output pixels, widened by the margin and rounded outwards.
  const double s = n / 8.0;
  const auto lo = [&](int v) {
    return static_cast<JDIMENSION>(std::max(0.0, std::floor(v * s) - kMarginPixels));
  };
  const auto hi = [&](int v, JDIMENSION limit) {
    return static_cast<JDIMENSION>(std::min<double>(limit, std::ceil(v * s) + kMarginPixels));
  };
  JDIMENSION x0 = lo(roi.x), y0 = lo(roi.y);
  const JDIMENSION x1 = hi(roi.x + roi.width, c.output_width);
  const JDIMENSION y1 = hi(roi.y + roi.height, c.output_height);
  if (!impl_->crop(x0, x1)) FASTER_THROW("corrupt JPEG: ", impl_->err.message);

  const int width = static_cast<int>(c.output_width), height = static_cast<int>(y1 - y0);
  out.reshape(width, height, options_.gray ? 1 : 3);
  uint8_t* target = out.data();
  size_t stride = out.stride();
  if (cmyk) {
    impl_->cmyk_rows.resize(size_t{4} * width * height);
    target = impl_->cmyk_rows.data();
    stride = size_t{4} * width;
  }
  if (!impl_->read_rows(y0, y1, target, stride)) FASTER_THROW("corrupt JPEG: ", impl_->err.message);
  if (cmyk) {
    const bool inverted = c.saw_Adobe_marker;
    for (int y = 0; y < height; ++y)
      (options_.gray ? cmyk_to_gray : cmyk_to_rgb)(target + y * stride, out.row(y), width,
                                                   inverted);
  }
  Decoded result;
  result.scale_num = n;
  result.region = {roi.x * s - x0, roi.y * s - y0, roi.width * s, roi.height * s};
  return result;
}

Decoded JpegDecoder::decode_all(const uint8_t* data, size_t size, ImageBuffer& out, int min_width,
                                int min_height) {
  open(data, size);
  return decode({}, min_width, min_height, out);
}

}  // namespace faster::data

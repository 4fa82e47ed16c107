// JpegEncoder implementation: a libjpeg destination manager that writes into a std::vector (so its
// capacity is reused), and the same longjmp-to-exception error handling as the decoder.
#include "faster/data/decode/jpeg_encoder.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>

#include <jpeglib.h>

#include "faster/core/error.h"
#include "faster/data/decode/jpeg_error.h"

namespace faster::data {
namespace {

struct VectorDestination {
  jpeg_destination_mgr pub;  // first member, as above
  std::vector<uint8_t>* out;
};

constexpr size_t kInitialBytes = 64 * 1024;

void init_destination(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<VectorDestination*>(cinfo->dest);
  // resize() does not shrink capacity: a vector reused across images allocates only when it grows.
  dest->out->resize(std::max(dest->out->capacity(), kInitialBytes));
  dest->pub.next_output_byte = dest->out->data();
  dest->pub.free_in_buffer = dest->out->size();
}

boolean empty_output_buffer(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<VectorDestination*>(cinfo->dest);
  const size_t used = dest->out->size();  // libjpeg only calls this when the buffer is full
  dest->out->resize(used * 2);
  dest->pub.next_output_byte = dest->out->data() + used;
  dest->pub.free_in_buffer = dest->out->size() - used;
  return TRUE;
}

void term_destination(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<VectorDestination*>(cinfo->dest);
  dest->out->resize(dest->out->size() - dest->pub.free_in_buffer);
}

}  // namespace

struct JpegEncoder::Impl {
  jpeg_compress_struct cinfo;
  JpegErrorManager err;
  VectorDestination dest;
  // libjpeg-turbo's jpeg_set_defaults() only fills Huffman tables that do not exist yet, and an
  // optimize_huffman encode leaves its image-specific tables in place: without this copy of the
  // standard tables, the next image encoded without optimization would be written with codes that
  // may lack its symbols, a corrupt file that no error reports.
  JHUFF_TBL standard_dc[2], standard_ac[2];
  bool have_standard = false;

  Impl() {
    cinfo.err = install_jpeg_errors(err);
    jpeg_create_compress(&cinfo);
    dest.pub.init_destination = init_destination;
    dest.pub.empty_output_buffer = empty_output_buffer;
    dest.pub.term_destination = term_destination;
    cinfo.dest = &dest.pub;
  }
  ~Impl() { jpeg_destroy_compress(&cinfo); }

  void set_sampling(ChromaSubsampling s) {
    if (cinfo.num_components < 3) return;
    const int h = s == ChromaSubsampling::k444 ? 1 : 2;
    const int v = s == ChromaSubsampling::k420 ? 2 : 1;
    cinfo.comp_info[0].h_samp_factor = h;
    cinfo.comp_info[0].v_samp_factor = v;
    for (int i = 1; i < cinfo.num_components; ++i)
      cinfo.comp_info[i].h_samp_factor = cinfo.comp_info[i].v_samp_factor = 1;
    if (cinfo.num_components == 4) {  // YCCK: K at full resolution like Y
      cinfo.comp_info[3].h_samp_factor = h;
      cinfo.comp_info[3].v_samp_factor = v;
    }
  }

  // Called after jpeg_set_defaults(), which creates the standard tables on the first call.
  void use_standard_huffman_tables() {
    for (int i = 0; i < 2; ++i) {
      if (have_standard) {
        *cinfo.dc_huff_tbl_ptrs[i] = standard_dc[i];
        *cinfo.ac_huff_tbl_ptrs[i] = standard_ac[i];
      } else {
        standard_dc[i] = *cinfo.dc_huff_tbl_ptrs[i];
        standard_ac[i] = *cinfo.ac_huff_tbl_ptrs[i];
      }
    }
    have_standard = true;
  }

  // Returns false (with err.message set) on a libjpeg error.
  bool encode(const ImageView& image, const JpegEncodeOptions& o) {
    if (setjmp(err.jump)) {
      jpeg_abort_compress(&cinfo);
      return false;
    }
    cinfo.image_width = static_cast<JDIMENSION>(image.width);
    cinfo.image_height = static_cast<JDIMENSION>(image.height);
    cinfo.input_components = image.channels;
    cinfo.in_color_space = image.channels == 1   ? JCS_GRAYSCALE
                           : image.channels == 4 ? JCS_CMYK
                                                 : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    use_standard_huffman_tables();
    if (image.channels == 4) jpeg_set_colorspace(&cinfo, JCS_YCCK);  // writes the Adobe marker
    jpeg_set_quality(&cinfo, o.quality, TRUE);
    set_sampling(o.subsampling);
    cinfo.optimize_coding = o.optimize_huffman;
    if (o.progressive) jpeg_simple_progression(&cinfo);
    cinfo.restart_interval = static_cast<unsigned>(o.restart_interval);
    cinfo.dct_method = JDCT_ISLOW;
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
      JSAMPROW row = const_cast<uint8_t*>(image.row(static_cast<int>(cinfo.next_scanline)));
      jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    return true;
  }
};

JpegEncoder::JpegEncoder() : impl_(std::make_unique<Impl>()) {}
JpegEncoder::~JpegEncoder() = default;

void JpegEncoder::encode(const ImageView& image, const JpegEncodeOptions& options,
                         std::vector<uint8_t>& out) {
  if (image.channels != 1 && image.channels != 3 && image.channels != 4)
    FASTER_THROW("JPEG encoder: ", image.channels, " channels (expected 1, 3 or 4)");
  if (image.width <= 0 || image.height <= 0)
    FASTER_THROW("JPEG encoder: empty image ", image.width, "x", image.height);
  if (options.quality < 1 || options.quality > 100)
    FASTER_THROW("JPEG quality ", options.quality, " is not in 1..100");
  impl_->dest.out = &out;
  if (!impl_->encode(image, options)) FASTER_THROW("JPEG encoder: ", impl_->err.message);
}

}  // namespace faster::data

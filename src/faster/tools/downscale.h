// The one downscaling step shared by `faster resize` and `faster pack --max-size`: decide from the
// image's header whether it is above the size limit, then decode (a JPEG at the coarsest DCT
// scale that stays above the target, a PNG whole), finish with the area filter (OpenCV
// INTER_AREA) and re-encode in its own format: a JPEG at the quality asked, a PNG losslessly (as
// RGB, or gray for a gray PNG), so a tree keeps its file names and formats.
// One Downscaler per worker thread: it owns the decoders, resampler, encoders and their buffers.
#pragma once

#include <cstdint>
#include <vector>

#include "faster/data/augment/resample.h"
#include "faster/data/decode/jpeg_decoder.h"
#include "faster/data/decode/jpeg_encoder.h"
#include "faster/data/decode/png_codec.h"
#include "faster/data/image.h"

namespace faster::tools {

// The largest side a JPEG can have (libjpeg's JPEG_MAX_DIMENSION): the largest useful --max-size.
constexpr int kMaxJpegSide = 65500;

struct Size {
  int width = 0, height = 0;
};

// The smaller edge becomes max_size and the other keeps the aspect, rounded half-to-even like
// Python's round() (the peer script's rule); images already at or below max_size keep their size.
Size downscaled_size(int width, int height, int max_size);

enum class DownscaleResult { kKeep, kDownscaled };

class Downscaler {
 public:
  explicit Downscaler(data::JpegDecoderOptions decoder_options = {});

  // kDownscaled: `out` holds the image re-encoded with its smaller edge at max_size (max_size <= 0
  // never downscales).  kKeep: the image is valid and small enough, keep its bytes as they are.
  // Every image is decoded (a small one at 1/8 scale, which still reads all its entropy-coded
  // data), so truncated and corrupt files are found here: faster::Error says what is wrong.
  DownscaleResult run(const uint8_t* data, size_t size, int max_size,
                      const data::JpegEncodeOptions& encode, std::vector<uint8_t>& out);

  // The source image's size, from the last run() that got past the header.
  Size source_size() const { return source_; }
  // The DCT scale (n/8) the last run() decoded at.
  int last_scale() const { return last_scale_; }

 private:
  DownscaleResult run_png(const uint8_t* data, size_t size, int max_size,
                          std::vector<uint8_t>& out);

  data::JpegDecoder decoder_;
  data::PngDecoder png_decoder_;
  data::Resampler resampler_;
  data::JpegEncoder encoder_;
  data::PngEncoder png_encoder_;
  data::ImageBuffer decoded_, resized_;
  Size source_;
  int last_scale_ = 8;
};

}  // namespace faster::tools

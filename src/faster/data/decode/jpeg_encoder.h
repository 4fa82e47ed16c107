// JPEG encoding with libjpeg-turbo into a reusable byte vector (dataset tools, synth, test
// fixtures). One JpegEncoder per thread: it owns a libjpeg compressor and is not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "faster/data/image.h"

namespace faster::data {

enum class ChromaSubsampling { k444, k422, k420 };

struct JpegEncodeOptions {
  int quality = 90;  // 1..100, libjpeg's scale (PIL and OpenCV use the same tables)
  ChromaSubsampling subsampling = ChromaSubsampling::k420;
  bool progressive = false;
  bool optimize_huffman = false;  // smaller files, slower encoding
  int restart_interval = 0;       // MCUs between restart markers (0: none)
};

class JpegEncoder {
 public:
  JpegEncoder();
  ~JpegEncoder();
  JpegEncoder(const JpegEncoder&) = delete;
  JpegEncoder& operator=(const JpegEncoder&) = delete;

  // Encodes `image` (1 channel: grayscale, 3: RGB, 4: CMYK stored Adobe-style, i.e. inverted)
  // into `out`, replacing its contents and reusing its capacity.  Throws faster::Error.
  void encode(const ImageView& image, const JpegEncodeOptions& options, std::vector<uint8_t>& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faster::data

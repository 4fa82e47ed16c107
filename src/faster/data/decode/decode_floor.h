// The decode floor: how fast one core decodes a dataset's JPEGs at full size, from memory.  Times
// the number of cores, it bounds any CPU loader that decodes whole images (PIL, OpenCV, DALI's CPU
// path).
#pragma once

#include <cstdint>

#include "faster/data/sources/source.h"

namespace faster::data {

struct DecodeFloor {
  int images = 0;
  double seconds = 0;     // decoding only (files are read first)
  double megapixels = 0;  // decoded
  double mp_per_s() const { return seconds > 0 ? megapixels / seconds : 0; }
  double images_per_s() const { return seconds > 0 ? images / seconds : 0; }
};

// Decodes up to `samples` images spread over the source on the calling thread.
DecodeFloor measure_decode_floor(const Source& source, int samples);

}  // namespace faster::data

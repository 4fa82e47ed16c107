// Decode floor measurement: read first, then decode from memory, one thread, full scale.
#include "faster/data/decode/decode_floor.h"

#include <algorithm>
#include <vector>

#include "faster/core/timer.h"
#include "faster/data/decode/jpeg_decoder.h"

namespace faster::data {

DecodeFloor measure_decode_floor(const Source& source, int samples) {
  const int64_t n = source.size();
  const int count = static_cast<int>(std::min<int64_t>(samples, n));
  std::vector<Sample> files(count);
  for (int i = 0; i < count; ++i) {
    try {
      source.get(i * n / count, files[i]);  // spread over the classes
    } catch (const std::exception&) {
      files[i].bytes.clear();
    }
  }
  JpegDecoder decoder;
  ImageBuffer out;
  DecodeFloor floor;
  for (int pass = 0; pass < 2; ++pass) {  // the first pass warms caches and the buffer up
    floor = {};
    const Timer timer;
    for (const Sample& s : files) {
      try {
        decoder.decode_all(s.bytes.data(), s.bytes.size(), out);
        floor.megapixels += out.width() * double(out.height()) * 1e-6;
        ++floor.images;
      } catch (const std::exception&) {
        // bad files do not count
      }
    }
    floor.seconds = timer.seconds();
  }
  return floor;
}

}  // namespace faster::data

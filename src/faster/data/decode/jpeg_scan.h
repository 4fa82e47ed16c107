// A walk over the entropy-coded data of a sequential JPEG's first scan, without decoding it: byte
// stuffing, restart markers, and what ends the scan.  Finds the corruption that a decoder would
// otherwise paper over (libjpeg pads a scan cut short by a stray marker with grey and only warns),
// and says whether the file has the plain layout that every decoder reads alike (one scan, then
// the end-of-image marker), which is what the loader hands to nvJPEG.  Compute only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace faster::data {

enum class ScanEnd {
  kEndOfImage,      // the end-of-image marker (EOI) follows the scan
  kAnotherSegment,  // tables or another scan follow (a legal multi-scan layout)
  kNoEnd,           // the data runs out inside the scan (truncated)
};

struct ScanWalk {
  // Null when the data is well formed; otherwise what is wrong, at byte offset `at` of the file.
  const char* corrupt = nullptr;
  size_t at = 0;
  ScanEnd end = ScanEnd::kNoEnd;
  size_t after_end = 0;  // bytes after EOI (writers may pad; some append other data)
  int64_t restarts = 0;
};

// Walks the scan whose entropy-coded data starts at data + start (just after its SOS header).
// restart_interval (MCUs, 0: none) and mcus (in the scan) come from the headers: restart markers
// must count 0..7 in turn, one between each interval, and none without an interval.
ScanWalk walk_scan(const uint8_t* data, size_t size, size_t start, int restart_interval,
                   int64_t mcus);

}  // namespace faster::data

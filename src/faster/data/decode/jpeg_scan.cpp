// walk_scan: memchr from one 0xFF to the next; everything between is entropy-coded bits.
#include "faster/data/decode/jpeg_scan.h"

#include <cstring>

namespace faster::data {
namespace {

// Markers that may follow a scan: tables, restart-interval, comment and application segments, and
// the next scan.  Anything else inside or right after a scan (SOI, a frame header, reserved codes)
// is a damaged file.
bool may_follow_scan(uint8_t code) {
  return code == 0xC4 || code == 0xCC || code == 0xDA || code == 0xDB || code == 0xDC ||
         code == 0xDD || code == 0xFE || (code >= 0xE0 && code <= 0xEF);
}

}  // namespace

ScanWalk walk_scan(const uint8_t* data, size_t size, size_t start, int restart_interval,
                   int64_t mcus) {
  ScanWalk w;
  const uint8_t* const end = data + size;
  const uint8_t* p = data + (start < size ? start : size);
  int next_restart = 0;
  while (true) {
    const auto* ff = static_cast<const uint8_t*>(std::memchr(p, 0xFF, end - p));
    if (!ff) return w;  // kNoEnd
    const uint8_t* m = ff + 1;
    while (m < end && *m == 0xFF) ++m;  // fill bytes (libjpeg skips them too)
    if (m == end) return w;
    const uint8_t code = *m;
    p = m + 1;
    if (code == 0x00) continue;  // a stuffed 0xFF data byte
    w.at = static_cast<size_t>(ff - data);
    if (code >= 0xD0 && code <= 0xD7) {
      if (restart_interval <= 0) {
        w.corrupt = "a restart marker in a scan without restart interval";
        return w;
      }
      if (code - 0xD0 != next_restart) {
        w.corrupt = "restart markers out of order";
        return w;
      }
      next_restart = (next_restart + 1) & 7;
      ++w.restarts;
      continue;
    }
    if (code == 0xD9) {
      w.end = ScanEnd::kEndOfImage;
      w.after_end = static_cast<size_t>(end - p);
    } else if (may_follow_scan(code)) {
      w.end = ScanEnd::kAnotherSegment;
    } else {
      w.corrupt = "a stray marker inside the scan data";
      return w;
    }
    break;
  }
  // A whole scan has one restart marker between each two intervals.
  const int64_t want =
      restart_interval > 0 ? (mcus + restart_interval - 1) / restart_interval - 1 : 0;
  if (w.restarts != want) w.corrupt = "a wrong number of restart markers for its blocks";
  return w;
}

}  // namespace faster::data

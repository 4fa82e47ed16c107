// Every kind of bad JPEG the loaders meet, each made from a valid file: those every path must
// refuse (header damage, truncation, other formats, forged sizes, a damaged scan structure), and
// those damaged inside the entropy-coded bits only, which decoders read without noticing (libjpeg
// warns at most) and which both the CPU and the nvJPEG path therefore deliver.  Shared by the
// decoder tests, the loader's bad tree and the nvJPEG-vs-CPU loader test.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/jpeg_fixtures.h"
#include "data/jpeg_mutations.h"

namespace faster::test {

struct BadJpeg {
  std::string kind;  // a file name: letters and underscores
  std::vector<uint8_t> bytes;
  std::string why;  // part of the decoder's message for a refused one
};

// Offset of the first `marker` (0xFF, code) in a file, or 0.
inline size_t find_marker(const std::vector<uint8_t>& jpeg, uint8_t code) {
  for (size_t i = 2; i + 1 < jpeg.size(); ++i)
    if (jpeg[i] == 0xFF && jpeg[i + 1] == code) return i;
  return 0;
}

// A position in the middle of the scan data where a change makes no marker by accident.
inline size_t mid_scan(const std::vector<uint8_t>& jpeg) {
  size_t i = (jpeg_headers_end(jpeg) + jpeg.size()) / 2;
  while (jpeg[i - 1] == 0xFF || jpeg[i] >= 0xFE || jpeg[i + 1] == 0xFF) ++i;
  return i;
}

inline std::vector<BadJpeg> refused_jpegs() {
  std::vector<BadJpeg> out;
  const auto add = [&](const char* kind, std::vector<uint8_t> bytes, const char* why) {
    out.push_back({kind, std::move(bytes), why});
  };
  const std::vector<uint8_t> full = make_jpeg(160, 120), small = make_jpeg(80, 60);
  add("empty", {}, "not a JPEG: an empty file");
  add("png", {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'},
      "a PNG image");
  std::vector<uint8_t> random(3000);
  for (size_t i = 0; i < random.size(); ++i) random[i] = static_cast<uint8_t>(i * 7919 % 251);
  add("random", random, "not a JPEG");
  random[0] = 0xFF, random[1] = 0xD8;
  add("signature_then_garbage", random, "corrupt JPEG");
  add("cut_in_headers", {full.begin(), full.begin() + 100}, "corrupt JPEG");
  // Refused by a decode that reaches the cut: a loader's crop of this small image always does.
  add("cut_in_scan", {small.begin(), small.begin() + small.size() / 2}, "corrupt JPEG");
  auto bomb = make_jpeg(64, 64);
  patch_dimensions(bomb, 60000, 60000);
  add("bomb", bomb, "decompression bomb");
  auto forged = full;
  patch_dimensions(forged, 9999, 9999);
  add("forged_size", forged, "claims 9999x9999");
  // The first table (luminance DC: no 1-bit code, one 2-bit code, five 3-bit codes, ...): two
  // 1-bit codes leave no room for the rest, which libjpeg finds only when decoding starts.
  auto huffman = full;
  const size_t dht = find_marker(huffman, 0xC4);
  huffman[dht + 5] = 2, huffman[dht + 7] -= 2;
  add("bad_huffman_table", huffman, "bad Huffman table");
  auto quant = full;
  quant[find_marker(quant, 0xC0) + 12] = 3;  // the first component's quantization table: none
  add("undefined_quant_table", quant, "quantization table 3 is not defined");
  auto stray = full;
  const size_t at = mid_scan(stray);
  stray[at] = 0xFF, stray[at + 1] = 0xC0;  // a frame header marker inside the scan
  add("stray_marker_in_scan", stray, "stray marker");
  data::JpegEncodeOptions restarts;
  restarts.restart_interval = 2;
  const auto rst = make_jpeg(160, 120, 3, restarts);
  auto order = rst;
  order[find_marker(order, 0xD0) + 1] = 0xD3;
  add("restarts_out_of_order", order, "out of order");
  auto count = rst;
  count[find_marker(count, 0xDD) + 5] = 3;  // DRI says 3 MCUs per interval: fewer markers then
  add("restarts_miscounted", count, "wrong number of restart markers");
  auto unannounced = rst;
  unannounced[find_marker(unannounced, 0xDD) + 5] = 0;  // restart markers, but no interval
  add("restarts_without_interval", unannounced, "without restart interval");
  return out;
}

// Damaged inside the entropy-coded bits: decoded by libjpeg (with warnings) and by nvJPEG alike,
// to different pixels; early_end_marker is not of the plain layout, so libjpeg decodes it in
// both modes.
inline std::vector<BadJpeg> decodable_damaged_jpegs() {
  const std::vector<uint8_t> full = make_jpeg(160, 120);
  auto flipped = full;
  flipped[mid_scan(flipped)] ^= 0x01;
  auto deleted = full;
  const size_t at = mid_scan(deleted);
  deleted.erase(deleted.begin() + static_cast<std::ptrdiff_t>(at),
                deleted.begin() + static_cast<std::ptrdiff_t>(at + 16));
  auto early = full;
  const size_t e = mid_scan(early);
  early[e] = 0xFF, early[e + 1] = 0xD9;
  return {{"flipped_bit_in_scan", flipped, ""},
          {"bytes_deleted_in_scan", deleted, ""},
          {"early_end_marker", early, ""}};
}

}  // namespace faster::test

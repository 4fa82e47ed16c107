// The scan walk and the checks open() makes for sequential files: every refused kind of
// bad_jpegs.h is refused with its reason, files damaged only in their entropy-coded bits decode,
// and valid layouts pass.  Also the property the nvJPEG path rests on: a file of the plain layout
// (JpegInfo::one_scan, what the loader hands to nvJPEG) is never one libjpeg refuses, whatever the
// region decoded, so both paths skip the same files.
#include <gtest/gtest.h>

#include <string>

#include "data/bad_jpegs.h"
#include "faster/core/error.h"
#include "faster/data/decode/jpeg_decoder.h"
#include "faster/data/decode/jpeg_scan.h"

namespace faster::data {
namespace {

TEST(JpegScan, RefusesEveryBadKindNamingWhy) {
  JpegDecoder decoder;
  ImageBuffer out;
  for (const test::BadJpeg& b : test::refused_jpegs()) {
    try {
      decoder.decode_all(b.bytes.data(), b.bytes.size(), out);
      ADD_FAILURE() << b.kind << " decoded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(b.why), std::string::npos) << b.kind << ": " << e.what();
    }
  }
  const auto good = test::make_jpeg(32, 24);  // still usable
  decoder.decode_all(good.data(), good.size(), out);
  EXPECT_EQ(out.width(), 32);
}

TEST(JpegScan, DamageInsideTheBitsDecodes) {
  JpegDecoder decoder;
  ImageBuffer out;
  for (const test::BadJpeg& b : test::decodable_damaged_jpegs()) {
    decoder.decode_all(b.bytes.data(), b.bytes.size(), out);
    EXPECT_EQ(out.width(), 160) << b.kind;
    EXPECT_EQ(decoder.info().one_scan, b.kind != "early_end_marker") << b.kind;
  }
}

TEST(JpegScan, PlainLayoutsAndOthers) {
  JpegDecoder decoder;
  const auto one_scan = [&](const std::vector<uint8_t>& jpeg) {
    return decoder.open(jpeg.data(), jpeg.size()).one_scan;
  };
  JpegEncodeOptions o;
  EXPECT_TRUE(one_scan(test::make_jpeg(97, 61)));
  EXPECT_TRUE(one_scan(test::make_jpeg(97, 61, 1)));
  EXPECT_TRUE(one_scan(test::make_jpeg(97, 61, 4)));  // CMYK: the loader keeps it on the CPU
  for (int interval : {1, 2, 3, 7, 100}) {
    o.restart_interval = interval;
    EXPECT_TRUE(one_scan(test::make_jpeg(97, 61, 3, o))) << interval;
    EXPECT_TRUE(one_scan(test::make_jpeg(97, 61, 1, o))) << interval;
  }
  o = {};
  o.progressive = true;
  EXPECT_FALSE(one_scan(test::make_jpeg(97, 61, 3, o)));
  auto padded = test::make_jpeg(97, 61);
  padded.resize(padded.size() + 64, 0);  // writers that pad after the end marker
  EXPECT_TRUE(one_scan(padded));
  padded.resize(padded.size() + 1, 0);  // more than that: some other data; libjpeg decodes it
  EXPECT_FALSE(one_scan(padded));
  auto cut = test::make_jpeg(97, 61);
  cut.resize(cut.size() - 2);  // no end marker
  EXPECT_FALSE(one_scan(cut));
}

TEST(JpegScan, WalkCountsRestartsAndFindsTheEnd) {
  JpegEncodeOptions o;
  o.restart_interval = 2;
  const auto jpeg = test::make_jpeg(160, 120, 3, o);  // 10 x 8 MCUs of 16 x 16
  const size_t start = test::jpeg_headers_end(jpeg);
  ScanWalk w = walk_scan(jpeg.data(), jpeg.size(), start, 2, 80);
  EXPECT_EQ(w.corrupt, nullptr);
  EXPECT_EQ(w.restarts, 39);
  EXPECT_EQ(w.end, ScanEnd::kEndOfImage);
  EXPECT_EQ(w.after_end, 0u);
  w = walk_scan(jpeg.data(), jpeg.size(), start, 2, 82);  // one more interval than there is
  EXPECT_NE(w.corrupt, nullptr);
  w = walk_scan(jpeg.data(), jpeg.size() - 10, start, 2, 80);
  EXPECT_EQ(w.end, ScanEnd::kNoEnd);
}

// Every mutation (jpeg_mutations.h) and every bad kind: a file open() gives the plain layout is
// decoded whole and in regions by libjpeg, never refused.
TEST(JpegScan, PlainLayoutIsNeverRefusedByADecode) {
  std::vector<std::vector<uint8_t>> files;
  for (uint32_t seed = 0; seed < test::kMutations; ++seed) files.push_back(test::mutate_jpeg(seed));
  for (const auto& b : test::refused_jpegs()) files.push_back(b.bytes);
  for (const auto& b : test::decodable_damaged_jpegs()) files.push_back(b.bytes);
  JpegDecoder decoder;
  ImageBuffer out;
  int plain = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& f = files[i];
    JpegInfo info;
    try {
      info = decoder.open(f.data(), f.size());
    } catch (const Error&) {
      continue;
    }
    if (!info.one_scan) continue;
    ++plain;
    const int w = info.width, h = info.height;
    const Rect regions[] = {{}, {0, 0, w / 3 + 1, h / 3 + 1}, {w / 2, h / 2, w / 2, h / 2}};
    for (const Rect& r : regions) {
      try {
        decoder.open(f.data(), f.size());
        decoder.decode(r, 24, 24, out);
      } catch (const Error& e) {
        ADD_FAILURE() << "file " << i << ", region " << r.x << "," << r.y << ": " << e.what();
      }
    }
  }
  EXPECT_GE(plain, 40);  // the property is tested on many files
}

}  // namespace
}  // namespace faster::data

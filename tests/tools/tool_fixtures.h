// Small image trees for the dataset-tool tests: photo-like JPEGs (the synth renderer) of chosen
// sizes at chosen paths, and readers for what the tools wrote.
#pragma once

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "data/jpeg_fixtures.h"
#include "faster/data/decode/jpeg_decoder.h"
#include "support/test_support.h"

namespace faster::test {

inline std::string to_string(const std::vector<uint8_t>& bytes) {
  return {bytes.begin(), bytes.end()};
}

// Writes a photo-like JPEG of width x height at root/rel, creating folders.
inline void write_jpeg(const std::filesystem::path& root, const std::string& rel, int width,
                       int height, int quality = 90) {
  std::filesystem::create_directories((root / rel).parent_path());
  data::JpegEncodeOptions options;
  options.quality = quality;
  write_file(root / rel, to_string(make_jpeg(width, height, 3, options)));
}

struct JpegSize {
  int width = 0, height = 0;
};

// The size in a JPEG file's header, after checking the whole file decodes.
inline JpegSize decoded_size(const std::filesystem::path& path) {
  const std::string bytes = read_file(path);
  data::JpegDecoder decoder;
  data::ImageBuffer image;
  decoder.decode_all(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), image);
  return {image.width(), image.height()};
}

// Every regular file under root, relative, sorted (hidden ones included).
inline std::vector<std::string> all_files(const std::filesystem::path& root) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root))
    if (e.is_regular_file()) out.push_back(e.path().lexically_relative(root).string());
  std::sort(out.begin(), out.end());
  return out;
}

// Modification time in nanoseconds (to see whether a re-run rewrote a file).
inline int64_t mtime_ns(const std::filesystem::path& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

inline std::string quoted(const std::filesystem::path& p) {
  return "'" + p.string() + "'";
}

// A tree for interrupting resize and pack: large images that take milliseconds each (decoded at
// 1/2 and re-encoded at 800x600 under --max-size 600), small ones kept as they are, and two bad
// ones (truncated, empty), in four class folders.
struct InterruptTree {
  static constexpr int kLarge = 40, kSmall = 6, kBad = 2, kImages = kLarge + kSmall + kBad;
  static constexpr int kMaxSize = 600;
  std::string large = to_string(make_jpeg(1600, 1200)), small = to_string(make_jpeg(400, 300));
  int64_t bytes = 0;  // of every file in the tree

  explicit InterruptTree(const std::filesystem::path& root) {
    const auto put = [&](const std::string& rel, const std::string& data) {
      std::filesystem::create_directories((root / rel).parent_path());
      write_file(root / rel, data);
      bytes += static_cast<int64_t>(data.size());
    };
    const auto folder = [](int i) { return "c" + std::to_string(i % 4) + "/"; };
    for (int i = 0; i < kLarge; ++i) put(folder(i) + std::to_string(i) + ".JPEG", large);
    for (int i = 0; i < kSmall; ++i) put(folder(i) + "s" + std::to_string(i) + ".jpg", small);
    put("c0/truncated.JPEG", large.substr(0, large.size() / 2));
    put("c1/empty.JPEG", "");
  }
  static bool is_small(const std::string& rel) {
    return std::filesystem::path(rel).filename().string()[0] == 's';
  }
  static bool is_bad(const std::string& rel) {
    return rel == "c0/truncated.JPEG" || rel == "c1/empty.JPEG";
  }
};

// The counts of a `faster resize` summary; all -1 if the output holds none.
struct ResizeCounts {
  long long files = -1, downscaled = -1, copied = -1, up_to_date = -1, bad = -1;
};
inline ResizeCounts resize_counts(const std::string& output) {
  ResizeCounts c;
  const size_t at = output.find("resize: ");
  if (at == std::string::npos ||
      std::sscanf(output.c_str() + at,
                  "resize: %lld images in %*s (%*s img/s): %lld downscaled, %lld copied, %lld up "
                  "to date, %lld bad",
                  &c.files, &c.downscaled, &c.copied, &c.up_to_date, &c.bad) != 5)
    return {};
  return c;
}

}  // namespace faster::test

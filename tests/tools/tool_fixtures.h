// Small image trees for the dataset-tool tests: photo-like JPEGs (the synth renderer) of chosen
// sizes at chosen paths, and readers for what the tools wrote.
#pragma once

#include <sys/stat.h>

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

}  // namespace faster::test

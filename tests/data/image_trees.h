// Folder datasets generated at test time for the image loader tests (CPU and nvJPEG): a tree of
// small photo-like JPEGs, and one with every bad input (bad_jpegs.h) beside unusual valid ones.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/bad_jpegs.h"
#include "data/jpeg_fixtures.h"
#include "faster/data/sources/folder_source.h"
#include "support/test_support.h"

namespace faster::test {

// classes x per_class small JPEGs of varied sizes (widening with i, or all near square, where
// random-resized crops seldom fall back to the centre); returns the source.
inline std::shared_ptr<data::FolderSource> make_tree(const std::filesystem::path& root, int classes,
                                                     int per_class, bool near_square = false) {
  for (int c = 0; c < classes; ++c)
    for (int i = 0; i < per_class; ++i) {
      const auto bytes = near_square ? make_jpeg(64 + 4 * (i % 8), 64 + 4 * c)
                                     : make_jpeg(60 + 13 * i, 50 + 7 * c);
      std::filesystem::create_directories(root / ("c" + std::to_string(c)));
      write_file(root / ("c" + std::to_string(c)) / ("i" + std::to_string(i) + ".jpg"),
                 std::string(bytes.begin(), bytes.end()));
    }
  return std::make_shared<data::FolderSource>(root, false);
}

// Every bad input in one tree: b/ what every path refuses (bad_jpegs.h, and a dangling link),
// e/ files damaged inside their entropy-coded bits, which decode; beside them unusual but valid
// JPEGs that must decode.  `bad` is the number of files in b/.
inline std::shared_ptr<data::FolderSource> make_bad_tree(const std::filesystem::path& root,
                                                         int& bad) {
  auto put = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
    std::filesystem::create_directories((root / name).parent_path());
    write_file(root / name, std::string(bytes.begin(), bytes.end()));
  };
  data::JpegEncodeOptions prog, s444, restarts;
  prog.progressive = true;
  s444.subsampling = data::ChromaSubsampling::k444;
  restarts.restart_interval = 3;
  put("a/cmyk.jpg", make_jpeg(70, 50, 4));
  put("a/gray.jpg", make_jpeg(70, 50, 1));
  put("a/progressive.jpg", make_jpeg(70, 50, 3, prog));
  put("a/s444.jpg", make_jpeg(70, 50, 3, s444));
  put("a/s420.jpg", make_jpeg(70, 50));
  put("a/restarts.jpg", make_jpeg(70, 50, 3, restarts));
  const auto refused = refused_jpegs();
  for (const BadJpeg& b : refused) put("b/" + b.kind + ".JPEG", b.bytes);
  std::filesystem::create_symlink(root / "missing.jpg", root / "b/unreadable.JPEG");
  put("c/good1.jpg", make_jpeg(90, 70));
  put("c/good2.jpg", make_jpeg(50, 90));
  std::filesystem::create_directories(root / "d_empty");
  for (const BadJpeg& b : decodable_damaged_jpegs()) put("e/" + b.kind + ".jpg", b.bytes);
  bad = static_cast<int>(refused.size()) + 1;
  return std::make_shared<data::FolderSource>(root, false);
}

}  // namespace faster::test

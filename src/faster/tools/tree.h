// Walking a dataset tree for `faster resize`: every JPEG under a root at any depth, in sorted order
// so runs are repeatable.  (pack reads class folders through data::FolderSource, like the loader.)
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace faster::tools {

// .jpg / .jpeg in any case (ImageNet's files end in .JPEG).
bool has_jpeg_extension(const std::filesystem::path& path);

struct TreeListing {
  std::vector<std::string> dirs;   // directories under the root, relative, parents first
  std::vector<std::string> files;  // JPEG files, relative, sorted
  int64_t ignored = 0;             // other files, left out
};

// Lists `root` recursively.  Hidden entries (names starting with '.') are skipped: they are not
// dataset content, and the tools' own temporaries are hidden.  Symlinks are followed (like the
// loader's FolderSource does), each directory entered once.  Throws faster::Error if root is not a
// directory or cannot be listed.
TreeListing list_jpeg_tree(const std::filesystem::path& root);

// Refuses source and destination trees that are the same or nested in either direction: a
// destination inside the source would be read back as input, and a source inside the destination
// could have its own files overwritten by mirrored outputs.  Symlinks are resolved first.
// dst_flag and src_flag name the trees in messages ("--dst", "--out"; "--src", "--data").
void check_separate_trees(const std::filesystem::path& src, const std::filesystem::path& dst,
                          const std::string& dst_flag = "--dst",
                          const std::string& src_flag = "--src");
// Whether `path` is `dir` or below it, symlinks resolved.
bool is_inside(const std::filesystem::path& path, const std::filesystem::path& dir);

}  // namespace faster::tools

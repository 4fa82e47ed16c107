// Walking dataset trees: every JPEG under a root at any depth (resize mirrors them), or the
// ImageNet-style class folders (pack labels them), always in sorted order so runs are repeatable.
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
// dataset content, and the tools' own temporaries are hidden.  Symlinked files are followed,
// symlinked directories are not (no cycles).  Throws faster::Error if root is not a directory.
TreeListing list_jpeg_tree(const std::filesystem::path& root);

// An ImageNet-style tree (torchvision ImageFolder): every non-hidden folder directly under the root
// is a class, labels are class indices in sorted name order, and a class holds the JPEGs anywhere
// below its folder, sorted by relative path.  Files directly under the root belong to no class.
struct ClassTree {
  std::vector<std::string> classes;
  std::vector<std::string> files;  // relative to the root
  std::vector<int> labels;         // per file
  int64_t ignored = 0;             // entries that are neither class folders nor JPEGs in one
  uint64_t bytes = 0;              // total size of the files
};
// Throws faster::Error if root is not a directory or holds no class folder.
ClassTree list_class_tree(const std::filesystem::path& root);

// Refuses source and destination trees that are the same or nested in either direction: a
// destination inside the source would be read back as input, and a source inside the destination
// could have its own files overwritten by mirrored outputs.  Symlinks are resolved first.
void check_separate_trees(const std::filesystem::path& src, const std::filesystem::path& dst);

}  // namespace faster::tools

// A folder in torchvision's ImageFolder convention: root/<class>/**/<image>.jpg, classes sorted by
// name, label = class index.  JPEG and PNG files are listed (.jpg, .jpeg, .png, any case); other
// files are ignored like torchvision ignores unknown extensions, but for the images ImageFolder
// reads and faster does not (BMP, WebP, TIFF, PPM/PGM), which refuse the tree: left out, they
// would give another dataset than torchvision's.
// The tree is read by list_image_tree() (image_tree.h), like `resize` reads it: symlinks followed,
// each directory entered once, and only regular files taken as images.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "faster/data/sources/image_tree.h"
#include "faster/data/sources/source.h"

namespace faster::data {

class FolderSource : public Source {
 public:
  // Scans `root`.  Throws faster::Error when root is missing or not a folder, has no class folders,
  // holds images of a format faster does not read (naming the first), or has no images at all.  An
  // empty class folder is kept (its label stays reserved, so labels agree with a val/ tree that has
  // it) and reported by empty_classes(): torchvision refuses such a tree, but one empty folder
  // should not stop a benchmark.  Entries named like images that are not files (FIFOs, sockets,
  // devices) are left out and reported by not_files().  With `warn`, both are also logged as
  // warnings.
  explicit FolderSource(const std::filesystem::path& root, bool warn = true);

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  void get(int64_t index, Sample& out) const override;
  int label(int64_t index) const override { return labels_[index]; }
  const std::vector<std::string>& classes() const override { return classes_; }
  std::string name(int64_t index) const override;
  std::string describe() const override;
  int64_t evict_page_cache() const override;

  const std::vector<std::string>& empty_classes() const { return empty_classes_; }
  // Paths relative to root, in class folders.
  const std::vector<ImageTree::NotAFile>& not_files() const { return not_files_; }
  const std::filesystem::path& root() const { return root_; }

 private:
  void warn_about_left_out() const;

  std::filesystem::path root_;
  std::vector<std::string> classes_, empty_classes_;
  std::vector<std::string> files_;  // relative to root
  std::vector<int> labels_;
  std::vector<ImageTree::NotAFile> not_files_;
};

}  // namespace faster::data

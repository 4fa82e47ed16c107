// A folder in torchvision's ImageFolder convention: root/<class>/**/<image>.jpg, classes sorted by
// name, label = class index.  Only JPEG extensions are listed (.jpg, .jpeg, any case): faster
// decodes JPEG only, and other files are ignored like torchvision ignores unknown extensions.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "faster/data/sources/source.h"

namespace faster::data {

class FolderSource : public Source {
 public:
  // Scans `root`.  Throws faster::Error when root is missing or not a folder, has no class folders,
  // or has no images at all.  An empty class folder is kept (its label stays reserved, so labels
  // agree with a val/ tree that has it) and reported by empty_classes() and a warning: torchvision
  // refuses such a tree, but one empty folder should not stop a benchmark.
  explicit FolderSource(const std::filesystem::path& root, bool warn_empty = true);

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  void get(int64_t index, Sample& out) const override;
  int label(int64_t index) const override { return labels_[index]; }
  const std::vector<std::string>& classes() const override { return classes_; }
  std::string name(int64_t index) const override;
  std::string describe() const override;
  int64_t evict_page_cache() const override;

  const std::vector<std::string>& empty_classes() const { return empty_classes_; }
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
  std::vector<std::string> classes_, empty_classes_;
  std::vector<std::string> files_;  // relative to root
  std::vector<int> labels_;
};

// Whether a file name has a JPEG extension (.jpg, .jpeg; case-insensitive).
bool has_jpeg_extension(const std::string& filename);

}  // namespace faster::data

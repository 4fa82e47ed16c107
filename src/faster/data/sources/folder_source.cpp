// FolderSource implementation: one scan at construction (sorted, so the order and the labels are
// the same on every machine), then plain POSIX reads from any thread.
#include "faster/data/sources/folder_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "faster/core/error.h"
#include "faster/core/fd.h"
#include "faster/core/log.h"

namespace faster::data {
namespace fs = std::filesystem;

FolderSource::FolderSource(const fs::path& root, bool warn) : root_(root) {
  std::error_code ec;
  if (!fs::exists(root, ec)) FASTER_NOT_FOUND("dataset folder ", root.string(), " does not exist");
  if (!fs::is_directory(root, ec)) FASTER_THROW(root.string(), " is not a folder");
  // The root's own directories are the classes, a link to one entered already included (it stays
  // an empty class, so labels do not shift).
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory()) classes_.push_back(e.path().filename().string());
  if (ec) FASTER_THROW("cannot list ", root.string(), ": ", ec.message());
  std::sort(classes_.begin(), classes_.end());
  if (classes_.empty())
    throw NotFoundError("no class folders in " + root.string(),
                        "expected ImageNet-style " + root.string() + "/<class>/<image>.JPEG");
  // A dataset's root (train/ and val/ holding class folders) where one split is read would label
  // every image by its split: refused.
  const auto is_split_name = [](const std::string& c) {
    return c == "train" || c == "val" || c == "test";
  };
  if (std::all_of(classes_.begin(), classes_.end(), is_split_name)) {
    bool holds_folders = false;
    std::string names;
    for (const auto& c : classes_) {
      names += (names.empty() ? "" : ", ") + c + "/";
      for (const auto& e : fs::directory_iterator(root / c, ec))
        holds_folders = holds_folders || e.is_directory(ec);
    }
    if (holds_folders)
      throw Error(
          root.string() + " is a dataset's root (" + names +
              " of class folders), not one split: its images would be labelled by their "
              "split",
          "give one split, " +
              (root /
               (std::count(classes_.begin(), classes_.end(), "train") ? "train" : classes_.front()))
                  .string() +
              " (faster pack: one database per split)");
  }
  ImageTree tree = list_image_tree(root);
  const auto class_of = [&](const std::string& rel) {
    const size_t slash = rel.find('/');
    if (slash == std::string::npos) return -1;  // directly under root: not a sample
    const auto it = std::lower_bound(classes_.begin(), classes_.end(), rel.substr(0, slash));
    return it != classes_.end() && rel.compare(0, slash, *it) == 0
               ? static_cast<int>(it - classes_.begin())
               : -1;
  };
  // Paths sorted within a class (torchvision walks sorted too), classes in label order.
  std::vector<std::pair<int, std::string>> found;
  for (auto& rel : tree.images)
    if (const int label = class_of(rel); label >= 0) found.emplace_back(label, std::move(rel));
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int64_t> per_class(classes_.size(), 0);
  for (auto& [label, rel] : found) {
    ++per_class[static_cast<size_t>(label)];
    files_.push_back(std::move(rel));
    labels_.push_back(label);
  }
  for (size_t c = 0; c < classes_.size(); ++c)
    if (per_class[c] == 0) empty_classes_.push_back(classes_[c]);
  for (auto& entry : tree.not_files)
    if (class_of(entry.path) >= 0) not_files_.push_back(std::move(entry));
  std::vector<std::string> unread;
  for (const auto& rel : tree.unread)
    if (class_of(rel) >= 0) unread.push_back(rel);
  refuse_unread_images(root, unread);
  if (files_.empty())
    FASTER_NOT_FOUND("no .jpg/.jpeg/.png images in the ", classes_.size(), " class folders of ",
                     root.string());
  if (warn) warn_about_left_out();
}

void FolderSource::warn_about_left_out() const {
  constexpr size_t kNamed = 5;
  if (!empty_classes_.empty()) {
    std::string names;
    for (size_t i = 0; i < empty_classes_.size() && i < kNamed; ++i)
      names += " " + empty_classes_[i];
    log::warn(empty_classes_.size(), " of ", classes_.size(), " class folders in ", root_.string(),
              " have no images (their labels stay reserved):", names,
              empty_classes_.size() > kNamed ? " ..." : "");
  }
  if (!not_files_.empty()) {
    std::string names;
    for (size_t i = 0; i < not_files_.size() && i < kNamed; ++i)
      names += " " + not_files_[i].path + " (" + not_files_[i].kind + ")";
    log::warn("left out ", not_files_.size(), " entries of ", root_.string(),
              " named like images that are not regular files:", names,
              not_files_.size() > kNamed ? " ..." : "");
  }
}

std::string FolderSource::name(int64_t index) const {
  return (root_ / files_[index]).string();
}

std::string FolderSource::describe() const {
  return "folder " + root_.string() + " (" + std::to_string(classes_.size()) + " classes, " +
         std::to_string(files_.size()) + " images)";
}

void FolderSource::get(int64_t index, Sample& out) const {
  read_regular_file(name(index), out.bytes);
  out.label = labels_[index];
}

int64_t FolderSource::evict_page_cache() const {
  int64_t advised = 0;
  for (int64_t i = 0; i < size(); ++i) {
    Fd fd(::open(name(i).c_str(), kImageOpenFlags));
    if (fd.get() < 0) continue;  // unreadable files are reported when read
    // Only clean pages are dropped; data just written may need a sync first.
    ::fdatasync(fd.get());
    if (::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED) == 0) ++advised;
  }
  return advised;
}

}  // namespace faster::data

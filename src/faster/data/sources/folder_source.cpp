// FolderSource implementation: one scan at construction (sorted, so the order and the labels are
// the same on every machine), then plain POSIX reads from any thread.
#include "faster/data/sources/folder_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "faster/core/error.h"
#include "faster/core/fd.h"
#include "faster/core/log.h"

namespace faster::data {
namespace fs = std::filesystem;
namespace {

// The JPEG files under a class folder, relative to root, sorted (torchvision walks sorted too).
// Symlinks are followed; a dangling one is listed, and fails when read, like any unreadable file.
std::vector<std::string> list_images(const fs::path& root, const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec);
  if (ec) FASTER_THROW("cannot list ", dir.string(), ": ", ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) FASTER_THROW("cannot list ", dir.string(), ": ", ec.message());
    if (it->is_directory(ec)) continue;
    if (has_jpeg_extension(it->path().filename().string()))
      files.push_back(it->path().lexically_relative(root).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

bool has_jpeg_extension(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == "jpg" || ext == "jpeg";
}

FolderSource::FolderSource(const fs::path& root, bool warn_empty) : root_(root) {
  std::error_code ec;
  if (!fs::exists(root, ec)) FASTER_THROW("dataset folder ", root.string(), " does not exist");
  if (!fs::is_directory(root, ec)) FASTER_THROW(root.string(), " is not a folder");
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory()) classes_.push_back(e.path().filename().string());
  if (ec) FASTER_THROW("cannot list ", root.string(), ": ", ec.message());
  std::sort(classes_.begin(), classes_.end());
  if (classes_.empty())
    throw Error("no class folders in " + root.string(),
                "expected ImageNet-style " + root.string() + "/<class>/<image>.JPEG");
  for (int label = 0; label < static_cast<int>(classes_.size()); ++label) {
    auto found = list_images(root, root / classes_[label]);
    if (found.empty()) empty_classes_.push_back(classes_[label]);
    for (auto& f : found) {
      files_.push_back(std::move(f));
      labels_.push_back(label);
    }
  }
  if (files_.empty())
    FASTER_THROW("no .jpg/.jpeg images in the ", classes_.size(), " class folders of ",
                 root.string());
  if (warn_empty && !empty_classes_.empty()) {
    std::string names;
    for (size_t i = 0; i < empty_classes_.size() && i < 5; ++i) names += " " + empty_classes_[i];
    log::warn(empty_classes_.size(), " of ", classes_.size(), " class folders in ", root.string(),
              " have no images (their labels stay reserved):", names,
              empty_classes_.size() > 5 ? " ..." : "");
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
  const std::string path = name(index);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) FASTER_THROW("cannot open ", path, ": ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) FASTER_THROW("cannot stat ", path, ": ", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) FASTER_THROW(path, " is not a regular file");
  out.bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.bytes.size()) {
    const ssize_t n = ::read(fd.get(), out.bytes.data() + done, out.bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) FASTER_THROW("cannot read ", path, ": ", std::strerror(errno));
    if (n == 0) break;  // the file shrank since fstat: decode will see the truncation
    done += static_cast<size_t>(n);
  }
  out.bytes.resize(done);
  out.label = labels_[index];
}

int64_t FolderSource::evict_page_cache() const {
  int64_t advised = 0;
  for (int64_t i = 0; i < size(); ++i) {
    Fd fd(::open(name(i).c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) continue;  // unreadable files are reported when read
    // Only clean pages are dropped; data just written may need a sync first.
    ::fdatasync(fd.get());
    if (::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED) == 0) ++advised;
  }
  return advised;
}

}  // namespace faster::data

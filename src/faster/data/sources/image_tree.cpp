// Image tree listing and reading with POSIX calls: readdir's d_type spares a stat per plain file
// (a 1.3 M-file tree is listed in seconds), directories are identified by (device, inode).
#include "faster/data/sources/image_tree.h"
#include "faster/data/sources/source.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "faster/core/error.h"
#include "faster/core/fd.h"
#include "faster/core/file.h"
#include "faster/core/text.h"

namespace faster::data {
namespace fs = std::filesystem;
namespace {

std::string reason(int code) {
  char buf[256];
  return strerror_r(code, buf, sizeof buf);  // GNU: returns the message, maybe not in buf
}

const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  return "not a file";
}

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

struct DirEntry {
  std::string name;
  unsigned char type;  // d_type: DT_UNKNOWN where the file system does not say
};

// A directory's entries but "." and "..", sorted by name.
std::vector<DirEntry> read_directory(const fs::path& dir) {
  std::unique_ptr<DIR, DirCloser> d(::opendir(dir.c_str()));
  if (!d) FASTER_THROW("cannot list ", dir.string(), ": ", reason(errno));
  std::vector<DirEntry> entries;
  for (errno = 0; const dirent* e = ::readdir(d.get()); errno = 0)
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      entries.push_back({e->d_name, e->d_type});
  if (errno != 0) FASTER_THROW("cannot list ", dir.string(), ": ", reason(errno));
  std::sort(entries.begin(), entries.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return entries;
}

}  // namespace

namespace {
std::string lower_extension(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return "";
  return lower_case(name.substr(dot + 1));
}
}  // namespace

bool has_jpeg_extension(const std::string& name) {
  const std::string ext = lower_extension(name);
  return ext == "jpg" || ext == "jpeg";
}

bool has_image_extension(const std::string& name) {
  return has_jpeg_extension(name) || lower_extension(name) == "png";
}

std::string unread_image_format(const std::string& name) {
  const std::string ext = lower_extension(name);
  if (ext == "bmp") return "BMP";
  if (ext == "webp") return "WebP";
  if (ext == "tif" || ext == "tiff") return "TIFF";
  if (ext == "ppm" || ext == "pgm") return "PPM/PGM";
  return "";
}

void refuse_unread_images(const fs::path& root, const std::vector<std::string>& unread) {
  if (unread.empty()) return;
  throw Error((root / unread.front()).string() + ": a " + unread_image_format(unread.front()) +
                  " image, which faster does not read (JPEG and PNG); " +
                  std::to_string(unread.size()) + " such file(s) in " + root.string(),
              "convert them to PNG or JPEG (ImageMagick: mogrify -format png *.bmp), or move "
              "them out of the tree");
}

void check_tree_finished(const fs::path& dir) {
  // The folder itself, however it is named (a trailing "/" or "/.", a link to it), and its parent.
  const fs::path folder = resolved(dir);
  for (const fs::path& d : {folder, folder.parent_path()})
    for (const char* name : kTreeManifests) {
      std::ifstream in(d / name);
      if (!in) continue;
      const auto manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      if (!manifest.is_object() || !manifest.contains("complete") || manifest["complete"] != false)
        continue;
      const std::string tool = manifest.value("tool", std::string("faster"));
      throw Error(detail::concat(dir.string(), ": the '", tool, "' writing ", d.string(),
                                 " has not finished (interrupted, or stopped by an error): "
                                 "images are missing"),
                  "run the same '" + tool + "' again to finish it");
    }
}

ImageTree list_image_tree(const fs::path& root) {
  struct stat st;
  if (::stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    FASTER_THROW("not a directory: ", root.string());
  check_tree_finished(root);
  ImageTree tree;
  std::set<std::pair<dev_t, ino_t>> entered{{st.st_dev, st.st_ino}};
  const auto enter = [&](const std::string& rel, std::deque<std::string>& into) {
    if (entered.insert({st.st_dev, st.st_ino}).second) {
      tree.dirs.push_back(rel);
      into.push_back(rel);
    } else {
      ++tree.ignored;
    }
  };
  // The tree's own directories first (breadth first, names sorted), links to directories after
  // them, in the order found: a link into the tree then finds its target entered already.
  std::deque<std::string> pending{""}, links;
  while (!pending.empty() || !links.empty()) {
    if (pending.empty()) {
      const std::string rel = std::move(links.front());
      links.pop_front();
      if (::stat((root / rel).c_str(), &st) == 0) enter(rel, pending);  // else it went away
      continue;
    }
    const std::string dir = std::move(pending.front());
    pending.pop_front();
    for (const DirEntry& e : read_directory(dir.empty() ? root : root / dir)) {
      const std::string rel = dir.empty() ? e.name : dir + "/" + e.name;
      const std::string path = (root / rel).string();
      const bool image_name = has_image_extension(e.name);
      mode_t mode = DTTOIF(e.type);
      bool link = e.type == DT_LNK;
      if (e.type == DT_UNKNOWN) {  // the file system does not say: ask
        if (::lstat(path.c_str(), &st) != 0) st.st_mode = 0;
        link = S_ISLNK(st.st_mode);
        mode = st.st_mode;
      }
      if (link || e.type == DT_DIR) {  // links resolved; directories need their identity
        if (::stat(path.c_str(), &st) != 0) {
          // A dangling link or one that loops: an image name stays listed and fails when read.
          if (image_name)
            tree.images.push_back(rel);
          else
            ++tree.ignored;
          continue;
        }
        mode = st.st_mode;
      }
      if (S_ISDIR(mode)) {
        if (link)
          links.push_back(rel);
        else
          enter(rel, pending);
      } else if (!image_name) {
        if (S_ISREG(mode) && !unread_image_format(e.name).empty())
          tree.unread.push_back(rel);
        else
          ++tree.ignored;
      } else if (S_ISREG(mode)) {
        tree.images.push_back(rel);
      } else {
        tree.not_files.push_back({rel, kind_of(mode)});
      }
    }
  }
  // Sorted paths put every directory after its parent, so creating them in order works.
  std::sort(tree.dirs.begin(), tree.dirs.end());
  std::sort(tree.images.begin(), tree.images.end());
  std::sort(tree.unread.begin(), tree.unread.end());
  std::sort(tree.not_files.begin(), tree.not_files.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  return tree;
}

void read_regular_file(const fs::path& path, std::vector<uint8_t>& out, struct stat* st) {
  Fd fd(::open(path.c_str(), kImageOpenFlags));
  if (fd.get() < 0) FASTER_THROW("cannot open ", path.string(), ": ", reason(errno));
  struct stat local;
  if (!st) st = &local;
  if (::fstat(fd.get(), st) != 0) FASTER_THROW("cannot stat ", path.string(), ": ", reason(errno));
  if (!S_ISREG(st->st_mode))
    FASTER_THROW(path.string(), " is not a regular file (", kind_of(st->st_mode), ")");
  // Blocking reads again (a file system may honour O_NONBLOCK on regular files).
  ::fcntl(fd.get(), F_SETFL, 0);
  resize_bytes(out, static_cast<size_t>(st->st_size));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd.get(), out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) FASTER_THROW("cannot read ", path.string(), ": ", reason(errno));
    if (n == 0) break;  // the file shrank since fstat: decoding will see the truncation
    got += static_cast<size_t>(n);
  }
  out.resize(got);
}

}  // namespace faster::data

// ResizeState: the journal is read in one pass at the start and appended with one write() per
// line on an O_APPEND descriptor, so lines of concurrent workers never interleave.
#include "faster/tools/resize_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "faster/core/error.h"
#include "faster/tools/file_io.h"

namespace faster::tools {
namespace fs = std::filesystem;
namespace {

constexpr const char* kHeader =
    "# faster resize: source bytes, source mtime (ns), output inode, output mtime (ns), path\n";

int64_t nanoseconds(const timespec& t) {
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

ResizeState::ResizeState(const fs::path& path, const std::vector<std::string>& images)
    : path_(path),
      images_(images),
      stamps_(images.size()),
      journal_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
  if (journal_.get() < 0) FASTER_THROW("cannot write ", path.string(), ": ", errno_text(errno));
  std::ifstream in(path);
  std::string text;
  while (std::getline(in, text) && !in.eof()) {  // a last line without '\n' was cut short
    if (text.empty() || text[0] == '#') continue;
    int64_t v[4];
    const char* p = text.c_str();
    bool ok = true;
    for (int64_t& field : v) {
      char* end = nullptr;
      field = std::strtoll(p, &end, 10);
      ok = ok && end != p && *end == '\t';
      if (!ok) break;
      p = end + 1;
    }
    if (!ok) continue;
    const auto it = std::lower_bound(images.begin(), images.end(), p);
    if (it != images.end() && *it == p)
      stamps_[static_cast<size_t>(it - images.begin())] = {v[0], v[1], v[2], v[3]};
  }
}

bool ResizeState::up_to_date(size_t i, const struct stat& in, const struct stat& out) const {
  const Stamp& s = stamps_[i];
  return s.src_size == in.st_size && s.src_mtime == nanoseconds(in.st_mtim) &&
         s.out_inode == static_cast<int64_t>(out.st_ino) && s.out_mtime == nanoseconds(out.st_mtim);
}

std::string ResizeState::line(const Stamp& s, const std::string& path) {
  return std::to_string(s.src_size) + '\t' + std::to_string(s.src_mtime) + '\t' +
         std::to_string(s.out_inode) + '\t' + std::to_string(s.out_mtime) + '\t' + path + '\n';
}

void ResizeState::record(size_t i, const struct stat& in, const struct stat& out) {
  const Stamp s{in.st_size, nanoseconds(in.st_mtim), static_cast<int64_t>(out.st_ino),
                nanoseconds(out.st_mtim)};
  const std::string text = line(s, images_[i]);
  std::lock_guard<std::mutex> lock(mutex_);
  const ssize_t n = ::write(journal_.get(), text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size()))
    FASTER_THROW("cannot write ", path_.string(), ": ", errno_text(n < 0 ? errno : ENOSPC));
  stamps_[i] = s;
}

void ResizeState::compact() {
  std::lock_guard<std::mutex> lock(mutex_);
  journal_.close();
  std::string text = kHeader;
  for (size_t i = 0; i < stamps_.size(); ++i)
    if (stamps_[i].src_size >= 0) text += line(stamps_[i], images_[i]);
  write_file_atomic(path_, text);
}

}  // namespace faster::tools

// ResizeState: the journal is read in one pass at the start and appended with one write() per
// line on an O_APPEND descriptor, so lines of concurrent workers never interleave.
#include "faster/tools/resize_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "faster/core/error.h"
#include "faster/tools/file_io.h"

namespace faster::tools {
namespace fs = std::filesystem;
namespace {

constexpr const char* kHeader =
    "# faster resize: source bytes, source mtime (ns), output inode, output mtime (ns), path[, "
    "why the source is bad: a copy]\n";

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
    // The path, then for a bad image's copy the reason (a tab in a field is escaped).
    const char* tab = std::strchr(p, '\t');
    const std::string rel = tsv_unfield(tab ? std::string(p, tab) : std::string(p));
    const Stamp stamp{v[0], v[1], v[2], v[3], tab ? tsv_unfield(tab + 1) : std::string()};
    const auto it = std::lower_bound(images.begin(), images.end(), rel);
    if (it != images.end() && *it == rel)
      stamps_[static_cast<size_t>(it - images.begin())] = stamp;
    else
      gone_[rel] = stamp;
  }
}

namespace {

// Whether `path` is still the output a stamp recorded (not deleted, replaced or rewritten since).
bool is_recorded_output(const fs::path& path, int64_t inode, int64_t mtime) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         static_cast<int64_t>(st.st_ino) == inode && nanoseconds(st.st_mtim) == mtime;
}

}  // namespace

void ResizeState::remove_output(size_t i, const fs::path& output) {
  Stamp& s = stamps_[i];
  if (s.src_size < 0) return;
  if (is_recorded_output(output, s.out_inode, s.out_mtime)) ::unlink(output.c_str());
  s = Stamp{};
}

int64_t ResizeState::remove_stale(const fs::path& dst, const std::vector<std::string>& keep) {
  int64_t removed = 0;
  std::vector<std::string> folders;
  for (const auto& [rel, s] : gone_) {
    if (is_recorded_output(dst / rel, s.out_inode, s.out_mtime) &&
        ::unlink((dst / rel).c_str()) == 0)
      ++removed;
    for (auto dir = fs::path(rel).parent_path(); !dir.empty(); dir = dir.parent_path())
      folders.push_back(dir.string());
  }
  gone_.clear();
  // Deepest first, so a folder emptied by its subfolders' removal goes too; rmdir() leaves any
  // folder that still holds something.
  std::sort(folders.begin(), folders.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  folders.erase(std::unique(folders.begin(), folders.end()), folders.end());
  for (const auto& dir : folders)
    if (!std::binary_search(keep.begin(), keep.end(), dir)) ::rmdir((dst / dir).c_str());
  return removed;
}

bool ResizeState::up_to_date(size_t i, const struct stat& in, const struct stat& out) const {
  const Stamp& s = stamps_[i];
  return s.src_size == in.st_size && s.src_mtime == nanoseconds(in.st_mtim) &&
         s.out_inode == static_cast<int64_t>(out.st_ino) && s.out_mtime == nanoseconds(out.st_mtim);
}

std::string ResizeState::line(const Stamp& s, const std::string& path) {
  return std::to_string(s.src_size) + '\t' + std::to_string(s.src_mtime) + '\t' +
         std::to_string(s.out_inode) + '\t' + std::to_string(s.out_mtime) + '\t' + tsv_field(path) +
         (s.bad.empty() ? "" : '\t' + tsv_field(s.bad)) + '\n';
}

void ResizeState::record(size_t i, const struct stat& in, const struct stat& out,
                         const std::string& bad) {
  const Stamp s{in.st_size, nanoseconds(in.st_mtim), static_cast<int64_t>(out.st_ino),
                nanoseconds(out.st_mtim), bad};
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

std::string tsv_field(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string tsv_unfield(const std::string& field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] != '\\' || i + 1 == field.size()) {
      out += field[i];
      continue;
    }
    const char c = field[++i];
    out += c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : c;
  }
  return out;
}

}  // namespace faster::tools

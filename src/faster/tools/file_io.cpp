// File reading and atomic writing with POSIX calls: every failure names the path and errno's text.
#include "faster/tools/file_io.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "faster/core/error.h"
#include "faster/core/fd.h"

namespace faster::tools {
namespace fs = std::filesystem;

namespace {
constexpr const char* kTempSuffix = ".faster-tmp";

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  ::remove(path);  // best effort: a clean-up carries on past what it cannot remove
  return 0;
}

void write_all(int fd, const uint8_t* data, size_t size, const fs::path& final_path) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // A zero-byte write without errno is still a failure; call it what it usually is.
      const int code = n < 0 ? errno : ENOSPC;
      FASTER_THROW("cannot write ", final_path.string(), ": ", errno_text(code));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace

std::string errno_text(int code) {
  char buf[256];
  // GNU strerror_r returns the message (possibly not in buf).
  return strerror_r(code, buf, sizeof buf);
}

void remove_tree(const fs::path& path) noexcept {
  // Depth first (contents before their directory), not following links.
  ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

fs::path temp_path_for(const fs::path& final_path) {
  return final_path.parent_path() / ("." + final_path.filename().string() + kTempSuffix);
}

bool is_temp_name(const std::string& name) {
  const size_t n = std::strlen(kTempSuffix);
  return name.size() > n + 1 && name[0] == '.' &&
         name.compare(name.size() - n, n, kTempSuffix) == 0;
}

void refuse_foreign_entries(const fs::path& out, const std::unordered_set<std::string>& own,
                            const std::string& not_ours, const std::string& tool) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(out, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(out).string();
    if (!own.count(rel) && !is_temp_name(it->path().filename().string()))
      throw Error(
          "--out " + out.string() + " holds " + rel + ", which " + not_ours,
          "remove it, or use another --out: " + tool + " never mixes its files with others");
  }
  if (ec) FASTER_THROW("cannot list --out ", out.string(), ": ", ec.message());
}

void write_file_atomic(const fs::path& final_path, const uint8_t* data, size_t size,
                       const std::function<void(const struct stat&)>& before_rename, bool durable) {
  const fs::path temp = temp_path_for(final_path);
  // A leftover temporary (or anything planted under its name) is removed rather than followed.
  ::unlink(temp.c_str());
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) FASTER_THROW("cannot write ", final_path.string(), ": ", errno_text(errno));
  try {
    write_all(fd.get(), data, size, final_path);
    if (durable && ::fsync(fd.get()) != 0)
      FASTER_THROW("cannot write ", final_path.string(), ": ", errno_text(errno));
    struct stat st;
    if (before_rename && ::fstat(fd.get(), &st) != 0)
      FASTER_THROW("cannot stat ", temp.string(), ": ", errno_text(errno));
    if (fd.close() != 0)
      FASTER_THROW("cannot write ", final_path.string(), ": ", errno_text(errno));
    if (before_rename) before_rename(st);
    if (::rename(temp.c_str(), final_path.c_str()) != 0)
      FASTER_THROW("cannot rename ", temp.string(), " to ", final_path.filename().string(), ": ",
                   errno_text(errno));
    if (durable) {  // the rename itself: the folder's entry (best effort: some filesystems refuse)
      const auto parent =
          final_path.parent_path().empty() ? fs::path(".") : final_path.parent_path();
      Fd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (dir.get() >= 0) ::fsync(dir.get());
    }
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
}

void write_manifest(const fs::path& path, nlohmann::json manifest, bool complete) {
  manifest["complete"] = complete;
  write_file_atomic(path, manifest.dump(1) + "\n");
}

nlohmann::json read_json_file(const fs::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return nlohmann::json();
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  std::fclose(f);
  return j;
}

void prepare_output_directory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directory(dir, ec);
  if (ec || !fs::is_directory(dir))
    FASTER_THROW("cannot create directory ", dir.string(), ": ",
                 ec ? ec.message() : "a file of that name is in the way");
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (is_temp_name(entry.path().filename().string())) fs::remove(entry.path(), ec);
}

bool ends_with_jpeg_eoi(const fs::path& path, int64_t size) {
  if (size < 2) return false;
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return false;
  unsigned char tail[2] = {0, 0};
  return ::pread(fd.get(), tail, 2, size - 2) == 2 && tail[0] == 0xFF && tail[1] == 0xD9;
}

void sync_directory(const fs::path& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0 || ::fsync(fd.get()) != 0)
    FASTER_THROW("cannot sync directory ", dir.string(), ": ", errno_text(errno));
}

DirectoryLock::DirectoryLock(const fs::path& dir, const std::string& what) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) FASTER_THROW("cannot open directory ", dir.string(), ": ", errno_text(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int code = errno;
    ::close(fd_);
    if (code == EWOULDBLOCK) FASTER_THROW("another ", what, " is writing into ", dir.string());
    FASTER_THROW("cannot lock ", dir.string(), ": ", errno_text(code));
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {
void check_writable_dir(const std::filesystem::path& dir, const std::string& flag,
                        const std::filesystem::path& named) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    FASTER_THROW(flag, " ", named.string(), ": the folder ", dir.string(), " does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    FASTER_THROW(flag, " ", named.string(), ": cannot write in ", dir.string(), " (",
                 std::strerror(errno), ")");
}
}  // namespace

void check_output_file(const std::filesystem::path& path, const std::string& flag) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    FASTER_THROW(flag, " ", path.string(), " is a folder; give a file name");
  const auto parent = std::filesystem::absolute(path).parent_path();
  check_writable_dir(parent, flag, path);
}

namespace {
// `dir` can be made with its parents: the nearest of it and its parents that exists is a folder
// that may be written.  Messages name `flag` and `named` (the path given).
void check_creatable_dir(const std::filesystem::path& dir, const std::string& flag,
                         const std::filesystem::path& named) {
  std::filesystem::path made = std::filesystem::absolute(dir);
  std::error_code ec;
  while (!std::filesystem::exists(made, ec) && made.has_relative_path()) made = made.parent_path();
  if (!std::filesystem::is_directory(made, ec))
    FASTER_THROW(flag, " ", named.string(), ": ", made.string(), " is a file, not a folder");
  check_writable_dir(made, flag, named);
}
}  // namespace

void check_output_path(const std::filesystem::path& path, const std::string& flag) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    FASTER_THROW(flag, " ", path.string(), " is a folder; give a file name");
  check_creatable_dir(std::filesystem::absolute(path).parent_path(), flag, path);
}

void make_parent_folders(const std::filesystem::path& path, const std::string& flag) {
  const auto parent = std::filesystem::absolute(path).parent_path();
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec)
    FASTER_THROW(flag, " ", path.string(), ": cannot make ", parent.string(), ": ", ec.message());
}

void prepare_output_file(const std::filesystem::path& path, const std::string& flag) {
  check_output_path(path, flag);
  make_parent_folders(path, flag);
}

void check_output_dir(const std::filesystem::path& dir, const std::string& flag) {
  check_creatable_dir(dir, flag, dir);
}

}  // namespace faster::tools

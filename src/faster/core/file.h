// RAII owner of a C stdio FILE: closed on every path out of a scope, and never twice; and one
// name for a place in the file system.
#pragma once

#include <cstdio>
#include <filesystem>
#include <system_error>

namespace faster {

// `p` as the folder or file it names: absolute, symlinks resolved as far as it exists (links
// followed before any "..": L/.. is L's target's parent), no trailing separator, so that two names
// of one place compare equal.  A prefix that cannot be examined (no permission to search it, a
// link loop) leaves the path as written, made absolute and normalised, rather than an empty path,
// which would equal every other such path.
inline std::filesystem::path resolved(const std::filesystem::path& p) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(p, ec);
  std::filesystem::path out = std::filesystem::weakly_canonical(absolute, ec);
  if (ec) out = absolute.lexically_normal();
  return out.has_filename() ? out : out.parent_path();  // "a/b/" -> "a/b"
}

class File {
 public:
  File(const char* path, const char* mode) : f_(std::fopen(path, mode)) {}
  ~File() {
    if (f_) std::fclose(f_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  explicit operator bool() const { return f_ != nullptr; }
  std::FILE* get() const { return f_; }
  // Closes now and reports the result (0, or EOF): buffered write errors only surface here.
  int close() {
    const int rc = f_ ? std::fclose(f_) : EOF;
    f_ = nullptr;
    return rc;
  }

 private:
  std::FILE* f_;
};

}  // namespace faster

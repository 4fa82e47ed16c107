// RAII owner of a C stdio FILE: closed on every path out of a scope, and never twice.
#pragma once

#include <cstdio>

namespace faster {

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

// Errors: one exception type that carries a user-facing message (and an optional hint), its
// UsageError kind for what the command line alone gets wrong, the FASTER_CHECK macro that throws
// with file:line, and check_range for numeric flags.  The CLI prints the message on one line and
// exits 1, or 2 for a UsageError (the exit codes: docs/exit_codes.md).
#pragma once

#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

namespace faster {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, std::string hint = {})
      : std::runtime_error(what), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }

 private:
  std::string hint_;
};

// A file, folder or part of a dataset the user named that is not there: no such path, no class
// folders, no images, a class without images.  (The Python module raises FileNotFoundError.)
class NotFoundError : public Error {
 public:
  using Error::Error;
};

// What the command line alone gets wrong, whatever the machine and the data: a value outside its
// range, a malformed value, flags that conflict or need each other.  Found before any work starts.
class UsageError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

// Builds a message from any streamable pieces: FASTER_THROW("bad magic ", magic, " in ", path).
#define FASTER_THROW(...) throw ::faster::Error(::faster::detail::concat(__VA_ARGS__))

// A usage error: FASTER_USAGE_ERROR("--nproc needs --parallel ddp").
#define FASTER_USAGE_ERROR(...) throw ::faster::UsageError(::faster::detail::concat(__VA_ARGS__))
// Something named is not there: FASTER_NOT_FOUND("dataset ", path, " does not exist").
#define FASTER_NOT_FOUND(...) throw ::faster::NotFoundError(::faster::detail::concat(__VA_ARGS__))

// Internal invariants name file:line; user-facing validation uses FASTER_THROW with a plain
// message.
#define FASTER_CHECK(cond, ...)                                                                  \
  do {                                                                                           \
    if (!(cond))                                                                                 \
      throw ::faster::Error(::faster::detail::concat(__VA_ARGS__, " [", __FILE__, ":", __LINE__, \
                                                     " check failed: " #cond "]"));              \
  } while (0)

// A numeric flag's value checked against [lo, hi] (NaN fails): a usage error "--flag must be
// between lo and hi (got v)", or "at least lo" when hi is the type's largest value.
template <typename T, typename L, typename H>
void check_range(const char* flag, T value, L lo, H hi) {
  if (value >= static_cast<T>(lo) && value <= static_cast<T>(hi)) return;
  if (static_cast<T>(hi) == std::numeric_limits<T>::max())
    FASTER_USAGE_ERROR(flag, " must be at least ", lo, " (got ", value, ")");
  FASTER_USAGE_ERROR(flag, " must be between ", lo, " and ", hi, " (got ", value, ")");
}
template <typename T, typename L>
void check_at_least(const char* flag, T value, L lo) {
  check_range(flag, value, lo, std::numeric_limits<T>::max());
}

}  // namespace faster

// Errors: one exception type that carries a user-facing message (and an optional hint), and the
// FASTER_CHECK macro that throws it with file:line.  The CLI prints the message on one line and exits 1.
#pragma once

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

// Internal invariants name file:line; user-facing validation uses FASTER_THROW with a plain message.
#define FASTER_CHECK(cond, ...)                                                            \
  do {                                                                                     \
    if (!(cond))                                                                           \
      throw ::faster::Error(::faster::detail::concat(__VA_ARGS__, " [", __FILE__, ":",      \
                                                     __LINE__, " check failed: " #cond "]")); \
  } while (0)

}  // namespace faster

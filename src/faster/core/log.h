// Logging to stderr with a level; the progress display shares the terminal and clears its line
// first.
#pragma once

#include <string>

#include "faster/core/error.h"

namespace faster::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void set_level(Level level);
Level level();
// Put before every line from now on: "rank 1: " in a job of several ranks, whose lines share
// one terminal.
void set_source(const std::string& source);
std::string source();
void write(Level level, const std::string& message);

template <typename... Args>
void info(const Args&... args) {
  if (level() <= Level::kInfo) write(Level::kInfo, detail::concat(args...));
}
template <typename... Args>
void warn(const Args&... args) {
  if (level() <= Level::kWarn) write(Level::kWarn, detail::concat(args...));
}
template <typename... Args>
void debug(const Args&... args) {
  if (level() <= Level::kDebug) write(Level::kDebug, detail::concat(args...));
}

}  // namespace faster::log

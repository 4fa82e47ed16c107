// Logging implementation: one mutex so lines from worker threads never interleave.
#include "faster/core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include "faster/core/progress.h"

namespace faster::log {
namespace {
std::atomic<Level> g_level{Level::kInfo};
std::mutex g_mutex;
std::string g_source;  // guarded by g_mutex
}  // namespace

void set_source(const std::string& source) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_source = source;
}

std::string source() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_source;
}

void set_level(Level l) {
  g_level = l;
}
Level level() {
  return g_level;
}

void write(Level l, const std::string& message) {
  static const char* kPrefix[] = {"debug: ", "", "warning: ", "error: "};
  std::lock_guard<std::mutex> lock(g_mutex);
  Progress::clear_line();
  std::fprintf(stderr, "%s%s%s\n", g_source.c_str(), kPrefix[static_cast<int>(l)], message.c_str());
  std::fflush(stderr);
}

}  // namespace faster::log

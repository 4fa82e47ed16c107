// Progress display implementation.
#include "faster/core/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace faster {
namespace {
std::atomic<bool> g_bar_active{false};
constexpr double kTtyInterval = 0.1;    // seconds between redraws on a terminal
constexpr double kPlainInterval = 5.0;  // seconds between plain lines
}  // namespace

bool Progress::interactive() {
  const char* mode = std::getenv("FASTER_PROGRESS");
  if (mode && std::strcmp(mode, "plain") == 0) return false;
  if (mode && std::strcmp(mode, "bar") == 0) return true;
  return isatty(STDERR_FILENO) == 1;
}

void Progress::clear_line() {
  if (g_bar_active) std::fputs("\r\033[K", stderr);
}

Progress::Progress(std::string label, int64_t total, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_),
      tty_(interactive()) {}

Progress::~Progress() {
  finish();
}

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::add(int64_t n) {
  const int64_t done = done_ += n;
  // Off a terminal with a count to print at: a line where the count passes a multiple of it.
  maybe_draw(!tty_ && every_ > 0 && done / every_ != (done - n) / every_);
}

void Progress::set(int64_t done) {
  done_ = done;
  maybe_draw(false);
}

void Progress::set_suffix(const std::string& suffix) {
  std::lock_guard<std::mutex> lock(mutex_);
  suffix_ = suffix;
}

std::string format_duration(double s) {
  char buf[32];
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600,
                  static_cast<int>(s) % 3600 / 60);
  }
  return buf;
}

std::string format_count(double v) {
  char buf[32];
  if (v >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2fG", v / 1e9);
  else if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  else if (v >= 1e4)
    std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  else if (v >= 10 || v == 0)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.2g", v);  // a slow rate stays visible: 0.35, 2.5
  return buf;
}

std::string Progress::render(int64_t done) const {
  const double t = elapsed_s();
  const double rate = t > 0 ? done / t : 0;
  std::string out = label_ + " ";
  char buf[128];
  if (total_ > 0) {
    const double frac = std::min(1.0, static_cast<double>(done) / total_);
    if (tty_) {
      constexpr int kWidth = 24;
      const int fill = static_cast<int>(frac * kWidth);
      out += "[" + std::string(fill, '#') + std::string(kWidth - fill, '.') + "] ";
    }
    std::snprintf(buf, sizeof buf, "%3.0f%% %lld/%lld %s", frac * 100, static_cast<long long>(done),
                  static_cast<long long>(total_), unit_.c_str());
    out += buf;
  } else {
    std::snprintf(buf, sizeof buf, "%lld %s", static_cast<long long>(done), unit_.c_str());
    out += buf;
  }
  out += "  " + format_count(rate) + " " + unit_ + "/s  " + format_duration(t);
  if (total_ > 0 && rate > 0 && done < total_)
    out += "  ETA " + format_duration((total_ - done) / rate);
  if (!suffix_.empty()) out += "  " + suffix_;
  return out;
}

void Progress::maybe_draw(bool force) {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_draw_).count();
  if (!force && (since < (tty_ ? kTtyInterval : kPlainInterval) || (!tty_ && every_ > 0))) return;
  last_draw_ = now;
  const int64_t done = done_;  // once: the count drawn is the count recorded
  const std::string line = render(done);
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    g_bar_active = true;
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
    drawn_done_ = done;
  }
  std::fflush(stderr);
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  finished_ = true;
  const int64_t done = done_;
  if (!tty_ && drawn_done_ == done) return;  // the last line printed says it all already
  const std::string line = render(done);
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s\n", line.c_str());
    g_bar_active = false;
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

}  // namespace faster

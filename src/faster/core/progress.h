// Progress display for long work: a bar with rate and ETA on a terminal, a plain line every few
// seconds otherwise (logs, CI).  Thread-safe: workers may call add() concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace faster {

class Progress {
 public:
  // total may be 0 when unknown (no bar, no ETA).  unit names what is counted ("img", "batch").
  Progress(std::string label, int64_t total, std::string unit);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void add(int64_t n = 1);
  void set(int64_t done);
  // Off a terminal, a line at every multiple of `units` units instead of every few seconds (0:
  // by time).
  void set_every(int64_t units) { every_ = units; }
  // Text shown after the counters, e.g. "loss 0.43".
  void set_suffix(const std::string& suffix);
  // Ends the display with a final line; called by the destructor if not called before.
  void finish();

  int64_t done() const { return done_; }
  double elapsed_s() const;

  // Erases an active bar so a log line can be printed cleanly (the next update redraws it).
  static void clear_line();
  // Whether stderr is a terminal; FASTER_PROGRESS=plain|bar overrides.
  static bool interactive();

 private:
  void maybe_draw(bool force);
  std::string render(int64_t done) const;  // the line for `done` units

  std::string label_, unit_, suffix_;
  int64_t total_;
  int64_t every_ = 0;
  std::atomic<int64_t> done_{0};
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool tty_, finished_ = false;
  int64_t drawn_done_ = -1;  // the count of the last plain line printed
  std::mutex mutex_;
};

// Formats seconds as "1m23s" / "4.2s" and rates as "12.3k", "250", "2.5" or "0.35" for displays.
std::string format_duration(double seconds);
std::string format_count(double value);

}  // namespace faster

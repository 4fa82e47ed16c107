// The process's start time from /proc/self/stat (field 22, clock ticks since boot) against
// CLOCK_BOOTTIME, the clock the kernel measures it on.
#include "faster/core/process_clock.h"

#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "faster/core/error.h"

namespace faster {
namespace {

double start_after_boot() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) FASTER_THROW("cannot read /proc/self/stat");
  // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
  const auto close = line.rfind(')');
  if (close == std::string::npos) FASTER_THROW("/proc/self/stat: no command name");
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  for (int i = 3; i < 22; ++i) rest >> field;  // fields 3..21
  unsigned long long ticks = 0;
  if (!(rest >> ticks)) FASTER_THROW("/proc/self/stat: no start time");
  return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double main_entered = 0;

}  // namespace

void mark_main_entered() {
  try {
    main_entered = process_seconds();
  } catch (const Error&) {
    // No /proc: the milestone stays 0 (omitted from reports); the command itself goes on.
  }
}

double main_entered_seconds() {
  return main_entered;
}

double process_seconds() {
  static const double start = start_after_boot();  // fixed for the process's life
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec) - start;
}

}  // namespace faster

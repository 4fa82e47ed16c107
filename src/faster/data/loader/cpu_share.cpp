#include "faster/data/loader/cpu_share.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "faster/core/error.h"

namespace faster::data {

CpuShare parse_cpu_share(const std::string& text, const char* flag) {
  if (text == "auto") return {kAutoShareStart, true};
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(begin, &end);
  if (text.empty() || end != begin + text.size() || errno != 0)
    FASTER_USAGE_ERROR(flag, " must be auto or a number between 0 and 1 (got '", text, "')");
  check_range(flag, value, 0, 1);
  return {value, false};
}

std::string to_string(const CpuShare& share) {
  if (share.adapt) return "auto";
  std::ostringstream os;
  os << share.value;
  return os.str();
}

double adapt_cpu_share(double share, int lead, bool threads_waited) {
  if (lead < kAutoShareLead)
    share -= kAutoShareDown;
  else if (threads_waited)
    share += kAutoShareUp;
  return std::clamp(share, 0.0, 1.0);
}

}  // namespace faster::data

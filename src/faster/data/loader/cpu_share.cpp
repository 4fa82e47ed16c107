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

double cpu_decode_cost(size_t bytes, int height, int bottom, int64_t pixels) {
  constexpr double kNsPerByte = 7.4, kNsPerPixel = 1.6;
  const double rows = height > 0 ? std::clamp(double(bottom) / height, 0.0, 1.0) : 1.0;
  return kNsPerByte * static_cast<double>(bytes) * rows + kNsPerPixel * static_cast<double>(pixels);
}

bool CheapestShare::take(double cost, double share) {
  if (share <= 0) return false;
  if (share >= 1) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!started_) threshold_ = mean_ = cost, started_ = true;
  mean_ += 0.01 * (cost - mean_);
  const bool taken = cost < threshold_;
  threshold_ += kStep * mean_ * (taken ? share - 1 : share);
  return taken;
}

}  // namespace faster::data

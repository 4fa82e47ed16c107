// Environment report implementation.
#include "faster/core/env.h"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <ATen/Parallel.h>
#include <torch/version.h>

#include "faster/core/gpu_info.h"

namespace faster {
namespace {

std::string os_name() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "unknown";
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      return pos == std::string::npos ? line : line.substr(pos + 2);
    }
  }
  return "unknown";
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

}  // namespace

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, CPU_COUNT(&set));
}

nlohmann::json env_info() {
  nlohmann::json j;
  j["faster"] = FASTER_VERSION;
  j["libtorch"] = TORCH_VERSION;
  struct utsname u;
  uname(&u);
  j["os"] = os_name();
  j["kernel"] = std::string(u.release);
  j["cpu"] = {{"model", cpu_model()},
              {"cores", std::thread::hardware_concurrency()},
              {"usable_cores", usable_cores()},
              {"torch_default_threads", at::get_num_threads()},
              {"omp_wait_policy", env_or("OMP_WAIT_POLICY", "default")}};
  j["cuda"] = gpu_info();
  return j;
}

}  // namespace faster

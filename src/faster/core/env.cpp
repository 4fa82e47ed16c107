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

int64_t available_memory_bytes() {
  int64_t available = 0;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    int64_t kb = 0;
    meminfo >> kb;
    meminfo.ignore(1 << 10, '\n');
    if (key == "MemAvailable:") available = kb * 1024;
  }
  // This process's cgroup (v2: the "0::" line of /proc/self/cgroup), where its limit is lower: the
  // limit less what the group uses, its page cache excepted (the kernel reclaims that first).
  std::ifstream groups("/proc/self/cgroup");
  std::string group;
  for (std::string line; std::getline(groups, line);)
    if (line.rfind("0::", 0) == 0) group = "/sys/fs/cgroup" + line.substr(3);
  if (group.empty()) return available;
  std::ifstream max_in(group + "/memory.max"), current_in(group + "/memory.current"),
      stat_in(group + "/memory.stat");
  int64_t max = 0, current = 0, file = 0;
  if (!(max_in >> max) || !(current_in >> current)) return available;  // "max": no limit
  for (std::string key; stat_in >> key;) {
    int64_t value = 0;
    stat_in >> value;
    if (key == "file") file = value;
  }
  const int64_t in_group = std::max<int64_t>(0, max - std::max<int64_t>(0, current - file));
  return available > 0 ? std::min(available, in_group) : in_group;
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

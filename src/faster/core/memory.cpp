// Available memory: /proc/meminfo and the process's memory cgroup, v2 or v1.
#include "faster/core/memory.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace faster {
namespace {

// A cgroup v1 limit at or above this is "no limit" (the kernel writes 2^63 less a page).
constexpr int64_t kNoLimit = int64_t{1} << 60;

bool is_dir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// "key value" lines (memory.stat, and /proc/meminfo's "Key: value kB").
std::map<std::string, int64_t> key_values(const std::string& path) {
  std::map<std::string, int64_t> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    int64_t value = 0;
    if (fields >> key >> value) out[key] = value;
  }
  return out;
}

// One number in a file; false where it is missing or not a number ("max").
bool read_number(const std::string& path, int64_t& value) {
  std::ifstream in(path);
  return static_cast<bool>(in >> value);
}

int64_t value_of(const std::map<std::string, int64_t>& m, const std::string& key) {
  const auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

// The group's directory under the mount, or the mount's root where the path is not there.
std::string group_dir(const std::string& mount, const std::string& path) {
  const std::string dir = mount + path;
  return is_dir(dir) ? dir : mount;
}

// Limit less use (page cache excepted).
int64_t room(int64_t limit, int64_t usage, int64_t file) {
  return std::max<int64_t>(0, limit - std::max<int64_t>(0, usage - file));
}

// A group's room, or -1 where it sets no limit (v2 and v1 files).
int64_t room_v2(const std::string& dir) {
  int64_t max = 0, current = 0;
  if (!read_number(dir + "/memory.max", max) || !read_number(dir + "/memory.current", current))
    return -1;  // "max": no limit
  return room(max, current, value_of(key_values(dir + "/memory.stat"), "file"));
}

int64_t room_v1(const std::string& dir) {
  int64_t limit = 0, usage = 0;
  if (!read_number(dir + "/memory.limit_in_bytes", limit) ||
      !read_number(dir + "/memory.usage_in_bytes", usage))
    return -1;
  const auto stat = key_values(dir + "/memory.stat");
  if (const int64_t above = value_of(stat, "hierarchical_memory_limit"); above > 0)
    limit = std::min(limit, above);
  if (limit >= kNoLimit) return -1;
  return room(limit, usage,
              value_of(stat, "total_active_file") + value_of(stat, "total_inactive_file"));
}

}  // namespace

int64_t available_memory_bytes(const MemoryFiles& files) {
  const auto meminfo = key_values(files.proc + "/meminfo");
  const auto it = meminfo.find("MemAvailable:");
  const int64_t available = it == meminfo.end() ? -1 : it->second * 1024;
  // /proc/self/cgroup: "0::PATH" for v2, "N:CONTROLLERS:PATH" for each v1 hierarchy.
  int64_t in_group = -1;
  std::ifstream groups(files.proc + "/self/cgroup");
  for (std::string line; std::getline(groups, line);) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    int64_t r = -1;
    if (line.compare(0, a, "0") == 0 && controllers.empty())
      r = room_v2(group_dir(files.cgroup, path));
    else if (("," + controllers + ",").find(",memory,") != std::string::npos)
      r = room_v1(group_dir(files.cgroup + "/memory", path));
    if (r >= 0) in_group = in_group < 0 ? r : std::min(in_group, r);
  }
  if (in_group < 0) return available;
  return available >= 0 ? std::min(available, in_group) : in_group;
}

}  // namespace faster

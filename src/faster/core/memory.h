// Memory a new allocation can take without swapping or meeting this process's cgroup limit: what
// the CPU training's memory guard compares a ResNet step's need with.
#pragma once

#include <cstdint>
#include <string>

namespace faster {

// Where the kernel's files are read (a test points them at a tree of its own).
struct MemoryFiles {
  std::string proc = "/proc";
  std::string cgroup = "/sys/fs/cgroup";
};

// MemAvailable in /proc/meminfo (the kernel's estimate), or less where this process's memory
// cgroup leaves less: its limit less what the group uses, the group's page cache excepted (the
// kernel reclaims that first).  cgroup v2 (memory.max, memory.current, memory.stat's file) and v1
// (the lower of memory.limit_in_bytes and memory.stat's hierarchical_memory_limit,
// memory.usage_in_bytes, memory.stat's total_active_file and total_inactive_file); a group path
// that is not under the mount (a container's own cgroup namespace, or Docker's v1 mount of the
// container's group) is read at the mount's root.  In bytes (0: none left); -1 when unknown.  A v1
// group's room is its limit less its own use: siblings under a shared parent limit are not seen.
int64_t available_memory_bytes(const MemoryFiles& files = {});

}  // namespace faster

// Available memory from a tree laid out as the kernel's files are: /proc/meminfo, /proc/self/cgroup
// and the memory cgroup's files, v2 and v1, with and without a limit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "faster/core/memory.h"
#include "support/test_support.h"

namespace faster {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kGiB = int64_t{1} << 30;

class AvailableMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    files_.proc = (dir_.path() / "proc").string();
    files_.cgroup = (dir_.path() / "cgroup").string();
    write("proc/meminfo",
          "MemTotal:       25165824 kB\nMemFree:          1048576 kB\n"
          "MemAvailable:   16777216 kB\nBuffers:           10240 kB\n");  // 16 GiB
  }
  void write(const std::string& path, const std::string& text) {
    const fs::path p = dir_.path() / path;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  int64_t available() const { return available_memory_bytes(files_); }

  test::TempDir dir_;
  MemoryFiles files_;
};

TEST_F(AvailableMemory, WithoutACgroupIsMemAvailable) {
  EXPECT_EQ(available(), 16 * kGiB);
  write("proc/self/cgroup", "0::/user.slice/session-1.scope\n");  // v2 without a memory.max
  EXPECT_EQ(available(), 16 * kGiB);
}

TEST_F(AvailableMemory, CgroupV2LimitLessUseWithoutPageCache) {
  write("proc/self/cgroup", "0::/job\n");
  write("cgroup/job/memory.max", std::to_string(4 * kGiB) + "\n");
  write("cgroup/job/memory.current", std::to_string(3 * kGiB) + "\n");
  write("cgroup/job/memory.stat", "anon 1073741824\nfile " + std::to_string(kGiB) + "\nkernel 0\n");
  EXPECT_EQ(available(), 2 * kGiB);  // 4 - (3 - 1)
  write("cgroup/job/memory.max", "max\n");
  EXPECT_EQ(available(), 16 * kGiB);
  write("cgroup/job/memory.max", std::to_string(40 * kGiB) + "\n");  // above MemAvailable
  EXPECT_EQ(available(), 16 * kGiB);
}

TEST_F(AvailableMemory, CgroupV1LimitTheLowerOfItsOwnAndItsParents) {
  write("proc/self/cgroup", "5:devices:/\n4:memory:/docker/abc\n3:cpu,cpuacct:/\n0::/\n");
  write("cgroup/memory/docker/abc/memory.limit_in_bytes", std::to_string(3 * kGiB) + "\n");
  write("cgroup/memory/docker/abc/memory.usage_in_bytes", std::to_string(2 * kGiB) + "\n");
  write("cgroup/memory/docker/abc/memory.stat",
        "cache 536870912\nhierarchical_memory_limit " + std::to_string(8 * kGiB) +
            "\ntotal_active_file 268435456\ntotal_inactive_file 268435456\n");
  EXPECT_EQ(available(), 3 * kGiB - (2 * kGiB - kGiB / 2));  // 1.5 GiB
  write("cgroup/memory/docker/abc/memory.stat",
        "hierarchical_memory_limit " + std::to_string(2 * kGiB) +
            "\ntotal_active_file 0\ntotal_inactive_file 0\n");
  EXPECT_EQ(available(), 0);  // the parent's 2 GiB are used up
}

TEST_F(AvailableMemory, CgroupV1WithoutALimitAndAGroupReadAtTheMountsRoot) {
  write("proc/self/cgroup", "4:memory:/process_api/abc\n0::/\n");
  // Not under the mount (a container sees its own group at the root): read there.
  write("cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  write("cgroup/memory/memory.usage_in_bytes", std::to_string(kGiB) + "\n");
  write("cgroup/memory/memory.stat", "hierarchical_memory_limit 9223372036854771712\n");
  EXPECT_EQ(available(), 16 * kGiB);
  write("cgroup/memory/memory.limit_in_bytes", std::to_string(5 * kGiB) + "\n");
  EXPECT_EQ(available(), 4 * kGiB);
}

TEST_F(AvailableMemory, UnknownIsNegativeAndAGroupAloneIsItsRoom) {
  fs::remove(dir_.path() / "proc/meminfo");
  EXPECT_EQ(available(), -1);  // unknown, not "none left" (which refuses a CPU run)
  write("proc/self/cgroup", "0::/job\n");
  write("cgroup/job/memory.max", std::to_string(2 * kGiB));
  write("cgroup/job/memory.current", std::to_string(kGiB));
  EXPECT_EQ(available(), kGiB);
}

}  // namespace
}  // namespace faster

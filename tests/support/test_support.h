// Helpers shared by the tests: temporary folders, running the `faster` program, reading files.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace faster::test {

// A fresh empty folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

struct RunResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Runs the built `faster` program with the given arguments (a shell-quoted string).
RunResult run_faster(const std::string& args);
// The same with environment assignments ("A=1 B=2") before the program.
RunResult run_faster_env(const std::string& env, const std::string& args);
// Runs a shell command, capturing stdout+stderr.
RunResult run_shell(const std::string& command);
// Whether Debian's /usr/bin/python3 imports `module` (torch, torchvision: the references).
bool have_python_module(const std::string& module);
// Runs `script` with /usr/bin/python3, sys, torch and torchvision imported, warnings off and `path`
// bound to `arg`; its output (stderr too) and exit code.
RunResult run_python(const std::string& script, const std::filesystem::path& arg);

// A child's exit code, output and peak resident memory.
struct Measured {
  int exit_code = -1;
  std::string output;
  long max_rss_kb = 0;  // of the child and the descendants it waited for (wait4's rusage)
};
// Runs a shell command as a child of its own, for its peak memory; `log` receives the output.
Measured run_measured(const std::string& command, const std::filesystem::path& log);

// Starts `command` (a shell line; the shell execs it at nice 19, so its process is the one
// watched, and the watcher's polls win the CPU on a busy machine), polls
// `ready(pid)` every millisecond while it runs and sends it SIGKILL once that holds.  Returns
// whether it was killed: false if it ended first, or ran timeout_s without `ready` holding (it is
// killed then too, and the caller's assertion fails).  Its output goes to `log`.
bool kill_when(const std::string& command, const std::filesystem::path& log,
               const std::function<bool(pid_t)>& ready, double timeout_s = 60);
// The same with `signal`: returns the command's exit code (128 + the signal if it ended by it),
// or -1 if it ended before `ready` held or did not end within timeout_s (then it is killed).
int signal_when(const std::string& command, const std::filesystem::path& log,
                const std::function<bool(pid_t)>& ready, int signal, double timeout_s = 60);
// Bytes a live process has read so far (rchar in /proc/PID/io); -1 if that cannot be read.
int64_t bytes_read(pid_t pid);

std::string read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, const std::string& bytes);

// Fashion-MNIST as installed by Debian's dataset-fashion-mnist (or where FASTER_FASHION_MNIST
// says); empty if absent.
std::filesystem::path fashion_mnist_dir();
// " --data <that folder>", for commands that would otherwise use the program's default path.
std::string fashion_mnist_flag();
// Fashion-MNIST's first `limit` training and test images as an ImageFolder tree of JPEGs
// (train/, val/), made by `faster export` once per test binary (needs fashion_mnist_dir()).
const std::filesystem::path& exported_fashion_mnist(int limit);

}  // namespace faster::test

// Skips the current test where Fashion-MNIST is not installed.
#define REQUIRE_FASHION_MNIST()                    \
  if (::faster::test::fashion_mnist_dir().empty()) \
  GTEST_SKIP() << "dataset-fashion-mnist not installed"

// Skips the current test where no CUDA GPU is visible (LibTorch tests only).
#define SKIP_WITHOUT_GPU() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible"

// Test helpers implementation.
#include "support/test_support.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "faster/data/sources/array_dataset.h"
#include "faster/tools/file_io.h"

namespace faster::test {
namespace {

// A test that crashes prints where (the faulting instruction, and the return address on top of
// the stack for a call that jumped to a bad address) and its stack, with function names from the
// -rdynamic the test binaries link with; then it dies of the same signal, so CTest sees the crash.
void name_address(const char* what, uintptr_t address) {
  Dl_info info{};
  const bool named = dladdr(reinterpret_cast<void*>(address), &info) && info.dli_fname;
  std::fprintf(stderr, "%s %#lx %s%s%s\n", what, static_cast<unsigned long>(address),
               named ? info.dli_fname : "?", named && info.dli_sname ? " " : "",
               named && info.dli_sname ? info.dli_sname : "");
}

void print_stack_and_die(int sig, siginfo_t* info, void* context) {
  std::fprintf(stderr, "\n*** fatal signal %d in a test (fault address %p)\n", sig, info->si_addr);
#if defined(__x86_64__)
  const auto& regs = static_cast<ucontext_t*>(context)->uc_mcontext.gregs;
  name_address("  at", static_cast<uintptr_t>(regs[REG_RIP]));
  name_address("  top of stack", *reinterpret_cast<const uintptr_t*>(regs[REG_RSP]));
#endif
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

const bool stack_on_crash = [] {
  struct sigaction action {};
  action.sa_sigaction = print_stack_and_die;
  action.sa_flags = SA_SIGINFO;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigaction(sig, &action, nullptr);
  return true;
}();

}  // namespace

TempDir::TempDir() {
  std::random_device rd;
  path_ = std::filesystem::temp_directory_path() /
          ("faster-test-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  tools::remove_tree(path_);
}

RunResult run_shell(const std::string& command) {
  RunResult r{-1, {}};
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed: " + command);
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

bool have_python_module(const std::string& module) {
  return run_shell("/usr/bin/python3 -c 'import " + module + "' 2>/dev/null").exit_code == 0;
}

RunResult run_python(const std::string& script, const std::filesystem::path& arg) {
  const TempDir dir;
  const auto file = dir.path() / "check.py";
  write_file(file,
             "import sys, warnings, torch, torchvision\nwarnings.simplefilter('ignore')\n"
             "path = sys.argv[1]\n" +
                 script);
  return run_shell("/usr/bin/python3 " + file.string() + " " + arg.string() + " 2>&1");
}

RunResult run_faster(const std::string& args) {
  return run_shell("FASTER_PROGRESS=plain " + std::string(FASTER_BIN) + " " + args);
}

RunResult run_faster_env(const std::string& env, const std::string& args) {
  return run_shell("env " + env + " FASTER_PROGRESS=plain " + std::string(FASTER_BIN) + " " + args);
}

namespace {
pid_t spawn_shell(const std::string& line) {
  const char* argv[] = {"/bin/sh", "-c", line.c_str(), nullptr};
  pid_t pid;
  if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) != 0)
    throw std::runtime_error("cannot start /bin/sh -c " + line);
  return pid;
}

int exit_code_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
}  // namespace

Measured run_measured(const std::string& command, const std::filesystem::path& log) {
  const pid_t pid = spawn_shell(command + " > '" + log.string() + "' 2>&1");
  int status = 0;
  rusage usage{};
  Measured m;
  if (::wait4(pid, &status, 0, &usage) != pid) return m;
  m.exit_code = exit_code_of(status);
  m.max_rss_kb = usage.ru_maxrss;
  m.output = read_file(log);
  return m;
}

int signal_when(const std::string& command, const std::filesystem::path& log,
                const std::function<bool(pid_t)>& ready, int signal, double timeout_s) {
  // At the lowest priority (nice execs the command in place: the same process), so that on a
  // busy machine the watcher, woken every millisecond, runs before the command gets far past
  // the moment it waits for (a kill "late", with one file left, has tens of ms to land).
  const pid_t pid = spawn_shell("exec nice -n 19 " + command + " > '" + log.string() + "' 2>&1");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  pid_t waited = 0;
  while ((waited = ::waitpid(pid, &status, WNOHANG)) == 0) {
    if (std::chrono::steady_clock::now() > deadline) break;
    if (ready(pid)) {
      ::kill(pid, signal);
      // It ends now (SIGKILL) or at its next check (a caught signal), within the time left.
      while (::waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (::waitpid(pid, &status, WNOHANG) == 0) break;  // still running: killed below
      return exit_code_of(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (waited == pid) return -1;  // it ended first: reaped, its pid no longer ours to signal
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

bool kill_when(const std::string& command, const std::filesystem::path& log,
               const std::function<bool(pid_t)>& ready, double timeout_s) {
  return signal_when(command, log, ready, SIGKILL, timeout_s) == 128 + SIGKILL;
}

int64_t bytes_read(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/io");
  std::string key;
  int64_t value;
  while (in >> key >> value)
    if (key == "rchar:") return value;
  return -1;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::filesystem::path fashion_mnist_dir() {
  const char* env = std::getenv("FASTER_FASHION_MNIST");
  std::filesystem::path p = env ? env : data::kDefaultSmallDataset;
  return std::filesystem::exists(p / "train-images-idx3-ubyte.gz") ? p : std::filesystem::path{};
}

std::string fashion_mnist_flag() {
  return " --data " + fashion_mnist_dir().string();
}

const std::filesystem::path& exported_fashion_mnist(int limit) {
  static TempDir dir;
  static std::map<int, std::filesystem::path> trees;
  auto it = trees.find(limit);
  if (it != trees.end()) return it->second;
  const auto out = dir / ("fmnist" + std::to_string(limit));
  const auto r = run_faster("export" + fashion_mnist_flag() + " --out " + out.string() +
                            " --limit " + std::to_string(limit));
  if (r.exit_code != 0) throw std::runtime_error("faster export failed: " + r.output);
  return trees.emplace(limit, out).first->second;
}

}  // namespace faster::test

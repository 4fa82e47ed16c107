// Test helpers implementation.
#include "support/test_support.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace faster::test {

TempDir::TempDir() {
  std::random_device rd;
  path_ = std::filesystem::temp_directory_path() /
          ("faster-test-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
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

RunResult run_faster(const std::string& args) {
  return run_shell("FASTER_PROGRESS=plain " + std::string(FASTER_BIN) + " " + args);
}

RunResult run_faster_env(const std::string& env, const std::string& args) {
  return run_shell("env " + env + " FASTER_PROGRESS=plain " + std::string(FASTER_BIN) + " " + args);
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
  std::filesystem::path p = env ? env : "/usr/share/datasets/fashion-mnist";
  return std::filesystem::exists(p / "train-images-idx3-ubyte.gz") ? p : std::filesystem::path{};
}

}  // namespace faster::test

// Local launcher: fork/exec per rank, one process group, failure propagation with a bounded wait.
#include "faster/train/parallel/launch.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "faster/core/error.h"
#include "faster/core/exit_codes.h"
#include "faster/core/log.h"
#include "faster/core/process.h"
#include "faster/train/parallel/world.h"

namespace faster::train {
namespace {

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) {
  g_signal = sig;
}

pid_t start_rank(const LaunchOptions& o, int rank, int port) {
  const pid_t launcher = getpid();
  const pid_t pid = fork();
  if (pid < 0) FASTER_THROW("fork failed: ", std::strerror(errno));
  if (pid > 0) return pid;
  // A rank ends with its launcher (kill -9 of the launcher left them training), also when that
  // happened before this line.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != launcher) _exit(1);
  const auto set = [](const char* k, const std::string& v) { setenv(k, v.c_str(), 1); };
  set("RANK", std::to_string(rank));
  set("LOCAL_RANK", std::to_string(rank));
  set("WORLD_SIZE", std::to_string(o.nproc));
  set("LOCAL_WORLD_SIZE", std::to_string(o.nproc));
  set("MASTER_ADDR", "127.0.0.1");
  set("MASTER_PORT", std::to_string(port));
  set("FASTER_LAUNCHER", "1");
  std::vector<char*> argv{const_cast<char*>(o.exe.c_str())};
  for (const auto& a : o.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(o.exe.c_str(), argv.data());
  std::fprintf(stderr, "faster: error: cannot start %s: %s\n", o.exe.c_str(), std::strerror(errno));
  _exit(127);
}

// Stops the ranks still running: SIGTERM, then SIGKILL after the grace period.
void stop_all(std::vector<pid_t>& pids, int grace_seconds) {
  for (pid_t p : pids)
    if (p > 0) kill(p, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(grace_seconds);
  for (auto& p : pids) {
    while (p > 0) {
      int status;
      const pid_t r = waitpid(p, &status, WNOHANG);
      if (r == p || (r < 0 && errno != EINTR)) {
        p = 0;
      } else if (std::chrono::steady_clock::now() > deadline) {
        kill(p, SIGKILL);
        waitpid(p, &status, 0);
        p = 0;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
}

}  // namespace

std::vector<std::string> without_nproc(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--nproc") {
      ++i;
      continue;
    }
    if (a.rfind("--nproc=", 0) == 0) continue;
    out.push_back(a);
  }
  return out;
}

int launch_local(const LaunchOptions& o) {
  check_range("--nproc", o.nproc, 1, 1024);
  int port = master_port_from_env(0);
  if (port == 0) port = free_local_port();
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // Inherited as "ignore", SIGCHLD would let the kernel reap the ranks: waitpid would then fail and
  // a failed job end with 0.
  signal(SIGCHLD, SIG_DFL);
  std::vector<pid_t> pids;
  for (int r = 0; r < o.nproc; ++r) pids.push_back(start_rank(o, r, port));
  int running = o.nproc, job_code = 0;
  while (running > 0) {
    // The signal is looked at before every wait, and the wait is a poll: a signal that came
    // between two waits is not lost until a rank ends.
    if (g_signal) {
      log::warn("launcher: signal ", int(g_signal), ", stopping all ranks");
      stop_all(pids, o.grace_seconds);
      // Rank 0 writes the checkpoint whole or not at all: it holds the last whole epoch, if any.
      if (!o.checkpoint.empty())
        log::warn("launcher: ", o.checkpoint,
                  " holds the last whole epoch, if one ended: --resume ", o.checkpoint,
                  " goes on from there");
      return 128 + g_signal;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    if (pid < 0) {
      stop_all(pids, o.grace_seconds);
      FASTER_THROW("launcher: lost track of its ranks (waitpid: ", std::strerror(errno), ")");
    }
    const auto it = std::find(pids.begin(), pids.end(), pid);
    if (it == pids.end()) continue;
    const int rank = static_cast<int>(it - pids.begin());
    *it = 0;
    --running;
    const int code = wait_exit_code(status);
    if (code == kExitBadInput) {  // done, but skipped bad images: the job's code, once all end
      job_code = code;
      continue;
    }
    if (code != 0) {
      log::warn("launcher: rank ", rank,
                (WIFSIGNALED(status) ? " was killed by signal " : " exited with code "),
                WIFSIGNALED(status) ? WTERMSIG(status) : code, "; stopping the other ranks");
      stop_all(pids, o.grace_seconds);
      return code;
    }
  }
  return job_code;
}

}  // namespace faster::train

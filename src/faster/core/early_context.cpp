// The CUDA context begun before main(): the device from the command line, the driver loaded on the
// main thread (its constructors and those of the C libraries it needs run there, in order), the
// context made on a thread of its own.
#include "faster/core/early_context.h"

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "faster/core/error.h"
#include "faster/core/process_clock.h"

namespace faster {
namespace {

// The driver API's entry points as cuda.h declares them: CUresult is an int enum (0 is success),
// CUdevice an int, CUcontext a pointer.
using CuInit = int (*)(unsigned);
using CuDeviceGet = int (*)(int*, int);
using CuDevicePrimaryCtxRetain = int (*)(void**, int);

// Written before main() and by the thread: plain data without initialisers, so no constructor of
// this program (they run after the preinit entry) can overwrite it.
struct Early {
  CuInit init;
  CuDeviceGet device_get;
  CuDevicePrimaryCtxRetain retain;
  int ordinal;
  pthread_t thread;
  bool running;  // a thread to join
  bool made;     // the context is retained (set by the thread before it ends)
  timespec ready;
};
Early early;
double ready_seconds;
std::mutex finishing;  // constant-initialised

void* make_context(void*) {
  int device = 0;
  void* context = nullptr;
  early.made = early.init(0) == 0 && early.device_get(&device, early.ordinal) == 0 &&
               early.retain(&context, device) == 0;
  clock_gettime(CLOCK_BOOTTIME, &early.ready);
  return nullptr;
}

bool is_gpu_command(const char* name) {
  for (const char* c : {"train", "eval", "bench", "load", "env"})
    if (std::strcmp(name, c) == 0) return true;
  return false;
}

// A device ordinal: digits only, below 1024.
int ordinal_of(const char* s) {
  if (!s || !*s || std::strlen(s) > 4) return -1;
  for (const char* p = s; *p; ++p)
    if (*p < '0' || *p > '9') return -1;
  const int n = std::atoi(s);
  return n < 1024 ? n : -1;
}

// The value of `--flag V` or `--flag=V` (the last one given), or nullptr.
const char* flag_value(int argc, const char* const* argv, const char* flag) {
  const size_t n = std::strlen(flag);
  const char* value = nullptr;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    if (std::strcmp(argv[i], flag) == 0 && i + 1 < argc) value = argv[i + 1];
    if (std::strncmp(argv[i], flag, n) == 0 && argv[i][n] == '=') value = argv[i] + n + 1;
  }
  return value;
}

// A DDP rank's device is its local rank (the trainer's join_job); the launcher that starts the
// ranks (no rank in its environment) makes no context itself.
int ddp_local_rank(const EnvLookup& env) {
  if (env("RANK") || env("WORLD_SIZE"))
    return ordinal_of(env("LOCAL_RANK") ? env("LOCAL_RANK") : env("RANK"));
  if (env("SLURM_PROCID") && env("SLURM_NTASKS"))
    return env("SLURM_LOCALID") ? ordinal_of(env("SLURM_LOCALID")) : 0;
  return -1;
}

}  // namespace

int early_context_device(int argc, const char* const* argv, const EnvLookup& env,
                         bool on_by_default) {
  const char* setting = env("FASTER_EARLY_CONTEXT");
  const bool on = setting ? std::strcmp(setting, "0") != 0 : on_by_default;
  if (!on || argc < 2 || !is_gpu_command(argv[1])) return -1;
  for (int i = 2; i < argc && std::strcmp(argv[i], "--") != 0; ++i)
    if (std::strcmp(argv[i], "-h") == 0 || std::strncmp(argv[i], "--help", 6) == 0) return -1;
  const char* device = flag_value(argc, argv, "--device");
  int ordinal = 0;  // auto and cuda: the first visible device
  if (device && std::strcmp(device, "auto") != 0 && std::strcmp(device, "cuda") != 0) {
    if (std::strncmp(device, "cuda:", 5) != 0) return -1;  // cpu, or a value the flags refuse
    ordinal = ordinal_of(device + 5);
  }
  const char* parallel = flag_value(argc, argv, "--parallel");
  if (ordinal >= 0 && parallel && std::strcmp(parallel, "ddp") == 0) ordinal = ddp_local_rank(env);
  return ordinal;
}

void start_early_context(int argc, char** argv, char** envp, bool on_by_default) {
  // The C library sets `environ` in its own constructor, after this: until then getenv() finds
  // nothing, here and in the driver (CUDA_VISIBLE_DEVICES, read by cuInit on the thread, which
  // may run before that constructor).  It is set here to the value that constructor will set.
  if (!environ) environ = envp;
  const int ordinal = early_context_device(
      argc, argv, [](const char* name) -> const char* { return std::getenv(name); }, on_by_default);
  if (ordinal < 0) return;
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) return;  // no NVIDIA driver: LibTorch will find none either
  early.init = reinterpret_cast<CuInit>(dlsym(driver, "cuInit"));
  early.device_get = reinterpret_cast<CuDeviceGet>(dlsym(driver, "cuDeviceGet"));
  early.retain =
      reinterpret_cast<CuDevicePrimaryCtxRetain>(dlsym(driver, "cuDevicePrimaryCtxRetain"));
  if (!early.init || !early.device_get || !early.retain) return;
  early.ordinal = ordinal;
  early.running = pthread_create(&early.thread, nullptr, make_context, nullptr) == 0;
}

double finish_early_context() {
  std::lock_guard<std::mutex> lock(finishing);
  if (!early.running) return ready_seconds;
  pthread_join(early.thread, nullptr);
  early.running = false;
  if (!early.made) return ready_seconds;
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  const double ago = static_cast<double>(now.tv_sec - early.ready.tv_sec) +
                     1e-9 * static_cast<double>(now.tv_nsec - early.ready.tv_nsec);
  try {
    ready_seconds = process_seconds() - ago;
  } catch (const Error&) {
    // No /proc: the milestone stays 0, as main_s does.
  }
  return ready_seconds;
}

}  // namespace faster

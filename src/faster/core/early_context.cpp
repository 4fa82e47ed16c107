// The CUDA context begun before main().  begin_early_context runs on the main thread from
// faster-torch's .preinit_array, before any library's constructor: it reads the command line, loads
// the driver there and makes the context on a thread of its own while the loader goes on with
// LibTorch's constructors.
#include "faster/core/early_context.h"

#include <dlfcn.h>
#include <errno.h>  // program_invocation_name
#include <pthread.h>
#include <time.h>
#include <unistd.h>  // environ

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "faster/core/launch_env.h"

namespace faster {
namespace {

// The driver API's entry points as cuda.h declares them: CUresult is an int enum (0 is success),
// CUdevice an int, CUcontext a pointer.
using CuInit = int (*)(unsigned);
using CuDeviceGet = int (*)(int*, int);
using CuDevicePrimaryCtxRetain = int (*)(void**, int);
using CuDriverGetVersion = int (*)(int*);

// Plain data, zero before any constructor runs.
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
std::mutex finishing;  // constant-initialised

void* make_context(void*) {
  int device = 0;
  void* context = nullptr;
  early.made = early.init(0) == 0 && early.device_get(&device, early.ordinal) == 0 &&
               early.retain(&context, device) == 0;
  clock_gettime(CLOCK_BOOTTIME, &early.ready);
  return nullptr;
}

// The commands that make a CUDA context in their own process (bench runs `faster train` children;
// env only asks the runtime about devices).
bool makes_context(int argc, const char* const* argv) {
  if (std::strcmp(argv[1], "train") == 0 || std::strcmp(argv[1], "eval") == 0) return true;
  if (std::strcmp(argv[1], "load") != 0) return false;
  for (int i = 2; i < argc; ++i)
    if (std::strcmp(argv[i], "--decode-only") == 0) return false;
  return true;
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

// A DDP rank's device, as the trainer's join_job picks it: its local rank (LOCAL_RANK, else
// RANK; SLURM_LOCALID in a Slurm step), device 0 where a Slurm task sees one GPU.  -1 for the
// launcher that starts the ranks (--nproc without a rank in its environment); a world of one
// without any runs on --device.
int ddp_device(const EnvLookup& env, int argc, const char* const* argv, int device) {
  using launch_env::get;
  if (get(env, "RANK") || get(env, "WORLD_SIZE"))
    return ordinal_of(get(env, "LOCAL_RANK") ? get(env, "LOCAL_RANK") : get(env, "RANK"));
  if (launch_env::in_slurm_step(env)) {
    if (launch_env::one_gpu_per_task(env)) return 0;
    return get(env, "SLURM_LOCALID") ? ordinal_of(get(env, "SLURM_LOCALID")) : 0;
  }
  return flag_value(argc, argv, "--nproc") ? -1 : device;
}

}  // namespace

void begin_early_context(int argc, char** argv, char** envp) {
#ifdef FASTER_WITH_CUDA
  const bool cuda_build = true;
#else
  const bool cuda_build = false;  // nothing for LibTorch to take up
#endif
  if (!cuda_build || !argv) return;
  // Before the C library's own initialiser the environment is not set yet (getenv finds nothing):
  // set it as that initialiser will, for this function and for the driver.
  if (!environ) environ = envp;
  const int ordinal = early_context_device(
      argc, argv, [](const char* name) -> const char* { return std::getenv(name); },
      early_context_by_default(argc, argv));
  if (ordinal < 0) return;
  // This dlopen runs the C library's initialiser now, before the loader would, with the arguments
  // glibc keeps for dlopen, still unset here: none.  The program's name it would take from argv[0]
  // (for messages of assert, error(), syslog) is set first; libraries opened later still see no
  // arguments in their constructors (none of CUDA's or LibTorch's reads them).
  if (argc > 0 && argv[0] && (!program_invocation_name || !*program_invocation_name)) {
    program_invocation_name = argv[0];
    const char* slash = std::strrchr(argv[0], '/');
    program_invocation_short_name = slash ? const_cast<char*>(slash + 1) : argv[0];
  }
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) return;  // no NVIDIA driver: LibTorch will find none either
  early.init = reinterpret_cast<CuInit>(dlsym(driver, "cuInit"));
  early.device_get = reinterpret_cast<CuDeviceGet>(dlsym(driver, "cuDeviceGet"));
  early.retain =
      reinterpret_cast<CuDevicePrimaryCtxRetain>(dlsym(driver, "cuDevicePrimaryCtxRetain"));
  const auto version = reinterpret_cast<CuDriverGetVersion>(dlsym(driver, "cuDriverGetVersion"));
  if (!early.init || !early.device_get || !early.retain || !version) return;
  // The first cuInit decides how modules load.  LibTorch asks for lazy loading (unless the user
  // said otherwise) just before its own; CUDA 12.2's drivers and later load lazily by default, and
  // nothing is written to the environment here (the C library's initialiser, still to come,
  // would drop it), so older drivers keep LibTorch's way.
  int driver_version = 0;
  if (version(&driver_version) != 0 || driver_version < 12020) return;
  early.ordinal = ordinal;
  early.running = pthread_create(&early.thread, nullptr, make_context, nullptr) == 0;
}

bool early_context_by_default(int argc, const char* const* argv) {
  if (argc < 2 || std::strcmp(argv[1], "train") != 0) return false;
  const char* recipe = flag_value(argc, argv, "--recipe");
  return recipe && (std::strcmp(recipe, "speedrun") == 0 || std::strcmp(recipe, "speedrun95") == 0);
}

int early_context_device(int argc, const char* const* argv, const EnvLookup& env,
                         bool on_by_default) {
  const char* setting = env("FASTER_EARLY_CONTEXT");
  const bool on = setting && *setting ? std::strcmp(setting, "1") == 0 : on_by_default;
  if (!on || argc < 2 || !makes_context(argc, argv)) return -1;
  if (const char* injection = env("CUDA_INJECTION64_PATH"); injection && *injection) return -1;
  for (int i = 2; i < argc && std::strcmp(argv[i], "--") != 0; ++i)
    if (std::strcmp(argv[i], "-h") == 0 || std::strncmp(argv[i], "--help", 6) == 0) return -1;
  const char* device = flag_value(argc, argv, "--device");
  int ordinal = 0;  // auto and cuda: the first visible device
  if (device && std::strcmp(device, "auto") != 0 && std::strcmp(device, "cuda") != 0) {
    if (std::strncmp(device, "cuda:", 5) != 0) return -1;  // cpu, or a value the flags refuse
    ordinal = ordinal_of(device + 5);
  }
  const char* parallel = flag_value(argc, argv, "--parallel");
  if (ordinal >= 0 && parallel && std::strcmp(parallel, "ddp") == 0)
    ordinal = ddp_device(env, argc, argv, ordinal);
  return ordinal;
}

double finish_early_context() {
  std::lock_guard<std::mutex> lock(finishing);
  if (early.running) {
    pthread_join(early.thread, nullptr);
    early.running = false;
  }
  if (!early.made) return -1;
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<double>(now.tv_sec - early.ready.tv_sec) +
         1e-9 * static_cast<double>(now.tv_nsec - early.ready.tv_nsec);
}

bool ask_for_more_work_queues() {
  // The early thread reads the environment while it makes the context: done first.
  if (finish_early_context() >= 0) return false;
  const char* set = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  if (set && *set) return false;
  return setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1) == 0;
}

}  // namespace faster

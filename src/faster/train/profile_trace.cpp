// --profile through LibTorch's profilers.
#include "faster/train/profile_trace.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/cuda.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "faster/core/error.h"

namespace faster::train {
namespace fs = std::filesystem;
namespace prof = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

struct ProfileTrace::Legacy {
  explicit Legacy(const std::string& path) : guard(path) {}
  prof::RecordProfile guard;  // writes its file when destroyed
};

namespace {

std::string temporary(const std::string& path) {
  return path + ".partial";
}

}  // namespace

ProfileTrace::ProfileTrace(std::string path, c10::Device device)
    : path_(std::move(path)), device_(device) {
  if (device_.is_cuda()) {
    const impl::ProfilerConfig config(impl::ProfilerState::KINETO);
    const std::set<impl::ActivityType> activities{impl::ActivityType::CPU,
                                                  impl::ActivityType::CUDA};
    prof::prepareProfiler(config, activities);
    prof::enableProfiler(config, activities);
    kineto_ = true;
  } else {
    legacy_ = std::make_unique<Legacy>(temporary(path_));
  }
}

ProfileTrace::~ProfileTrace() {
  try {
    if (kineto_) prof::disableProfiler();
    legacy_.reset();
  } catch (...) {
  }
  std::error_code ec;
  fs::remove(temporary(path_), ec);
}

void ProfileTrace::stop() {
  if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
  if (kineto_) {
    kineto_ = false;
    auto result = prof::disableProfiler();
    FASTER_CHECK(result != nullptr, "--profile: the profiler returned no trace");
    result->save(temporary(path_));
  } else {
    legacy_.reset();
  }
  std::error_code ec;
  fs::rename(temporary(path_), path_, ec);
  if (ec) FASTER_THROW("--profile: cannot write ", path_, ": ", ec.message());
}

int64_t profile_first_step(int64_t steps_per_epoch, int64_t count) {
  return std::max<int64_t>(0, std::min<int64_t>(20, steps_per_epoch / 2 - count / 2));
}

}  // namespace faster::train

// Internal to train/parallel: the c10d process-group type, which LibTorch 2.x calls Backend
// and 1.13 ProcessGroup, and the NCCL constructor that exists only in CUDA builds (dist_nccl*.cpp).
#pragma once

#include <torch/version.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace faster::train {

#if TORCH_VERSION_MAJOR >= 2
using C10dGroup = c10::intrusive_ptr<c10d::Backend>;
#else
using C10dGroup = c10::intrusive_ptr<c10d::ProcessGroup>;
#endif

// ProcessGroupNCCL, or faster::Error in builds without CUDA.
C10dGroup make_nccl_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                          std::chrono::milliseconds timeout);

}  // namespace faster::train

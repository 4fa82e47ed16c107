// make_nccl_group on CUDA: ProcessGroupNCCL with a timeout and asynchronous error handling, so
// that its watchdog ends the process when a collective outlives the timeout (a dead peer) instead
// of hanging.
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <cstdlib>

#include "faster/core/early_context.h"
#include "faster/train/parallel/c10d_backend.h"

namespace faster::train {

C10dGroup make_nccl_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                          std::chrono::milliseconds timeout) {
  // The watchdog tears the process down when a collective outlives the timeout (both spellings:
  // 1.x reads NCCL_*, 2.x reads TORCH_NCCL_*).  Not while the driver may read the environment.
  finish_early_context();
  setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", 0);
  setenv("NCCL_ASYNC_ERROR_HANDLING", "1", 0);
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world, options);
}

}  // namespace faster::train

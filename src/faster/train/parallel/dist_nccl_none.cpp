// make_nccl_group for builds without CUDA: NCCL needs GPUs, and the device check says so first.
#include "faster/core/error.h"
#include "faster/train/parallel/c10d_backend.h"

namespace faster::train {

C10dGroup make_nccl_group(const c10::intrusive_ptr<c10d::Store>&, int, int,
                          std::chrono::milliseconds) {
  FASTER_THROW("NCCL needs a CUDA build of faster (use --device cpu for Gloo)");
}

}  // namespace faster::train

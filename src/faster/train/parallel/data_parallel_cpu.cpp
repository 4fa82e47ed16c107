// DataParallel in builds without CUDA: unavailable (the trainer refuses --parallel dp first).
#include "faster/core/error.h"
#include "faster/train/parallel/data_parallel.h"

namespace faster::train {

bool data_parallel_available() {
  return false;
}

torch::Tensor data_parallel_forward(const models::Model&, const torch::Tensor&,
                                    const std::vector<torch::Device>&, Precision) {
  FASTER_THROW("--parallel dp needs CUDA GPUs and a CUDA build of faster");
}

}  // namespace faster::train

// DataParallel (torch.nn.DataParallel semantics): one process splits each batch over several GPUs,
// runs a replica of the model on each, and gathers the outputs on the first; the replicas'
// gradients are summed into the original parameters by autograd.  CUDA builds only
// (data_parallel_cuda.cpp).
#pragma once

#include <torch/types.h>

#include <vector>

#include "faster/models/model.h"
#include "faster/train/amp.h"

namespace faster::train {

bool data_parallel_available();
// Forward of `model` over `devices` (the first holds the model and receives the output); each
// replica runs under autocast at `precision` in its own thread.
torch::Tensor data_parallel_forward(const models::Model& model, const torch::Tensor& input,
                                    const std::vector<torch::Device>& devices, Precision precision);

}  // namespace faster::train

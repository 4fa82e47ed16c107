// What the LibTorch wrappers of faster's CUDA kernels (models/*_cuda.cpp) ask of a tensor: the
// current stream of its own device (the caller's current device may be another), and whether its
// data starts on the 16 bytes the kernels' packs read.  CUDA builds only.
#pragma once

#include <ATen/cuda/CUDAContext.h>
#include <torch/types.h>

#include <cstdint>

namespace faster::models {

inline void* stream_of(const torch::Tensor& t) {
  return at::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

inline bool aligned16(const torch::Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
}

}  // namespace faster::models

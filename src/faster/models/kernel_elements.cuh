// What faster's kernels share (.cu files only): float conversions of each element type (exact from
// half and bfloat16; to them, round to nearest even), 16-byte packs of elements for vector loads,
// and the device's SM count for grid sizes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "faster/core/cuda_check.h"

namespace faster::models::kernels {

__device__ __forceinline__ float to_float(float v) {
  return v;
}
__device__ __forceinline__ float to_float(__half v) {
  return __half2float(v);
}
__device__ __forceinline__ float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Multiprocessors of the current device (read once per process).
inline int sm_count() {
  static const int n = [] {
    int device = 0, count = 0;
    FASTER_CHECK_CUDA(cudaGetDevice(&device), "query of the current device");
    FASTER_CHECK_CUDA(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device),
                      "query of the SM count");
    return std::max(count, 1);
  }();
  return n;
}

}  // namespace faster::models::kernels

// PixelNormalizer's one pass on the GPU (normalize_kernels.h): a grid-stride loop, one byte read
// and one value written per element (memory-bound: 1 + 2 bytes per value for fp16 and bf16).
#include "faster/data/loader/normalize_kernels.h"
#include "faster/models/kernel_elements.cuh"

namespace faster::data::kernels {
namespace {

using models::kernels::ElementType;
using models::kernels::from_float;

template <typename T>
__global__ void normalize_kernel(const uint8_t* __restrict__ in, T* __restrict__ out, int64_t count,
                                 int channels, const float* __restrict__ mean,
                                 const float* __restrict__ std) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const int c = static_cast<int>(i % channels);
    out[i] = from_float<T>((static_cast<float>(in[i]) - mean[c]) / std[c]);
  }
}

template <typename T>
void launch(const uint8_t* in, void* out, int64_t count, int channels, const float* mean,
            const float* std, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t wanted = (count + kThreads - 1) / kThreads;
  const int blocks =
      static_cast<int>(std::min<int64_t>(wanted, int64_t{models::kernels::sm_count()} * 16));
  normalize_kernel<T><<<std::max(blocks, 1), kThreads, 0, stream>>>(in, static_cast<T*>(out), count,
                                                                    channels, mean, std);
  FASTER_CHECK_CUDA(cudaGetLastError(), "pixel normalization launch");
}

}  // namespace

void normalize_pixels(const uint8_t* in, void* out, ElementType out_type, int64_t count,
                      int channels, const float* mean, const float* std, void* stream) {
  if (count == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  switch (out_type) {
    case ElementType::kFloat:
      return launch<float>(in, out, count, channels, mean, std, s);
    case ElementType::kHalf:
      return launch<__half>(in, out, count, channels, mean, std, s);
    case ElementType::kBFloat16:
      return launch<__nv_bfloat16>(in, out, count, channels, mean, std, s);
  }
}

}  // namespace faster::data::kernels

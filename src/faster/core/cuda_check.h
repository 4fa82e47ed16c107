// The one check macro per CUDA toolkit library (STYLE rule 6), for CUDA-only files (.cu,
// *_cuda.cpp): FASTER_CHECK_CUDA for the runtime (kernel launches too: check cudaGetLastError()),
// and FASTER_CHECK_NVJPEG for nvJPEG in nvjpeg_check.h (kept apart so that the kernels need only
// the CUDA runtime's headers).  Each throws faster::Error with the context, the library's reason,
// and the call at file:line: "CUDA copy of crop records failed: invalid argument [...]".
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "faster/core/error.h"

namespace faster::detail {

[[noreturn]] inline void throw_gpu_error(const char* library, const std::string& context,
                                         const std::string& reason, const char* call,
                                         const char* file, int line) {
  throw Error(
      concat(library, " ", context, " failed: ", reason, " [", call, " at ", file, ":", line, "]"));
}

}  // namespace faster::detail

// FASTER_CHECK_CUDA(cudaStreamSynchronize(stream), "nvJPEG decode and resize")
#define FASTER_CHECK_CUDA(call, ...)                                                          \
  do {                                                                                        \
    const cudaError_t faster_cuda_rc_ = (call);                                               \
    if (faster_cuda_rc_ != cudaSuccess)                                                       \
      ::faster::detail::throw_gpu_error("CUDA", ::faster::detail::concat(__VA_ARGS__),        \
                                        cudaGetErrorString(faster_cuda_rc_), #call, __FILE__, \
                                        __LINE__);                                            \
  } while (0)

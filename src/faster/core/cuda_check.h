// The one check macro per CUDA toolkit library (STYLE rule 6), for CUDA-only files (.cu,
// *_cuda.cpp): FASTER_CHECK_CUDA for the runtime (kernel launches too: check cudaGetLastError())
// and FASTER_CHECK_NVJPEG for nvJPEG.  Each throws faster::Error with the context, the library's
// reason, and the call at file:line: "CUDA copy of crop records failed: invalid argument [...]".
#pragma once

#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <string>

#include "faster/core/error.h"

namespace faster::detail {

inline const char* nvjpeg_status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS:
      return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED:
      return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER:
      return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG:
      return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "allocator failure";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "no such decoder on this GPU";
    case NVJPEG_STATUS_INTERNAL_ERROR:
      return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "not implemented";
    default:
      return "error";
  }
}

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

// FASTER_CHECK_NVJPEG(nvjpegJpegStateCreate(handle, &state), "state create")
#define FASTER_CHECK_NVJPEG(call, ...)                                                            \
  do {                                                                                            \
    const nvjpegStatus_t faster_nvjpeg_rc_ = (call);                                              \
    if (faster_nvjpeg_rc_ != NVJPEG_STATUS_SUCCESS)                                               \
      ::faster::detail::throw_gpu_error(                                                          \
          "nvJPEG", ::faster::detail::concat(__VA_ARGS__),                                        \
          ::faster::detail::concat(::faster::detail::nvjpeg_status_name(faster_nvjpeg_rc_), " (", \
                                   static_cast<int>(faster_nvjpeg_rc_), ")"),                     \
          #call, __FILE__, __LINE__);                                                             \
  } while (0)

// FASTER_CHECK_NVJPEG, nvJPEG's check macro (cuda_check.h says what the macros do), for the files
// that call nvJPEG.
#pragma once

#include <nvjpeg.h>

#include "faster/core/cuda_check.h"

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

}  // namespace faster::detail

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

// The few places where LibTorch 1.13 (Debian, CPU) and 2.x (CUDA builds) differ, in one header.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#define FASTER_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||         \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace faster::compat {

// Turns autocast on or off for one device type with the given low-precision dtype.
inline void set_autocast(c10::DeviceType device, bool enabled, c10::ScalarType dtype) {
#if FASTER_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(device, enabled);
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(enabled);
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}

inline c10::ScalarType autocast_dtype(c10::DeviceType device) {
#if FASTER_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

inline bool autocast_enabled(c10::DeviceType device) {
#if FASTER_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled()
                                         : at::autocast::is_cpu_enabled();
#endif
}

}  // namespace faster::compat

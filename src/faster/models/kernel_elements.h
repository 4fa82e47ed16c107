// The element types faster's own CUDA kernels take (norm_activation.cu, max_pool.cu), shared by the
// kernels and their LibTorch wrappers; kernel_elements.cuh has the device-side conversions.
#pragma once

#ifndef __CUDACC__
#include <c10/core/ScalarType.h>
#endif

namespace faster::models::kernels {

enum class ElementType { kFloat, kHalf, kBFloat16 };

inline int element_bytes(ElementType t) {
  return t == ElementType::kFloat ? 4 : 2;
}

#ifndef __CUDACC__
// The kernels' name for a LibTorch dtype; false for one they do not take.
inline bool element_type(c10::ScalarType t, ElementType& out) {
  switch (t) {
    case c10::ScalarType::Float:
      out = ElementType::kFloat;
      return true;
    case c10::ScalarType::Half:
      out = ElementType::kHalf;
      return true;
    case c10::ScalarType::BFloat16:
      out = ElementType::kBFloat16;
      return true;
    default:
      return false;
  }
}
#endif

}  // namespace faster::models::kernels

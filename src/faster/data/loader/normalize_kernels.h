// The pixel normalization kernel (normalize.cu): uint8 pixels to (x - mean) / std in float, rounded
// once to the output's type, in one pass.  Compute only (CUDA builds); PixelNormalizer owns the
// memory and picks the stream.
#pragma once

#include <cstdint>

#include "faster/models/kernel_elements.h"

namespace faster::data::kernels {

// out[i] = (in[i] - mean[i % channels]) / std[i % channels] for i < count: `in` and `out` in the
// same memory order with the channel innermost (NHWC, or an NCHW view of it); mean and std float,
// in pixel units (255 x the fractions), on the device.
void normalize_pixels(const uint8_t* in, void* out, models::kernels::ElementType out_type,
                      int64_t count, int channels, const float* mean, const float* std,
                      void* stream);

}  // namespace faster::data::kernels

// The 2x2 max-pool kernels (max_pool.cu): compute only (CUDA builds); the caller owns memory and
// streams, max_pool_cuda.cpp wraps them as an autograd function.
#pragma once

#include <cstdint>

#include "faster/models/kernel_elements.h"

namespace faster::models::kernels {

// An [n, c, h, w] map stored NHWC (channels last), pooled to [n, c, h / 2, w / 2].
struct PoolShape {
  int64_t n = 0, c = 0, h = 0, w = 0;
  ElementType type = ElementType::kFloat;
};

// Whether the kernels take `s` with these buffers (16-byte packs of channels: c a multiple of
// 16 bytes' worth, every pointer 16-byte aligned; h and w at least 2).
bool max_pool2x2_supported(const PoolShape& s, const void* x);

// y = the largest of each 2x2 window of x (a NaN wins, as in LibTorch).
void max_pool2x2_forward(const PoolShape& s, const void* x, void* y, void* stream);

// dx at each window's first largest value (row-major; its last NaN where it holds one, as in
// LibTorch) = dy, 0 at its other three values.  Rows and columns outside every window (odd h or w)
// are not written: the caller zeroes them.
void max_pool2x2_backward(const PoolShape& s, const void* x, const void* dy, void* dx,
                          void* stream);

// Any square window: `kernel` x `kernel` (at most 15), `stride`, `padding` (at most half the
// kernel), output sides (side + 2 padding - kernel) / stride + 1 (ResNet's stem: 3, 2, 1; the
// default: SpeedNet's 2x2).
struct Window {
  int kernel = 2, stride = 2, padding = 0;
  int64_t out(int64_t side) const { return (side + 2 * padding - kernel) / stride + 1; }
};

// Whether the windowed kernels take `s` with these buffers: as max_pool2x2_supported, and a
// window they cover whose output has at least a pixel.
bool max_pool_supported(const PoolShape& s, const Window& win, const void* x);

// y = the largest of each window of x, as max_pool2d (a NaN wins; padding is never the largest),
// and `where` [n, ho, wo, c] uint8: its place in the window (row-major), for the backward pass.
void max_pool_forward(const PoolShape& s, const Window& win, const void* x, void* y, uint8_t* where,
                      void* stream);

// dx = for each input value, the sum of dy over the windows whose largest it is (float sums in
// row-major order of the windows, as LibTorch's NHWC kernel adds them; 0 where none).
void max_pool_backward(const PoolShape& s, const Window& win, const uint8_t* where, const void* dy,
                       void* dx, void* stream);

}  // namespace faster::models::kernels

// Max-pool kernels, NHWC, a thread per 16-byte pack of V channels.  2x2 (SpeedNet's): a thread owns
// one output pixel: forward it reads the pack at the window's four input pixels and writes their
// largest; backward it reads the same four packs and the output gradient's pack, finds each
// channel's first largest value again (no index buffer is stored), and writes the input gradient's
// four packs.  Each byte is read or written once: memory-bound, as the work is.  Other windows
// (ResNet's 3x3, stride 2, which overlap): forward as 2x2, also writing each value's place in its
// window as a byte; backward a thread owns one input pixel and gathers the output gradient of the
// few windows that hold it (no atomics, no zero fill).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "faster/core/cuda_check.h"
#include "faster/core/error.h"
#include "faster/models/kernel_elements.cuh"
#include "faster/models/max_pool_kernels.h"

namespace faster::models::kernels {
namespace {

constexpr int kThreads = 256;

// The offsets of a thread's four input packs and its output pack.
struct Quad {
  int64_t in[4], out;
  __device__ Quad(int64_t i, int64_t lanes, int64_t ho, int64_t wo, int64_t h, int64_t w, int64_t c,
                  int v) {
    const int64_t lane = i % lanes, pixel = i / lanes;
    const int64_t ox = pixel % wo, t = pixel / wo, oy = t % ho, b = t / ho;
    out = pixel * c + lane * v;
    const int64_t top = ((b * h + 2 * oy) * w + 2 * ox) * c + lane * v;
    in[0] = top, in[1] = top + c, in[2] = top + w * c, in[3] = top + w * c + c;
  }
};

// Which of the four values LibTorch's kernel keeps: the first, unless a later one is larger or NaN
// (so the last NaN, where there is one).
__device__ __forceinline__ int first_largest(const float (&v)[4]) {
  int k = 0;
  float m = v[0];
  for (int j = 1; j < 4; ++j)
    if (v[j] > m || isnan(v[j])) m = v[j], k = j;
  return k;
}

template <typename T, int V>
__global__ void pool_forward(const T* __restrict__ x, T* __restrict__ y, int64_t packs,
                             int64_t lanes, int64_t ho, int64_t wo, int64_t h, int64_t w,
                             int64_t c) {
  using P = Pack<T, V>;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < packs;
       i += int64_t{gridDim.x} * blockDim.x) {
    const Quad win(i, lanes, ho, wo, h, w, c, V);
    P in[4], out;
    for (int k = 0; k < 4; ++k) in[k] = *reinterpret_cast<const P*>(x + win.in[k]);
    for (int j = 0; j < V; ++j) {
      const float v[4] = {to_float(in[0].v[j]), to_float(in[1].v[j]), to_float(in[2].v[j]),
                          to_float(in[3].v[j])};
      // Selects, not in[k]: a runtime index would put the four packs in local memory.
      const int k = first_largest(v);
      out.v[j] = k == 0 ? in[0].v[j] : k == 1 ? in[1].v[j] : k == 2 ? in[2].v[j] : in[3].v[j];
    }
    *reinterpret_cast<P*>(y + win.out) = out;
  }
}

template <typename T, int V>
__global__ void pool_backward(const T* __restrict__ x, const T* __restrict__ dy, T* __restrict__ dx,
                              int64_t packs, int64_t lanes, int64_t ho, int64_t wo, int64_t h,
                              int64_t w, int64_t c) {
  using P = Pack<T, V>;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < packs;
       i += int64_t{gridDim.x} * blockDim.x) {
    const Quad win(i, lanes, ho, wo, h, w, c, V);
    P in[4], g = *reinterpret_cast<const P*>(dy + win.out), out[4];
    for (int k = 0; k < 4; ++k) in[k] = *reinterpret_cast<const P*>(x + win.in[k]);
    const T zero = from_float<T>(0.0f);
    for (int j = 0; j < V; ++j) {
      const float v[4] = {to_float(in[0].v[j]), to_float(in[1].v[j]), to_float(in[2].v[j]),
                          to_float(in[3].v[j])};
      const int best = first_largest(v);
      for (int k = 0; k < 4; ++k) out[k].v[j] = k == best ? g.v[j] : zero;
    }
    for (int k = 0; k < 4; ++k) *reinterpret_cast<P*>(dx + win.in[k]) = out[k];
  }
}

// Runs f(T{}, V) for the shape's element type.
template <typename F>
void dispatch(const PoolShape& s, F&& f) {
  switch (s.type) {
    case ElementType::kFloat:
      return f(float{}, std::integral_constant<int, 4>{});
    case ElementType::kHalf:
      return f(__half{}, std::integral_constant<int, 8>{});
    case ElementType::kBFloat16:
      return f(__nv_bfloat16{}, std::integral_constant<int, 8>{});
  }
}

unsigned blocks_for(int64_t packs) {
  return static_cast<unsigned>(std::max<int64_t>(
      1, std::min<int64_t>((packs + kThreads - 1) / kThreads, int64_t{16} * sm_count())));
}

// The geometry of a windowed pool, for the kernels.
struct Geometry {
  int64_t n, h, w, c, ho, wo, lanes;
  int k, s, p;
};

// The first largest value of each channel of the window of output pixel (b, oy, ox), and its place
// in the window: LibTorch's rule (start from the lowest value at the first place inside the
// image; a larger value or a NaN takes over).
template <typename T, int V>
__global__ void window_forward(const T* __restrict__ x, T* __restrict__ y,
                               uint8_t* __restrict__ where, int64_t packs, Geometry g) {
  using P = Pack<T, V>;
  using I = Pack<uint8_t, V>;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < packs;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t lane = i % g.lanes, pixel = i / g.lanes;
    const int64_t ox = pixel % g.wo, t = pixel / g.wo, oy = t % g.ho, b = t / g.ho;
    const int64_t y0 = oy * g.s - g.p, x0 = ox * g.s - g.p;
    const int64_t ylo = y0 > 0 ? y0 : 0, yhi = y0 + g.k < g.h ? y0 + g.k : g.h;
    const int64_t xlo = x0 > 0 ? x0 : 0, xhi = x0 + g.k < g.w ? x0 + g.k : g.w;
    float best[V];
    I at;
    for (int j = 0; j < V; ++j)
      best[j] = -INFINITY, at.v[j] = static_cast<uint8_t>((ylo - y0) * g.k + (xlo - x0));
    for (int64_t iy = ylo; iy < yhi; ++iy)
      for (int64_t ix = xlo; ix < xhi; ++ix) {
        const P in = *reinterpret_cast<const P*>(x + ((b * g.h + iy) * g.w + ix) * g.c + lane * V);
        const auto place = static_cast<uint8_t>((iy - y0) * g.k + (ix - x0));
        for (int j = 0; j < V; ++j) {
          const float v = to_float(in.v[j]);
          if (v > best[j] || isnan(v)) best[j] = v, at.v[j] = place;
        }
      }
    P out;
    for (int j = 0; j < V; ++j) out.v[j] = from_float<T>(best[j]);  // exact: a T's own value
    *reinterpret_cast<P*>(y + pixel * g.c + lane * V) = out;
    *reinterpret_cast<I*>(where + pixel * g.c + lane * V) = at;
  }
}

template <typename T, int V>
__global__ void window_backward(const uint8_t* __restrict__ where, const T* __restrict__ dy,
                                T* __restrict__ dx, int64_t packs, Geometry g) {
  using P = Pack<T, V>;
  using I = Pack<uint8_t, V>;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < packs;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t lane = i % g.lanes, pixel = i / g.lanes;
    const int64_t ix = pixel % g.w, t = pixel / g.w, iy = t % g.h, b = t / g.h;
    // The windows holding (iy, ix): oy * s - p <= iy < oy * s - p + k.
    const int64_t oy_lo = iy + g.p < g.k ? 0 : (iy + g.p - g.k) / g.s + 1;
    const int64_t oy_hi = (iy + g.p) / g.s + 1 < g.ho ? (iy + g.p) / g.s + 1 : g.ho;
    const int64_t ox_lo = ix + g.p < g.k ? 0 : (ix + g.p - g.k) / g.s + 1;
    const int64_t ox_hi = (ix + g.p) / g.s + 1 < g.wo ? (ix + g.p) / g.s + 1 : g.wo;
    float sum[V];
    for (int j = 0; j < V; ++j) sum[j] = 0.0f;
    for (int64_t oy = oy_lo; oy < oy_hi; ++oy)
      for (int64_t ox = ox_lo; ox < ox_hi; ++ox) {
        const int64_t at = ((b * g.ho + oy) * g.wo + ox) * g.c + lane * V;
        const I w = *reinterpret_cast<const I*>(where + at);
        const P d = *reinterpret_cast<const P*>(dy + at);
        const auto place =
            static_cast<uint8_t>((iy - (oy * g.s - g.p)) * g.k + (ix - (ox * g.s - g.p)));
        for (int j = 0; j < V; ++j)
          if (w.v[j] == place) sum[j] += to_float(d.v[j]);
      }
    P out;
    for (int j = 0; j < V; ++j) out.v[j] = from_float<T>(sum[j]);
    *reinterpret_cast<P*>(dx + pixel * g.c + lane * V) = out;
  }
}

// 2x2 windows are the default Window's.
Geometry geometry_of(const PoolShape& s, const Window& win = {}) {
  const int64_t v = 16 / element_bytes(s.type);
  return {s.n,          s.h,     s.w,        s.c,        win.out(s.h),
          win.out(s.w), s.c / v, win.kernel, win.stride, win.padding};
}

// What every kernel takes: a batch, channels in whole 16-byte packs, data on 16 bytes.
bool packs_fit(const PoolShape& s, const void* x) {
  const int v = 16 / element_bytes(s.type);
  return s.n >= 1 && s.c >= v && s.c % v == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
}

// Runs kernel(T{}, V, blocks, stream) for the shape's element type with a thread per pack over
// `packs` packs, and checks the launch (`what` names it).
template <typename F>
void launch(const PoolShape& s, int64_t packs, void* stream, const char* what, F&& kernel) {
  const auto st = static_cast<cudaStream_t>(stream);
  dispatch(s, [&](auto t, auto v) { kernel(t, v, blocks_for(packs), st); });
  FASTER_CHECK_CUDA(cudaGetLastError(), "launch of ", what);
}

}  // namespace

bool max_pool_supported(const PoolShape& s, const Window& win, const void* x) {
  return packs_fit(s, x) && win.kernel >= 1 && win.kernel <= 15 && win.stride >= 1 &&
         win.padding >= 0 && 2 * win.padding <= win.kernel && win.out(s.h) >= 1 &&
         win.out(s.w) >= 1;
}

void max_pool_forward(const PoolShape& s, const Window& win, const void* x, void* y, uint8_t* where,
                      void* stream) {
  FASTER_CHECK(max_pool_supported(s, win, x) && reinterpret_cast<uintptr_t>(y) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(where) % 8 == 0,
               "max_pool_forward: unsupported shape or alignment");
  const auto g = geometry_of(s, win);
  const int64_t packs = g.n * g.ho * g.wo * g.lanes;
  launch(s, packs, stream, "max_pool_forward", [&](auto t, auto v, unsigned blocks, auto st) {
    using T = decltype(t);
    window_forward<T, decltype(v)::value><<<blocks, kThreads, 0, st>>>(
        static_cast<const T*>(x), static_cast<T*>(y), where, packs, g);
  });
}

void max_pool_backward(const PoolShape& s, const Window& win, const uint8_t* where, const void* dy,
                       void* dx, void* stream) {
  FASTER_CHECK(reinterpret_cast<uintptr_t>(dy) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(dx) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(where) % 8 == 0,
               "max_pool_backward: unsupported alignment");
  const auto g = geometry_of(s, win);
  const int64_t packs = g.n * g.h * g.w * g.lanes;
  launch(s, packs, stream, "max_pool_backward", [&](auto t, auto v, unsigned blocks, auto st) {
    using T = decltype(t);
    window_backward<T, decltype(v)::value><<<blocks, kThreads, 0, st>>>(
        where, static_cast<const T*>(dy), static_cast<T*>(dx), packs, g);
  });
}

bool max_pool2x2_supported(const PoolShape& s, const void* x) {
  return packs_fit(s, x) && s.h >= 2 && s.w >= 2;
}

void max_pool2x2_forward(const PoolShape& s, const void* x, void* y, void* stream) {
  FASTER_CHECK(max_pool2x2_supported(s, x) && reinterpret_cast<uintptr_t>(y) % 16 == 0,
               "max_pool2x2_forward: unsupported shape or alignment");
  const auto g = geometry_of(s);
  const int64_t packs = g.n * g.ho * g.wo * g.lanes;
  launch(s, packs, stream, "max_pool2x2_forward", [&](auto t, auto v, unsigned blocks, auto st) {
    using T = decltype(t);
    pool_forward<T, decltype(v)::value><<<blocks, kThreads, 0, st>>>(
        static_cast<const T*>(x), static_cast<T*>(y), packs, g.lanes, g.ho, g.wo, s.h, s.w, s.c);
  });
}

void max_pool2x2_backward(const PoolShape& s, const void* x, const void* dy, void* dx,
                          void* stream) {
  FASTER_CHECK(max_pool2x2_supported(s, x) && reinterpret_cast<uintptr_t>(dy) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(dx) % 16 == 0,
               "max_pool2x2_backward: unsupported shape or alignment");
  const auto g = geometry_of(s);
  const int64_t packs = g.n * g.ho * g.wo * g.lanes;
  launch(s, packs, stream, "max_pool2x2_backward", [&](auto t, auto v, unsigned blocks, auto st) {
    using T = decltype(t);
    pool_backward<T, decltype(v)::value><<<blocks, kThreads, 0, st>>>(
        static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), packs, g.lanes,
        g.ho, g.wo, s.h, s.w, s.c);
  });
}

}  // namespace faster::models::kernels

// BatchNorm + activation kernels.  Each direction is three launches:
//   reduce    per-channel partial sums, one row of partials per block (no atomics, so results do
//             not depend on scheduling): forward sum r and r^2 of the normalization's input r;
//             backward sum dz and dz * r, dz the gradient at the normalization's output;
//   finalize  one warp per channel adds the partials in double and turns them into per-channel
//             coefficients (and statistics, running statistics, dgamma, dbeta);
//   apply     one streaming pass: out = act(r * scale + shift), or dy = k * dz + c1 * r + c0 where
//             the input's activation passes a gradient.
// What differs by activation (Op<A> below) is applied per element where values are read.  NHWC
// tensors are read as 16-byte packs of V channels by a thread whose channels stay fixed over its
// rows (no index arithmetic per element); NCHW tensors by blocks that own one channel.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "faster/core/cuda_check.h"
#include "faster/core/error.h"
#include "faster/models/kernel_elements.cuh"
#include "faster/models/norm_activation_kernels.h"

namespace faster::models::kernels {
namespace {

constexpr int kThreads = 256;

// The element functions of one activation: `input` maps a stored value y to the normalization's
// input r (`passes`: whether dr/dy is 1, else 0); `output` maps the normalized value z to the
// result, `output_grad` the result's gradient to z's.  kUsesZ: output_grad reads z (so the
// backward pass needs the forward's scale and shift).
template <NormAct A>
struct Op;

template <>
struct Op<NormAct::kReluNorm> {  // r = max(y, 0); out = z
  static constexpr bool kUsesZ = false;
  __device__ static float input(float y) { return fmaxf(y, 0.0f); }
  __device__ static bool passes(float y) { return y > 0.0f; }
  __device__ static float output(float z) { return z; }
  __device__ static float output_grad(float, float g) { return g; }
};

template <>
struct Op<NormAct::kNormGelu> {  // r = y; out = z * Phi(z), as torch.nn.functional.gelu
  static constexpr bool kUsesZ = true;
  static constexpr float kSqrtHalf = 0.70710678118654752f;
  static constexpr float kInvSqrt2Pi = 0.39894228040143268f;
  __device__ static float input(float y) { return y; }
  __device__ static bool passes(float) { return true; }
  __device__ static float output(float z) { return 0.5f * z * (1.0f + erff(z * kSqrtHalf)); }
  __device__ static float output_grad(float z, float g) {  // g * (Phi(z) + z * phi(z))
    const float cdf = 0.5f * (1.0f + erff(z * kSqrtHalf));
    return g * (cdf + z * kInvSqrt2Pi * expf(-0.5f * z * z));
  }
};

// The forward's scale and shift of channel ch ([4][c] saved: mean, invstd, scale, shift) where the
// backward pass needs them.
template <NormAct A>
__device__ __forceinline__ void forward_coef(const float* saved, int c, int ch, float& scale,
                                             float& shift) {
  if constexpr (Op<A>::kUsesZ) {
    scale = saved[2 * c + ch];
    shift = saved[3 * c + ch];
  } else {
    scale = shift = 0.0f;
  }
}

// Forward sums (r, r^2); backward sums (dz, dz * r).
template <NormAct A, bool kBackward>
__device__ __forceinline__ void accumulate(float y, float g, float scale, float shift, float& a,
                                           float& b) {
  const float r = Op<A>::input(y);
  if constexpr (kBackward) {
    const float dz = Op<A>::output_grad(r * scale + shift, g);
    a += dz;
    b += dz * r;
  } else {
    a += r;
    b += r * r;
  }
}

// Thread layout shared by the NHWC kernels: `lanes` threads cover one row of c channels in packs of
// V; a block covers rows_per_iter rows at a time.
struct RowLayout {
  int lanes, rows_per_iter, lane, sub;
  __device__ RowLayout(int c, int v) {
    lanes = c / v;
    rows_per_iter = blockDim.x / lanes;
    lane = threadIdx.x % lanes;
    sub = threadIdx.x / lanes;
  }
  // Calls f(offset of this thread's pack) in each row this thread covers (sub < rows_per_iter).
  template <typename F>
  __device__ void for_each_pack(int64_t rows, int c, int v, const F& f) const {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * rows_per_iter;
#pragma unroll 2
    for (int64_t r = static_cast<int64_t>(blockIdx.x) * rows_per_iter + sub; r < rows; r += stride)
      f(r * c + lane * v);
  }
};

// partial[block][2][c]
template <typename T, int V, NormAct A, bool kBackward>
__global__ void reduce_nhwc(const T* __restrict__ y, const T* __restrict__ g, int64_t rows, int c,
                            const float* __restrict__ saved, float* __restrict__ partial) {
  extern __shared__ float shared[];  // [2][rows_per_iter][c]
  const RowLayout l(c, V);
  float a[V], b[V];
#pragma unroll
  for (int i = 0; i < V; ++i) a[i] = b[i] = 0.0f;
  if (l.sub < l.rows_per_iter) {
    float scale[V], shift[V];  // the forward's, for the backward (a forward has no `saved` yet)
#pragma unroll
    for (int i = 0; i < V; ++i) {
      scale[i] = shift[i] = 0.0f;
      if constexpr (kBackward) forward_coef<A>(saved, c, l.lane * V + i, scale[i], shift[i]);
    }
    l.for_each_pack(rows, c, V, [&](int64_t at) {
      const Pack<T, V> yv = *reinterpret_cast<const Pack<T, V>*>(y + at);
      if constexpr (kBackward) {
        const Pack<T, V> gv = *reinterpret_cast<const Pack<T, V>*>(g + at);
#pragma unroll
        for (int i = 0; i < V; ++i)
          accumulate<A, true>(to_float(yv.v[i]), to_float(gv.v[i]), scale[i], shift[i], a[i], b[i]);
      } else {
#pragma unroll
        for (int i = 0; i < V; ++i)
          accumulate<A, false>(to_float(yv.v[i]), 0.0f, 0.0f, 0.0f, a[i], b[i]);
      }
    });
#pragma unroll
    for (int i = 0; i < V; ++i) {
      shared[l.sub * c + l.lane * V + i] = a[i];
      shared[(l.rows_per_iter + l.sub) * c + l.lane * V + i] = b[i];
    }
  }
  __syncthreads();
  for (int t = threadIdx.x; t < 2 * c; t += blockDim.x) {
    const int k = t / c, ch = t % c;
    float s = 0.0f;
    for (int j = 0; j < l.rows_per_iter; ++j) s += shared[(k * l.rows_per_iter + j) * c + ch];
    partial[(static_cast<int64_t>(blockIdx.x) * 2 + k) * c + ch] = s;
  }
}

__device__ float block_sum(float v, float* shared) {  // shared: 32 floats; result in thread 0
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = 0.0f;
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  return v;
}

// Grid (c, splits): block (ch, s) sums channel ch of images s, s + splits, ...
template <typename T, NormAct A, bool kBackward>
__global__ void reduce_nchw(const T* __restrict__ y, const T* __restrict__ g, int64_t n, int c,
                            int64_t hw, const float* __restrict__ saved,
                            float* __restrict__ partial) {
  __shared__ float shared[32];
  const int ch = blockIdx.x;
  float scale = 0.0f, shift = 0.0f;
  if constexpr (kBackward) forward_coef<A>(saved, c, ch, scale, shift);
  float a = 0.0f, b = 0.0f;
  for (int64_t img = blockIdx.y; img < n; img += gridDim.y) {
    const int64_t base = (img * c + ch) * hw;
    for (int64_t s = threadIdx.x; s < hw; s += blockDim.x) {
      if constexpr (kBackward)
        accumulate<A, true>(to_float(y[base + s]), to_float(g[base + s]), scale, shift, a, b);
      else
        accumulate<A, false>(to_float(y[base + s]), 0.0f, 0.0f, 0.0f, a, b);
    }
  }
  a = block_sum(a, shared);
  b = block_sum(b, shared);
  if (threadIdx.x == 0) {
    partial[(static_cast<int64_t>(blockIdx.y) * 2) * c + ch] = a;
    partial[(static_cast<int64_t>(blockIdx.y) * 2 + 1) * c + ch] = b;
  }
}

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// One warp per channel: the channel's two sums over all blocks' partials, in lane 0.
__device__ __forceinline__ bool channel_sums(const float* partial, int splits, int c, int& ch,
                                             double& s1, double& s2) {
  ch = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (ch >= c) return false;  // the whole warp leaves together
  s1 = s2 = 0.0;
  for (int k = threadIdx.x % 32; k < splits; k += 32) {
    s1 += partial[(2 * k) * c + ch];
    s2 += partial[(2 * k + 1) * c + ch];
  }
  s1 = warp_sum(s1);
  s2 = warp_sum(s2);
  return threadIdx.x % 32 == 0;
}

// saved[4][c] = mean, invstd, scale, shift.
__global__ void finalize_forward(const float* partial, int splits, int c, int64_t count,
                                 const float* gamma, const float* beta, float* running_mean,
                                 float* running_var, float momentum, float eps, float* saved) {
  int ch;
  double s1, s2;
  if (!channel_sums(partial, splits, c, ch, s1, s2)) return;
  const double mean = s1 / count;
  const double var = fmax(s2 / count - mean * mean, 0.0);
  const double invstd = 1.0 / sqrt(var + eps);
  saved[ch] = static_cast<float>(mean);
  saved[c + ch] = static_cast<float>(invstd);
  if (running_mean) {
    const double unbiased = count > 1 ? var * count / (count - 1) : var;
    running_mean[ch] = static_cast<float>((1.0 - momentum) * running_mean[ch] + momentum * mean);
    running_var[ch] = static_cast<float>((1.0 - momentum) * running_var[ch] + momentum * unbiased);
  }
  const double scale = (gamma ? gamma[ch] : 1.0f) * invstd;
  saved[2 * c + ch] = static_cast<float>(scale);
  saved[3 * c + ch] = static_cast<float>((beta ? beta[ch] : 0.0f) - mean * scale);
}

// dbeta = sum dz, dgamma = sum dz * xhat; dr = k * dz + c1 * r + c0, from
// dr = gamma * invstd * (dz - mean(dz) - xhat * mean(dz * xhat)) with xhat = (r - mean) * invstd.
// coef[0..2][c] = k, c1, c0.
__global__ void finalize_backward(const float* partial, int splits, int c, int64_t count,
                                  const float* gamma, const float* saved, float* dgamma,
                                  float* dbeta, float* coef) {
  int ch;
  double s1, s2;
  if (!channel_sums(partial, splits, c, ch, s1, s2)) return;
  const double mean = saved[ch], invstd = saved[c + ch];
  const double dg = invstd * (s2 - mean * s1);
  if (dgamma) dgamma[ch] = static_cast<float>(dg);
  if (dbeta) dbeta[ch] = static_cast<float>(s1);
  const double k = (gamma ? gamma[ch] : 1.0f) * invstd;
  const double b = dg / count * invstd;  // mean(dz * xhat) * invstd
  coef[ch] = static_cast<float>(k);
  coef[c + ch] = static_cast<float>(-k * b);
  coef[2 * c + ch] = static_cast<float>(-k * s1 / count + k * b * mean);
}

// coef[0][c] = scale, coef[1][c] = shift from the running statistics.
__global__ void finalize_inference(int c, const float* gamma, const float* beta,
                                   const float* running_mean, const float* running_var, float eps,
                                   float* coef) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const float scale = (gamma ? gamma[ch] : 1.0f) * rsqrtf(running_var[ch] + eps);
  coef[ch] = scale;
  coef[c + ch] = (beta ? beta[ch] : 0.0f) - running_mean[ch] * scale;
}

// Forward: k = scale, c1 = shift; backward: k, c1, c0 as finalize_backward writes them, and the
// forward's scale and shift.
template <NormAct A, bool kBackward>
__device__ __forceinline__ float apply_one(float y, float g, float k, float c1, float c0,
                                           float scale, float shift) {
  const float r = Op<A>::input(y);
  if constexpr (kBackward) {
    if (!Op<A>::passes(y)) return 0.0f;
    // Where the gradient passes, r is y (either activation): c1 * y keeps ReLU's arithmetic as
    // its kernels had it.
    return k * Op<A>::output_grad(r * scale + shift, g) + c1 * y + c0;
  }
  return Op<A>::output(r * k + c1);
}

// coef: the forward's [2][c] (scale, shift), or the backward's [3][c] (k, c1, c0) with the
// forward's `saved`.
template <typename T, int V, NormAct A, bool kBackward>
__global__ void apply_nhwc(const T* __restrict__ y, const T* __restrict__ g, T* __restrict__ out,
                           int64_t rows, int c, const float* __restrict__ coef,
                           const float* __restrict__ saved) {
  const RowLayout l(c, V);
  if (l.sub >= l.rows_per_iter) return;
  float k[V], c1[V], c0[V], scale[V], shift[V];
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const int ch = l.lane * V + i;
    k[i] = coef[ch];
    c1[i] = coef[c + ch];
    c0[i] = kBackward ? coef[2 * c + ch] : 0.0f;
    if constexpr (kBackward)
      forward_coef<A>(saved, c, ch, scale[i], shift[i]);
    else
      scale[i] = shift[i] = 0.0f;
  }
  l.for_each_pack(rows, c, V, [&](int64_t at) {
    const Pack<T, V> yv = *reinterpret_cast<const Pack<T, V>*>(y + at);
    Pack<T, V> gv;
    if constexpr (kBackward) gv = *reinterpret_cast<const Pack<T, V>*>(g + at);
    Pack<T, V> o;
#pragma unroll
    for (int i = 0; i < V; ++i)
      o.v[i] = from_float<T>(apply_one<A, kBackward>(to_float(yv.v[i]),
                                                     kBackward ? to_float(gv.v[i]) : 0.0f, k[i],
                                                     c1[i], c0[i], scale[i], shift[i]));
    *reinterpret_cast<Pack<T, V>*>(out + at) = o;
  });
}

// One block per (image, channel) plane.
template <typename T, NormAct A, bool kBackward>
__global__ void apply_nchw(const T* __restrict__ y, const T* __restrict__ g, T* __restrict__ out,
                           int c, int64_t hw, const float* __restrict__ coef,
                           const float* __restrict__ saved) {
  const int64_t plane = blockIdx.x;
  const int ch = static_cast<int>(plane % c);
  const float k = coef[ch], c1 = coef[c + ch], c0 = kBackward ? coef[2 * c + ch] : 0.0f;
  float scale = 0.0f, shift = 0.0f;
  if constexpr (kBackward) forward_coef<A>(saved, c, ch, scale, shift);
  const int64_t base = plane * hw;
  for (int64_t s = threadIdx.x; s < hw; s += blockDim.x)
    out[base + s] = from_float<T>(apply_one<A, kBackward>(
        to_float(y[base + s]), kBackward ? to_float(g[base + s]) : 0.0f, k, c1, c0, scale, shift));
}

// Channels per 16-byte pack for NHWC (1 where c or an address does not allow packs); 0 when the
// layout is not supported.
int pack_width(const NormShape& s, std::initializer_list<const void*> data) {
  const int v = 16 / element_bytes(s.type);
  bool aligned = s.c % v == 0 && s.c / v <= kThreads;
  for (const void* p : data) aligned = aligned && reinterpret_cast<uintptr_t>(p) % 16 == 0;
  if (aligned) return v;
  return s.c <= kThreads ? 1 : 0;
}

int max_splits() {
  return 4 * sm_count();
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The reduce and apply launches of one direction, for element type T and activation A.
template <typename T, NormAct A>
struct Launch {
  const NormShape& s;
  cudaStream_t stream;

  // Runs the reduce kernel; returns the number of partial rows it wrote.
  template <bool kBackward>
  int reduce(int v, const void* y, const void* g, const float* saved, float* partial) const {
    const T* yt = static_cast<const T*>(y);
    const T* gt = static_cast<const T*>(g);
    const int c = static_cast<int>(s.c);
    if (!s.channels_last) {
      const int threads = static_cast<int>(std::min<int64_t>(kThreads, ceil_div(s.hw, 32) * 32));
      const int splits =
          static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(s.n, ceil_div(max_splits(), c))));
      reduce_nchw<T, A, kBackward>
          <<<dim3(c, splits), threads, 0, stream>>>(yt, gt, s.n, c, s.hw, saved, partial);
      return splits;
    }
    const int64_t rows = s.count();
    const int rows_per_iter = kThreads / (c / v);
    const int splits = static_cast<int>(
        std::max<int64_t>(1, std::min<int64_t>(ceil_div(rows, rows_per_iter), max_splits())));
    const size_t shared = 2 * sizeof(float) * rows_per_iter * c;
    if (v == 1)
      reduce_nhwc<T, 1, A, kBackward>
          <<<splits, kThreads, shared, stream>>>(yt, gt, rows, c, saved, partial);
    else
      reduce_nhwc<T, 16 / sizeof(T), A, kBackward>
          <<<splits, kThreads, shared, stream>>>(yt, gt, rows, c, saved, partial);
    return splits;
  }

  template <bool kBackward>
  void apply(int v, const void* y, const void* g, void* out, const float* coef,
             const float* saved) const {
    const T* yt = static_cast<const T*>(y);
    const T* gt = static_cast<const T*>(g);
    T* ot = static_cast<T*>(out);
    const int c = static_cast<int>(s.c);
    if (!s.channels_last) {
      const int threads = static_cast<int>(std::min<int64_t>(kThreads, ceil_div(s.hw, 32) * 32));
      apply_nchw<T, A, kBackward><<<static_cast<unsigned>(s.n * c), threads, 0, stream>>>(
          yt, gt, ot, c, s.hw, coef, saved);
      return;
    }
    const int64_t rows = s.count();
    const int rows_per_iter = kThreads / (c / v);
    const int blocks = static_cast<int>(
        std::max<int64_t>(1, std::min<int64_t>(ceil_div(rows, rows_per_iter), 8 * sm_count())));
    if (v == 1)
      apply_nhwc<T, 1, A, kBackward>
          <<<blocks, kThreads, 0, stream>>>(yt, gt, ot, rows, c, coef, saved);
    else
      apply_nhwc<T, 16 / sizeof(T), A, kBackward>
          <<<blocks, kThreads, 0, stream>>>(yt, gt, ot, rows, c, coef, saved);
  }
};

template <NormAct A, typename F>
void dispatch_type(const NormShape& s, cudaStream_t stream, const F& f) {
  switch (s.type) {
    case ElementType::kFloat:
      f(Launch<float, A>{s, stream});
      break;
    case ElementType::kHalf:
      f(Launch<__half, A>{s, stream});
      break;
    case ElementType::kBFloat16:
      f(Launch<__nv_bfloat16, A>{s, stream});
      break;
  }
}

// Calls f with the Launch of s's element type and `act`.
template <typename F>
void dispatch(NormAct act, const NormShape& s, void* stream, const F& f) {
  const auto st = static_cast<cudaStream_t>(stream);
  switch (act) {
    case NormAct::kReluNorm:
      dispatch_type<NormAct::kReluNorm>(s, st, f);
      break;
    case NormAct::kNormGelu:
      dispatch_type<NormAct::kNormGelu>(s, st, f);
      break;
  }
}

// A call's pack width (checked against its buffers) and its workspace: partial sums, then
// per-channel coefficients.
struct CallPlan {
  int v;
  float* partial;
  float* coef;
};

CallPlan plan_call(const NormShape& s, std::initializer_list<const void*> data, float* workspace,
                   const char* what) {
  const int v = pack_width(s, data);
  FASTER_CHECK(!s.channels_last || v > 0, what, ": unsupported shape");
  return {v, workspace, workspace + 2 * s.c * max_splits()};
}

int finalize_blocks(int64_t c) {
  return static_cast<int>(ceil_div(c * 32, kThreads));
}

}  // namespace

bool norm_act_supported(const NormShape& s, const void* data) {
  if (s.n < 1 || s.c < 1 || s.hw < 1 || s.c > (1 << 20)) return false;
  if (!s.channels_last) return s.n * s.c < (int64_t{1} << 31);
  return pack_width(s, {data}) > 0;
}

int64_t norm_act_workspace(const NormShape& s) {
  return 2 * s.c * max_splits() + 3 * s.c;
}

void norm_act_forward(NormAct act, const NormShape& s, const void* y, void* out, const float* gamma,
                      const float* beta, float* running_mean, float* running_var, float momentum,
                      float eps, float* saved, float* workspace, void* stream) {
  const auto p = plan_call(s, {y, out}, workspace, "norm_act_forward");
  dispatch(act, s, stream, [&](const auto& launch) {
    const int splits = launch.template reduce<false>(p.v, y, nullptr, nullptr, p.partial);
    finalize_forward<<<finalize_blocks(s.c), kThreads, 0, launch.stream>>>(
        p.partial, splits, static_cast<int>(s.c), s.count(), gamma, beta, running_mean, running_var,
        momentum, eps, saved);
    launch.template apply<false>(p.v, y, nullptr, out, saved + 2 * s.c, nullptr);
  });
  FASTER_CHECK_CUDA(cudaGetLastError(), "launch of norm_act_forward");
}

void norm_act_backward(NormAct act, const NormShape& s, const void* y, const void* dout, void* dy,
                       const float* gamma, const float* saved, float* dgamma, float* dbeta,
                       float* workspace, void* stream) {
  const auto p = plan_call(s, {y, dout, dy}, workspace, "norm_act_backward");
  dispatch(act, s, stream, [&](const auto& launch) {
    const int splits = launch.template reduce<true>(p.v, y, dout, saved, p.partial);
    finalize_backward<<<finalize_blocks(s.c), kThreads, 0, launch.stream>>>(
        p.partial, splits, static_cast<int>(s.c), s.count(), gamma, saved, dgamma, dbeta, p.coef);
    launch.template apply<true>(p.v, y, dout, dy, p.coef, saved);
  });
  FASTER_CHECK_CUDA(cudaGetLastError(), "launch of norm_act_backward");
}

void norm_act_inference(NormAct act, const NormShape& s, const void* y, void* out,
                        const float* gamma, const float* beta, const float* running_mean,
                        const float* running_var, float eps, float* workspace, void* stream) {
  const auto p = plan_call(s, {y, out}, workspace, "norm_act_inference");
  dispatch(act, s, stream, [&](const auto& launch) {
    finalize_inference<<<static_cast<int>(ceil_div(s.c, kThreads)), kThreads, 0, launch.stream>>>(
        static_cast<int>(s.c), gamma, beta, running_mean, running_var, eps, p.coef);
    launch.template apply<false>(p.v, y, nullptr, out, p.coef, nullptr);
  });
  FASTER_CHECK_CUDA(cudaGetLastError(), "launch of norm_act_inference");
}

}  // namespace faster::models::kernels

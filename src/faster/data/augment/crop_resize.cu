// crop_resize_gpu: one thread per output pixel computes all three channels as a 2-D separable
// triangle-filter sum over the source pixels under it (a few taps per axis for the usual 1-2x
// downscales of random-resized-crop), with the weights of Resampler::compute_axis.
#include <cuda_runtime.h>

#include "faster/core/cuda_check.h"
#include "faster/core/error.h"
#include "faster/data/augment/crop_resize_gpu.h"

namespace faster::data {
namespace {

// The taps of output pixel i along one axis (Resampler::compute_axis, kAntialias): a triangle of
// half-width max(scale, 1) centred on the pixel, clamped to [in_lo, in_hi), normalized.
struct Axis {
  int lo, hi;
  float center, inv_filterscale, inv_total;
  bool nearest;  // the clamped triangle missed every pixel: take pixel `lo`

  __device__ float weight(int x) const {
    if (nearest) return 1.0f;
    const float d = fabsf((x + 0.5f - center) * inv_filterscale);
    return d < 1.0f ? (1.0f - d) * inv_total : 0.0f;
  }
};

__device__ Axis make_axis(float start, float length, int in_lo, int in_hi, int out_size, int i) {
  Axis a;
  const float scale = length / out_size;
  const float filterscale = fmaxf(scale, 1.0f);
  a.center = start + (i + 0.5f) * scale;
  a.inv_filterscale = 1.0f / filterscale;
  a.lo = max(static_cast<int>(floorf(a.center - filterscale + 0.5f)), in_lo);
  a.hi = min(static_cast<int>(floorf(a.center + filterscale + 0.5f)), in_hi);
  a.hi = max(a.hi, a.lo + 1);
  a.nearest = false;
  a.inv_total = 1.0f;
  float total = 0.0f;
  for (int x = a.lo; x < a.hi; ++x) total += a.weight(x);
  if (total <= 0.0f) {
    a.nearest = true;
    a.hi = a.lo + 1;
  } else {
    a.inv_total = 1.0f / total;
  }
  return a;
}

__global__ void crop_resize_kernel(const GpuCrop* crops, int size, bool nchw, uint8_t* out) {
  const int pixel = blockIdx.x * blockDim.x + threadIdx.x;
  if (pixel >= size * size) return;
  const GpuCrop c = crops[blockIdx.y];
  const int oy = pixel / size, ox = pixel % size;
  // The region's pixels, rounded outwards (Resampler::resample): taps never leave them.
  const float eps = 1e-6f;
  const int x_lo = max(0, static_cast<int>(floorf(c.x + eps)));
  const int x_hi = max(min(c.width, static_cast<int>(ceilf(c.x + c.w - eps))), x_lo + 1);
  const int y_lo = max(0, static_cast<int>(floorf(c.y + eps)));
  const int y_hi = max(min(c.height, static_cast<int>(ceilf(c.y + c.h - eps))), y_lo + 1);
  const Axis ax = make_axis(c.x, c.w, x_lo, x_hi, size, ox);
  const Axis ay = make_axis(c.y, c.h, y_lo, y_hi, size, oy);
  float r = 0.0f, g = 0.0f, b = 0.0f;
  for (int y = ay.lo; y < ay.hi; ++y) {
    const float wy = ay.weight(y);
    const uint8_t* row = c.src + static_cast<size_t>(y) * c.pitch;
    float rr = 0.0f, gg = 0.0f, bb = 0.0f;
    for (int x = ax.lo; x < ax.hi; ++x) {
      const float wx = ax.weight(x);
      const uint8_t* p = row + 3 * x;
      rr += wx * p[0];
      gg += wx * p[1];
      bb += wx * p[2];
    }
    r += wy * rr, g += wy * gg, b += wy * bb;
  }
  const int dx = c.flip ? size - 1 - ox : ox;
  const float v[3] = {r, g, b};
  for (int ch = 0; ch < 3; ++ch) {
    const uint8_t q = static_cast<uint8_t>(fminf(fmaxf(v[ch] + 0.5f, 0.0f), 255.0f));
    const size_t at = nchw ? ((static_cast<size_t>(c.position) * 3 + ch) * size + oy) * size + dx
                           : ((static_cast<size_t>(c.position) * size + oy) * size + dx) * 3 + ch;
    out[at] = q;
  }
}

}  // namespace

void crop_resize_gpu(const GpuCrop* crops, int n, int size, bool nchw, uint8_t* out, void* stream) {
  if (n <= 0) return;
  FASTER_CHECK(n <= 65535, "crop_resize_gpu: batch of ", n, " images is too large");
  const int threads = 256;
  const dim3 grid((size * size + threads - 1) / threads, n);
  crop_resize_kernel<<<grid, threads, 0, static_cast<cudaStream_t>(stream)>>>(crops, size, nchw,
                                                                              out);
  FASTER_CHECK_CUDA(cudaGetLastError(), "launch of crop_resize_gpu");
}

}  // namespace faster::data

// Crop + antialiased resize + flip of a batch of decoded images on the GPU, written as uint8 into
// the batch tensor: the GPU twin of Resampler (Filter::kAntialias) followed by store_uint8, for
// images decoded by nvJPEG.  Compute only (CUDA builds): the caller owns memory and streams.
#pragma once

#include <cstdint>

namespace faster::data {

// One output image: a decoded RGB image in device memory and the region of it that is resized into
// output image `position`.
struct GpuCrop {
  const uint8_t* src = nullptr;      // device memory, interleaved RGB
  int width = 0, height = 0;         // of src, in pixels
  int pitch = 0;                     // bytes between src rows
  float x = 0, y = 0, w = 0, h = 0;  // the region, in src pixels (fractional edges allowed)
  int flip = 0;                      // mirror the output horizontally
  int position = 0;                  // image index in the output batch
};

// Resizes each of the `n` crops (device memory) to size x size with the triangle filter that
// torchvision/PIL use for antialiased resizing (Resampler's kAntialias: same taps, same clamping at
// the region's edges) and stores it, flipped where asked, into `out` (device memory, uint8,
// [batch, 3, size, size] when `nchw`, else [batch, size, size, 3]).  Queued on `stream` (a
// cudaStream_t); nothing is synchronized.
void crop_resize_gpu(const GpuCrop* crops, int n, int size, bool nchw, uint8_t* out, void* stream);

}  // namespace faster::data

// Batched JPEG decoding on the GPU with nvJPEG: the hardware JPEG decoder of A100/H100/H200 where
// the GPU has one (nvJPEG's CUDA decoder otherwise), fused with the batch's crop, antialiased
// resize and flip (crop_resize_gpu).  Compute only: the loader decides which images come here and
// does the rest on the CPU.  CUDA builds compile nvjpeg_decoder_cuda.cpp; others
// nvjpeg_decoder_none.cpp, whose constructor says that this build cannot.
// One NvjpegDecoder per thread: it owns an nvJPEG handle, decode state, stream and device buffers.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "faster/data/augment/store.h"
#include "faster/data/image.h"

namespace faster::data {

// One image for the GPU: its compressed bytes (host memory, alive until decode() returns), its
// size from the header, and what to make of it.
struct GpuJpeg {
  const uint8_t* data = nullptr;
  size_t size = 0;
  int width = 0, height = 0;
  RegionF region;  // in source pixels
  bool flip = false;
  int position = 0;  // index in the output batch
};

// Where decode() and upload() spent their time, summed over calls (nanoseconds): checking the
// headers on the host, inside nvJPEG's batched calls and the kernel launches, and waiting for the
// GPU to finish (the stream synchronizations).
struct NvjpegTiming {
  int64_t parse_ns = 0, call_ns = 0, wait_ns = 0;
};

class NvjpegDecoder {
 public:
  // Decoded pixels one decode() call may hold on the GPU: a part of a batch of ordinary images
  // (64 of 500x400: 38 MB) is far below it; the images past it (large photographs) are refused
  // (the CPU decodes only their crops) instead of the GPU memory for them growing to gigabytes.
  static constexpr size_t kDefaultArenaBytes = size_t{512} << 20;

  // Throws faster::Error when there is no usable GPU or nvJPEG (or no CUDA in this build).
  NvjpegDecoder(torch::Device device, int max_batch, size_t arena_bytes = kDefaultArenaBytes);
  ~NvjpegDecoder();
  NvjpegDecoder(const NvjpegDecoder&) = delete;
  NvjpegDecoder& operator=(const NvjpegDecoder&) = delete;

  // "nvJPEG hardware decoder (N engines)" or "nvJPEG CUDA decoder (no hardware decoder)".
  std::string describe() const;
  bool hardware() const;

  // A device tensor for `batch` uint8 images of size x size ([batch, 3, size, size] or [batch,
  // size, size, 3]), made on this decoder's stream.
  torch::Tensor new_batch(int batch, int size, Layout layout);

  // Decodes `jobs` and writes each one's region, resized to the side of `out` (a new_batch() of
  // any decoder) and flipped where asked, into its position of `out`.  Images nvJPEG does not
  // take, and every image of a call it fails on, are left unwritten and listed in `refused`
  // (indices into `jobs`) for the caller to decode on the CPU.  Returns when the GPU is done: the
  // host bytes may be reused, and other threads may write other positions of `out` meanwhile.
  void decode(const std::vector<GpuJpeg>& jobs, Layout layout, torch::Tensor& out,
              std::vector<int>& refused);

  // Copies images `positions` of `host` (uint8, same shape, pinned) into `out`; returns when done.
  void upload(const torch::Tensor& host, const std::vector<int>& positions, torch::Tensor& out);

  // Tells the CUDA allocator that `t` (made by new_batch()) is used on the caller's current stream,
  // so its memory is not handed out again before that stream's work is done.
  static void record_use(const torch::Tensor& t);

  // The time spent since the last call (or since construction), and resets it.
  NvjpegTiming take_timing();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faster::data

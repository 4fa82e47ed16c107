// Random translation and horizontal flip of whole batches on their device: the augmentation of
// small datasets held on the GPU (the CIFAR-10 speed runs': a crop of the image padded by a few
// zero pixels, then a coin for the flip).  Draws come from SampleRng per (seed, epoch, index), as
// the image loader's crops do, so a run is reproducible whatever the device.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace faster::data {

struct ShiftFlipOptions {
  int pad = 0;        // shifts of -pad..pad pixels in each direction (zeros come in at the edge)
  bool flip = false;  // a horizontal flip with probability 1/2
  // Flips alternate (airbench's "alternating flip"): each image's first-epoch coin decides its
  // flip in even epochs and the other way round in odd ones, so every two epochs see each image
  // both ways; the draws stay 1/2 per epoch.
  bool alternate = false;
  bool active() const { return pad > 0 || flip; }
};

// Each sample's draws: dy and dx in [0, 2 pad] (the crop's corner in the padded image), then the
// flip coin (0 without flip), from SampleRng(seed, epoch, indices[i]); with `alternate` the coin
// is epoch 0's, inverted in odd epochs.  int64 [n, 3] on the CPU.
torch::Tensor shift_flip_params(const std::vector<int64_t>& indices, const ShiftFlipOptions& o,
                                uint64_t seed, int64_t epoch);

// `padded`: [n, C, H + 2 pad, W + 2 pad], the images with `pad` zeros on each side; `params`:
// [n, 3] int64 on the same device.  Returns [n, C, H, W] with
//   out[i, c, y, x] = padded[i, c, y + dy_i, (flip_i ? W - 1 - x : x) + dx_i].
torch::Tensor shift_flip(const torch::Tensor& padded, const torch::Tensor& params, int pad);

}  // namespace faster::data

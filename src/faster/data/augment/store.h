// The last augment step: one resampled HWC image written into its slot of a batch, flipped or not,
// as uint8 (normalized later on the GPU) or float normalized by mean/std, in NCHW or NHWC.
#pragma once

#include <cstdint>
#include <vector>

#include "faster/core/enum_names.h"
#include "faster/data/image.h"

namespace faster::data {

enum class Layout { kNCHW, kNHWC };
inline constexpr EnumName<Layout> kLayoutNames[] = {{"nchw", Layout::kNCHW},
                                                    {"nhwc", Layout::kNHWC}};
enum class OutputType { kUint8, kFloat };
inline constexpr EnumName<OutputType> kOutputNames[] = {{"uint8", OutputType::kUint8},
                                                        {"float", OutputType::kFloat}};

struct Normalization {
  float mean[3] = {0.485f, 0.456f, 0.406f};  // ImageNet, of values in [0, 1]
  float std[3] = {0.229f, 0.224f, 0.225f};
};

// A batch of n images of height x width in `layout`: [n, channels, height, width] or
// [n, height, width, channels].  (n = height = width = 1: the shape a per-channel constant
// broadcasts from.)
std::vector<int64_t> batch_shape(Layout layout, int64_t n, int64_t channels, int64_t height,
                                 int64_t width);

// `dst` is this sample's slot: channels * height * width elements.  `src` has 1 or 3 channels;
// `channels` (0: src's) is the output's: 3 from a 1-channel src repeats the value (gray to RGB).
void store_uint8(const ImageView& src, bool flip, Layout layout, uint8_t* dst, int channels = 0);
void store_float(const ImageView& src, bool flip, Layout layout, const Normalization& norm,
                 float* dst, int channels = 0);

}  // namespace faster::data

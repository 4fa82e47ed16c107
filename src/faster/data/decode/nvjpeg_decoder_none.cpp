// NvjpegDecoder in builds without CUDA: constructing one explains why it cannot work.
#include "faster/core/error.h"
#include "faster/data/decode/nvjpeg_decoder.h"

namespace faster::data {

struct NvjpegDecoder::Impl {};

NvjpegDecoder::NvjpegDecoder(torch::Device, int, size_t) {
  throw Error("--decode nvjpeg needs faster built with CUDA (this build has no CUDA)",
              "use --decode cpu, or build on a machine with CUDA and nvcc");
}
NvjpegDecoder::~NvjpegDecoder() = default;
std::string NvjpegDecoder::describe() const {
  return "none";
}
bool NvjpegDecoder::hardware() const {
  return false;
}
torch::Tensor NvjpegDecoder::new_batch(int, int, Layout) {
  FASTER_THROW("no nvJPEG in this build");
}
void NvjpegDecoder::decode(const std::vector<GpuJpeg>&, Layout, torch::Tensor&, std::vector<int>&) {
  FASTER_THROW("no nvJPEG in this build");
}
void NvjpegDecoder::upload(const torch::Tensor&, const std::vector<int>&, torch::Tensor&) {
  FASTER_THROW("no nvJPEG in this build");
}
void NvjpegDecoder::record_use(const torch::Tensor&) {}
NvjpegTiming NvjpegDecoder::take_timing() {
  return {};
}

}  // namespace faster::data

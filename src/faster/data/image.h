// Interleaved 8-bit images (HWC) as passed between decode, resample and the loader: views that
// borrow memory, and a growable buffer that keeps its capacity so steady-state decoding never
// allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace faster::data {

// A read-only interleaved image; stride is in bytes between rows.
struct ImageView {
  const uint8_t* data = nullptr;
  int width = 0, height = 0, channels = 0;
  size_t stride = 0;
  const uint8_t* row(int y) const { return data + static_cast<size_t>(y) * stride; }
};

// A writable interleaved image (for example one slot of a batch, or a scratch buffer).
struct MutableImageView {
  uint8_t* data = nullptr;
  int width = 0, height = 0, channels = 0;
  size_t stride = 0;
  uint8_t* row(int y) const { return data + static_cast<size_t>(y) * stride; }
  operator ImageView() const { return {data, width, height, channels, stride}; }
};

// Owns pixels; reshape() only allocates when the new image is larger than any before, and never
// clears memory (std::vector::resize would zero-fill on every growth within capacity).
class ImageBuffer {
 public:
  ImageBuffer() = default;
  ImageBuffer(const ImageBuffer&) = delete;
  ImageBuffer& operator=(const ImageBuffer&) = delete;
  ImageBuffer(ImageBuffer&&) = default;
  ImageBuffer& operator=(ImageBuffer&&) = default;

  void reshape(int width, int height, int channels) {
    const size_t need = static_cast<size_t>(width) * height * channels;
    if (need > capacity_) {
      bytes_.reset(new uint8_t[need]);
      capacity_ = need;
    }
    width_ = width, height_ = height, channels_ = channels;
  }

  int width() const { return width_; }
  int height() const { return height_; }
  int channels() const { return channels_; }
  size_t stride() const { return static_cast<size_t>(width_) * channels_; }
  size_t capacity() const { return capacity_; }
  uint8_t* data() { return bytes_.get(); }
  const uint8_t* data() const { return bytes_.get(); }
  uint8_t* row(int y) { return bytes_.get() + y * stride(); }
  ImageView view() const { return {bytes_.get(), width_, height_, channels_, stride()}; }
  MutableImageView mutable_view() { return {bytes_.get(), width_, height_, channels_, stride()}; }

 private:
  std::unique_ptr<uint8_t[]> bytes_;
  size_t capacity_ = 0;
  int width_ = 0, height_ = 0, channels_ = 0;
};

// An integer pixel rectangle (a crop in source pixels).
struct Rect {
  int x = 0, y = 0, width = 0, height = 0;
};

// A rectangle with fractional edges: where a crop lies in a decoded (possibly DCT-scaled) image.
struct RegionF {
  double x = 0, y = 0, width = 0, height = 0;
};

}  // namespace faster::data

// ArraySource: planar (CHW) arrays handed out as interleaved pixels.
#include "faster/data/sources/array_source.h"

#include "faster/core/error.h"

namespace faster::data {

ArraySource::ArraySource(std::shared_ptr<const ArrayDataset> data) : data_(std::move(data)) {
  FASTER_CHECK(data_ && data_->n > 0, "ArraySource: empty dataset");
  for (int c = 0; c < data_->classes; ++c) classes_.push_back(std::to_string(c));
}

void ArraySource::get(int64_t index, Sample& out) const {
  FASTER_CHECK(index >= 0 && index < data_->n, "ArraySource: index ", index, " out of range");
  const int64_t plane = int64_t{data_->height} * data_->width;
  const int channels = data_->channels;
  const uint8_t* src = data_->images.data() + index * data_->image_bytes();
  out.bytes.resize(static_cast<size_t>(plane * channels));
  uint8_t* dst = out.bytes.data();
  for (int c = 0; c < channels; ++c)
    for (int64_t p = 0; p < plane; ++p) dst[p * channels + c] = src[c * plane + p];
  out.label = static_cast<int>(data_->labels[index]);
}

int ArraySource::label(int64_t index) const {
  return static_cast<int>(data_->labels[index]);
}

std::string ArraySource::name(int64_t index) const {
  return data_->name + " #" + std::to_string(index);
}

std::string ArraySource::describe() const {
  return data_->name + " (" + std::to_string(data_->classes) + " classes, " +
         std::to_string(data_->n) + " images of " + std::to_string(data_->width) + "x" +
         std::to_string(data_->height) + "x" + std::to_string(data_->channels) + ", in memory)";
}

std::optional<PixelShape> ArraySource::pixels() const {
  return PixelShape{data_->width, data_->height, data_->channels};
}

}  // namespace faster::data

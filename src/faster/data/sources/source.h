// A dataset as the loader sees it: size() samples, each read as bytes plus a label.  Folders of
// JPEGs and LMDB databases give encoded images; arrays held in memory (ArraySource) give decoded
// pixels of one fixed shape.  The loader shards and shuffles indices.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace faster::data {

struct Sample {
  // The encoded image, or its pixels (HWC) for a source of pixels; capacity reused from sample to
  // sample (sized by resize_bytes).
  std::vector<uint8_t> bytes;
  int label = -1;
};

// bytes.resize(size), but a buffer over twice the size (and 256 KiB) is let go first: the loader
// swaps sample buffers between its workers and its ring of batches, so each would otherwise keep
// the capacity of the largest file it ever held, and host memory crept up epoch after epoch
// (hundreds of buffers on the nvJPEG path; BENCHMARKS.md, issue 35).
inline void resize_bytes(std::vector<uint8_t>& bytes, size_t size) {
  if (bytes.capacity() > 2 * size + (size_t{256} << 10)) std::vector<uint8_t>().swap(bytes);
  bytes.resize(size);
}

// The shape every sample of a source of decoded pixels has.
struct PixelShape {
  int width = 0, height = 0, channels = 0;
};

class Source {
 public:
  virtual ~Source() = default;

  virtual int64_t size() const = 0;
  // Reads sample `index` into `out` (bytes and label).  Thread-safe: workers call it concurrently.
  // Throws faster::Error naming the sample (path or key) when it cannot be read.
  virtual void get(int64_t index, Sample& out) const = 0;

  // The label of `index` without reading the image (cheap, no I/O).  In a damaged LMDB it may lie
  // outside classes(); get() then throws, and the loader counts the sample as a bad image.
  virtual int label(int64_t index) const = 0;
  // Class names, index = label.
  virtual const std::vector<std::string>& classes() const = 0;
  // Names the sample in messages: a path, or database + key.
  virtual std::string name(int64_t index) const = 0;
  // One line for reports: "folder /data/train (1000 classes, 1281167 images)".
  virtual std::string describe() const = 0;
  // Sources of decoded pixels say their one shape; encoded (JPEG) sources return nothing.
  virtual std::optional<PixelShape> pixels() const { return std::nullopt; }
  // Drops the source's files from the page cache (posix_fadvise DONTNEED), so the next read
  // measures the disk; returns how many files were advised.
  virtual int64_t evict_page_cache() const { return 0; }
};

}  // namespace faster::data

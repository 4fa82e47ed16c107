// Writes a database in faster's LMDB layout (docs/lmdb_layout.md): records appended with
// consecutive keys from 0, one write transaction per batch, the metadata record last.  A batch
// stays in memory until it is committed, so when the map is full the batch is replayed after
// doubling the map: the writer never needs the total size up front.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "faster/data/sources/lmdb_env.h"
#include "faster/data/sources/lmdb_format.h"

namespace faster::data {

class LmdbWriter {
 public:
  // Creates the database in `dir` (new or empty).  batch_bytes bounds the memory held per batch.
  LmdbWriter(const std::filesystem::path& dir, size_t map_size,
             size_t batch_bytes = size_t{64} << 20);

  // Appends record count(): `crc` is lmdb_format::crc32() of `image` (computed by the caller, so
  // that it runs on the worker threads rather than on the single writer).
  void append(int label, uint32_t crc, std::vector<uint8_t>&& image);
  // Commits the rest with the metadata record, syncs the file and closes the database.
  void finish(const lmdb_format::Metadata& metadata);

  // The buffer of a committed record, to refill instead of allocating a new one (empty if none).
  std::vector<uint8_t> take_spare();
  int64_t count() const { return committed_ + static_cast<int64_t>(batch_.size()); }
  int growths() const { return growths_; }

 private:
  struct Pending {
    int label;
    uint32_t crc;
    std::vector<uint8_t> image;
  };
  void flush(const std::string* metadata);
  int write_batch(const std::string* metadata);

  LmdbEnv env_;
  size_t batch_limit_;
  std::vector<Pending> batch_;
  std::vector<std::vector<uint8_t>> spares_;
  size_t batch_bytes_ = 0;
  int64_t committed_ = 0;
  int growths_ = 0;
};

}  // namespace faster::data

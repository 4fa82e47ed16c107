// Zip CRC checks: the end-of-central-directory record (ZIP64's where the 32-bit fields overflow),
// each central directory entry's CRC-32 and sizes, each local header's data, read in chunks.
#include "faster/train/archive_check.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "faster/core/error.h"

namespace faster::train {
namespace fs = std::filesystem;
namespace {

uint64_t le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

struct Entry {
  std::string name;
  uint32_t crc = 0;
  uint16_t method = 0;
  uint64_t compressed = 0, size = 0, local = 0;
};

class Archive {
 public:
  explicit Archive(const fs::path& path) : path_(path), in_(path, std::ios::binary) {
    in_.seekg(0, std::ios::end);
    file_size_ = static_cast<uint64_t>(in_.tellg());
  }
  bool ok() const { return static_cast<bool>(in_); }
  uint64_t size() const { return file_size_; }

  std::vector<uint8_t> read(uint64_t at, uint64_t n) {
    if (at > file_size_ || n > file_size_ - at) bad("a record reaches past the file's end");
    std::vector<uint8_t> out(n);
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(at));
    in_.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n));
    if (!in_) bad("cannot read it");
    return out;
  }

  // The central directory's entries; empty where the file has no end record (not a zip).
  std::vector<Entry> entries() {
    const uint64_t tail = std::min<uint64_t>(file_size_, 65557);
    const auto end = read(file_size_ - tail, tail);
    int64_t eocd = -1;
    for (int64_t i = static_cast<int64_t>(end.size()) - 22; i >= 0; --i)
      if (le(&end[i], 4) == 0x06054b50) {
        eocd = i;
        break;
      }
    if (eocd < 0) return {};
    uint64_t count = le(&end[eocd + 10], 2), cd_size = le(&end[eocd + 12], 4),
             cd_offset = le(&end[eocd + 16], 4);
    if (eocd >= 20 && le(&end[eocd - 20], 4) == 0x07064b50) {  // the ZIP64 locator
      const auto record = read(le(&end[eocd - 12], 8), 56);
      if (le(&record[0], 4) != 0x06064b50) bad("its ZIP64 end record is damaged");
      count = le(&record[32], 8), cd_size = le(&record[40], 8), cd_offset = le(&record[48], 8);
    }
    const auto cd = read(cd_offset, cd_size);
    std::vector<Entry> out;
    size_t p = 0;
    for (uint64_t k = 0; k < count; ++k) {
      if (p + 46 > cd.size() || le(&cd[p], 4) != 0x02014b50)
        bad("its central directory is damaged");
      Entry e;
      e.method = static_cast<uint16_t>(le(&cd[p + 10], 2));
      e.crc = static_cast<uint32_t>(le(&cd[p + 16], 4));
      e.compressed = le(&cd[p + 20], 4), e.size = le(&cd[p + 24], 4);
      e.local = le(&cd[p + 42], 4);
      const size_t name = le(&cd[p + 28], 2), extra = le(&cd[p + 30], 2),
                   comment = le(&cd[p + 32], 2);
      if (p + 46 + name + extra + comment > cd.size()) bad("its central directory is damaged");
      e.name.assign(reinterpret_cast<const char*>(&cd[p + 46]), name);
      zip64_fields(&cd[p + 46 + name], extra, e);
      out.push_back(std::move(e));
      p += 46 + name + extra + comment;
    }
    return out;
  }

  // Whether the entry's data matches its CRC-32.
  bool intact(const Entry& e) {
    const auto header = read(e.local, 30);
    if (le(&header[0], 4) != 0x04034b50) bad("the local header of " + e.name + " is damaged");
    uint64_t at = e.local + 30 + le(&header[26], 2) + le(&header[28], 2);
    uint32_t crc = crc32(0, nullptr, 0);
    z_stream z{};
    if (e.method == 8 && inflateInit2(&z, -MAX_WBITS) != Z_OK) bad("zlib");
    std::vector<uint8_t> out(1 << 16);
    uint64_t left = e.method == 8 ? e.compressed : e.size, produced = 0;
    bool fine = true;
    while (left > 0 && fine) {
      auto chunk = read(at, std::min<uint64_t>(left, 1 << 20));
      at += chunk.size(), left -= chunk.size();
      if (e.method != 8) {
        crc = crc32(crc, chunk.data(), static_cast<uInt>(chunk.size()));
        continue;
      }
      z.next_in = chunk.data(), z.avail_in = static_cast<uInt>(chunk.size());
      while (z.avail_in > 0 && fine) {
        z.next_out = out.data(), z.avail_out = static_cast<uInt>(out.size());
        const int r = inflate(&z, Z_NO_FLUSH);
        const size_t n = out.size() - z.avail_out;
        crc = crc32(crc, out.data(), static_cast<uInt>(n));
        produced += n;
        fine = r == Z_OK || (r == Z_STREAM_END && z.avail_in == 0);
        if (r == Z_STREAM_END) break;
      }
    }
    if (e.method == 8) {
      inflateEnd(&z);
      fine = fine && produced == e.size;
    }
    return fine && crc == e.crc;
  }

 private:
  // ZIP64's extended information: the sizes and offset whose 32-bit fields are all ones.
  void zip64_fields(const uint8_t* extra, size_t n, Entry& e) {
    for (size_t q = 0; q + 4 <= n;) {
      const uint64_t id = le(extra + q, 2), len = le(extra + q + 2, 2);
      if (q + 4 + len > n) break;
      if (id == 0x0001) {
        size_t f = q + 4;
        for (uint64_t* field : {&e.size, &e.compressed, &e.local})
          if (*field == 0xFFFFFFFFu && f + 8 <= q + 4 + len) *field = le(extra + f, 8), f += 8;
      }
      q += 4 + len;
    }
  }
  [[noreturn]] void bad(const std::string& what) const {
    throw Error(path_.string() + ": a damaged archive: " + what,
                "restore it from a copy, or use another checkpoint (--keep-checkpoints keeps "
                "each epoch's)");
  }

  fs::path path_;
  std::ifstream in_;
  uint64_t file_size_ = 0;
};

}  // namespace

void check_archive_crcs(const fs::path& path) {
  Archive archive(path);
  if (!archive.ok() || archive.size() < 22) return;  // no zip: the reader says what it is
  for (const Entry& e : archive.entries())
    if (!archive.intact(e))
      throw Error(path.string() + ": its entry " + e.name +
                      " does not match its CRC-32: the file is damaged (a bit changed on disk "
                      "or in a copy), and its weights would be wrong",
                  "restore it from a copy, or use another checkpoint (--keep-checkpoints keeps "
                  "each epoch's)");
}

}  // namespace faster::train

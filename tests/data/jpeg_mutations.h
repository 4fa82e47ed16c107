// Seeded random mutations of valid JPEGs, the damage files meet on disks and networks: flipped
// bits, replaced bytes, truncation, inserted and deleted bytes.  The same seed gives the same file
// on every machine (the mutations draw from std::mt19937 directly, never through a distribution).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "data/jpeg_fixtures.h"

namespace faster::test {

enum class Mutation { kFlipBits, kReplaceBytes, kTruncate, kInsertBytes, kDeleteBytes };
constexpr int kMutationKinds = 5;
constexpr uint32_t kMutations = 200;

// The valid files mutated: a baseline 4:2:0 and a progressive JPEG, both 320x240 (downscaled by
// `resize --max-size 120`).
inline const std::vector<uint8_t>& mutation_base(uint32_t seed) {
  static const std::vector<uint8_t> baseline = make_jpeg(320, 240), progressive = [] {
    data::JpegEncodeOptions o;
    o.progressive = true;
    return make_jpeg(320, 240, 3, o);
  }();
  return seed % 2 == 0 ? baseline : progressive;
}

inline Mutation mutation_kind(uint32_t seed) {
  return static_cast<Mutation>(seed / 2 % kMutationKinds);
}

// Where the first scan's entropy-coded data begins: what comes before is markers and tables.
inline size_t jpeg_headers_end(const std::vector<uint8_t>& jpeg) {
  for (size_t i = 2; i + 3 < jpeg.size(); ++i)
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) return i + 2 + (jpeg[i + 2] << 8 | jpeg[i + 3]);
  return jpeg.size();
}

// Mutation `seed` of mutation_base(seed).  Half the positions fall in the headers, where a few
// bytes change the most (sizes, tables, sampling factors), the others anywhere.
inline std::vector<uint8_t> mutate_jpeg(uint32_t seed) {
  std::vector<uint8_t> bytes = mutation_base(seed);
  std::mt19937 rng(seed);
  const size_t headers = jpeg_headers_end(bytes);
  const auto position = [&](size_t size) {
    return static_cast<size_t>(rng() % 2 == 0 ? rng() % std::min(headers, size) : rng() % size);
  };
  const auto random_byte = [&] {  // marker bytes (0xFF) more often than chance
    return static_cast<uint8_t>(rng() % 4 == 0 ? 0xFF : rng());
  };
  const int count = 1 + static_cast<int>(rng() % 4);
  switch (mutation_kind(seed)) {
    case Mutation::kFlipBits:
      for (int i = 0; i < count; ++i) bytes[position(bytes.size())] ^= 1 << rng() % 8;
      break;
    case Mutation::kReplaceBytes:
      for (int i = 0; i < count; ++i) bytes[position(bytes.size())] = random_byte();
      break;
    case Mutation::kTruncate:
      bytes.resize(position(bytes.size()));
      break;
    case Mutation::kInsertBytes: {
      const size_t at = position(bytes.size());
      std::vector<uint8_t> inserted(1 + rng() % 16);
      for (auto& b : inserted) b = random_byte();
      bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at), inserted.begin(),
                   inserted.end());
      break;
    }
    case Mutation::kDeleteBytes: {
      const size_t at = position(bytes.size());
      const size_t n = std::min<size_t>(1 + rng() % 16, bytes.size() - at);
      bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                  bytes.begin() + static_cast<std::ptrdiff_t>(at + n));
      break;
    }
  }
  return bytes;
}

}  // namespace faster::test

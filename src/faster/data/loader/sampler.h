// Which samples a rank sees in an epoch, with torch DistributedSampler semantics: a permutation
// seeded by (seed, epoch), padded by wrapping around so that every rank gets the same count, then
// rank::world. With world == 1 and no padding this is a plain per-epoch shuffle.
#pragma once

#include <cstdint>
#include <vector>

#include "faster/core/enum_names.h"

namespace faster::data {

// What an epoch's short last batch becomes: kept short, dropped, or padded to full size (padding
// rows are ignored by the loss and the counts: static shapes for CUDA graphs and cuDNN plans).
enum class LastBatch { kKeep, kDrop, kPad };
inline constexpr EnumName<LastBatch> kLastBatchNames[] = {
    {"keep", LastBatch::kKeep}, {"drop", LastBatch::kDrop}, {"pad", LastBatch::kPad}};

struct SamplerOptions {
  int rank = 0;
  int world = 1;
  uint64_t seed = 0;
  bool shuffle = true;
  // true: drop the tail so that the total divides by world (no sample repeated);
  // false: pad by repeating the first samples of the permutation (every sample seen at least once).
  bool drop_tail = false;
  // false: neither pad nor drop; ranks get size/world or one more (evaluation, where a repeated
  // sample would count twice and ranks need not stay in step).
  bool even = true;
  // > 0: torchvision's RASampler (train.py --ra-sampler --ra-reps N) instead of the rule above:
  // each sample of the shuffled order repeated N times in a row, the list wrapped around to a
  // multiple of world, rank::world of it, cut to floor(size / 256) * 256 / world per rank.  The
  // ranks thus see the same images in different crops, and an epoch holds about size / N of them.
  int repetitions = 0;
};

class Sampler {
 public:
  Sampler(int64_t size, SamplerOptions options);

  // Sample indices of this rank for `epoch`, in the order to visit them.  Under repetitions, a
  // sample's r-th repetition is given as index + r * size() (a draw: index = draw % size(), and
  // the draw, not the index, seeds its crop); otherwise draws are the indices.
  std::vector<int64_t> indices(int64_t epoch) const;
  // How many indices this rank gets per epoch (equal on all ranks unless !even).
  int64_t per_rank() const { return per_rank_; }
  int64_t size() const { return size_; }

 private:
  int64_t size_, per_rank_;
  SamplerOptions options_;
};

// Number of batches for n samples: ceil(n / batch), floor when the short last batch is dropped.
inline int64_t batch_count(int64_t n, int64_t batch, LastBatch last) {
  return last == LastBatch::kDrop ? n / batch : (n + batch - 1) / batch;
}

// Real samples that n samples deliver in batches (padding not counted, a dropped batch left out).
inline int64_t delivered_samples(int64_t n, int64_t batch, LastBatch last) {
  return last == LastBatch::kDrop ? n / batch * batch : n;
}

}  // namespace faster::data

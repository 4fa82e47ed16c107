// Sampler implementation: a Fisher-Yates shuffle from a 64-bit generator seeded by (seed, epoch),
// so every rank computes the same permutation without communicating.
#include "faster/data/loader/sampler.h"

#include <numeric>
#include <random>

#include "faster/core/error.h"

namespace faster::data {

Sampler::Sampler(int64_t size, SamplerOptions options) : size_(size), options_(options) {
  if (options.world < 1 || options.rank < 0 || options.rank >= options.world)
    FASTER_THROW("sampler: rank ", options.rank, " is not in [0, world=", options.world, ")");
  if (size <= 0) FASTER_THROW("sampler: the dataset is empty");
  if (options.repetitions < 0)
    FASTER_THROW("sampler: ", options.repetitions, " repetitions (0: none, or at least 1)");
  if (options.repetitions > 0) {
    per_rank_ = size / 256 * 256 / options.world;  // RASampler's num_selected_samples
    if (per_rank_ == 0)
      FASTER_THROW(
          "the repeated-augmentation sampler keeps floor(images / 256) * 256 / ranks "
          "images per rank, as torchvision's RASampler does: ",
          size, " images over ", options.world, " rank(s) leave none");
  } else if (!options.even)
    per_rank_ = (size - options.rank + options.world - 1) / options.world;
  else
    per_rank_ =
        options.drop_tail ? size / options.world : (size + options.world - 1) / options.world;
  // An uneven split (evaluation) may leave a rank nothing: it then scores nothing, and the job's
  // sums count the others'.  Training shards must not be empty.
  if (per_rank_ == 0 && options.even)
    FASTER_THROW("sampler: ", size, " samples cannot be split over ", options.world, " ranks");
}

std::vector<int64_t> Sampler::indices(int64_t epoch) const {
  std::vector<int64_t> perm(size_);
  std::iota(perm.begin(), perm.end(), 0);
  if (options_.shuffle) {
    std::mt19937_64 gen(options_.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch));
    for (int64_t i = size_ - 1; i > 0; --i) {
      std::uniform_int_distribution<int64_t> pick(0, i);
      std::swap(perm[i], perm[pick(gen)]);
    }
  }
  std::vector<int64_t> mine;
  mine.reserve(per_rank_);
  if (const int64_t reps = options_.repetitions; reps > 0) {
    // The permutation's samples repeated reps times in a row (wrapped around past the end, to
    // even the ranks), rank::world of that; the draw tells a sample's repetitions apart.
    for (int64_t k = 0; k < per_rank_; ++k) {
      const int64_t at = (options_.rank + k * options_.world) % (size_ * reps);
      mine.push_back(perm[at / reps] + at % reps * size_);
    }
    return mine;
  }
  const int64_t total = options_.even ? per_rank_ * options_.world : size_;
  for (int64_t i = size_; i < total; ++i) perm.push_back(perm[i - size_]);  // wrap-around padding
  for (int64_t i = options_.rank; i < total; i += options_.world) mine.push_back(perm[i]);
  return mine;
}

}  // namespace faster::data

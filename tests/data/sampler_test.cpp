// The sampler: every sample exactly once per epoch across ranks, equal counts per rank, a new
// order every epoch, the same order on every rank for the same seed.
#include <gtest/gtest.h>

#include <set>

#include "faster/core/error.h"
#include "faster/data/loader/sampler.h"

namespace faster::data {
namespace {

std::vector<int64_t> all_ranks(int64_t n, int world, int64_t epoch, bool drop_tail) {
  std::vector<int64_t> all;
  for (int r = 0; r < world; ++r) {
    Sampler s(n, {r, world, 7, true, drop_tail});
    auto part = s.indices(epoch);
    EXPECT_EQ(int64_t(part.size()), s.per_rank());
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

TEST(Sampler, CoversEverySampleOncePerEpochAcrossRanks) {
  for (int world : {1, 2, 3, 4}) {
    const int64_t n = 1200;  // divisible by every world size above
    for (int64_t epoch : {0, 1, 5}) {
      auto all = all_ranks(n, world, epoch, false);
      ASSERT_EQ(int64_t(all.size()), n);
      std::set<int64_t> unique(all.begin(), all.end());
      EXPECT_EQ(int64_t(unique.size()), n) << "world " << world;
      EXPECT_EQ(*unique.begin(), 0);
      EXPECT_EQ(*unique.rbegin(), n - 1);
    }
  }
}

TEST(Sampler, PadsOrDropsWhenNotDivisible) {
  const int64_t n = 1001;
  auto padded = all_ranks(n, 4, 3, false);  // 251 per rank: 3 samples seen twice
  EXPECT_EQ(padded.size(), 1004u);
  EXPECT_EQ(std::set<int64_t>(padded.begin(), padded.end()).size(), 1001u);
  auto dropped = all_ranks(n, 4, 3, true);  // 250 per rank: 1 sample left out, none repeated
  EXPECT_EQ(dropped.size(), 1000u);
  EXPECT_EQ(std::set<int64_t>(dropped.begin(), dropped.end()).size(), 1000u);
}

TEST(Sampler, NewOrderEachEpochSameForSameSeed) {
  Sampler a(500, {0, 1, 3, true, false}), b(500, {0, 1, 3, true, false}),
      c(500, {0, 1, 4, true, false});
  EXPECT_EQ(a.indices(2), b.indices(2));
  EXPECT_NE(a.indices(2), a.indices(3));
  EXPECT_NE(a.indices(2), c.indices(2));
  Sampler plain(5, {0, 1, 3, false, false});
  EXPECT_EQ(plain.indices(9), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

// torchvision's RASampler (references/classification/sampler.py), restated over faster's
// permutation: each sample repeated reps times in a row, wrapped to total = ceil(n * reps / world) *
// world, rank::world of that, the first floor(n // 256 * 256 / world).
std::vector<int64_t> ra_reference(int64_t n, int rank, int world, int reps,
                                  const std::vector<int64_t>& perm) {
  std::vector<int64_t> repeated;
  for (int64_t i : perm)
    for (int r = 0; r < reps; ++r) repeated.push_back(i + r * n);  // the draw of repetition r
  const int64_t num_samples = (n * reps + world - 1) / world, total = num_samples * world;
  const auto base = static_cast<int64_t>(repeated.size());
  for (int64_t i = 0; i < total - base; ++i) repeated.push_back(repeated[i]);
  std::vector<int64_t> mine;
  for (int64_t i = rank; i < total; i += world) mine.push_back(repeated[i]);
  mine.resize(static_cast<size_t>(n / 256 * 256 / world));
  return mine;
}

TEST(Sampler, RepeatedAugmentationIsTorchvisionsRASampler) {
  for (int64_t n : {256, 1000, 2561})
    for (int world : {1, 3, 8})
      for (int reps : {1, 3, 4}) {
        const auto perm = Sampler(n, {0, 1, 7, true, false}).indices(2);
        std::set<int64_t> images;
        for (int rank = 0; rank < world; ++rank) {
          SamplerOptions o{rank, world, 7, true, false};
          o.repetitions = reps;
          const Sampler s(n, o);
          const auto got = s.indices(2);
          EXPECT_EQ(got, ra_reference(n, rank, world, reps, perm))
              << n << " images, rank " << rank << " of " << world << ", " << reps << " reps";
          EXPECT_EQ(s.per_rank(), n / 256 * 256 / world);
          EXPECT_EQ(std::set<int64_t>(got.begin(), got.end()).size(), got.size())
              << "a draw twice on one rank";
          for (int64_t d : got) images.insert(d % n);
        }
        // The epoch holds about n / reps distinct images, each in up to reps crops.
        const int64_t kept = n / 256 * 256 / world * world;
        EXPECT_GE(static_cast<int64_t>(images.size()), kept / reps) << n << " " << world;
        EXPECT_LE(static_cast<int64_t>(images.size()), kept / reps + world + 1) << n << " " << world;
      }
}

TEST(Sampler, RejectsBadSettings) {
  EXPECT_THROW(Sampler(10, {2, 2, 0, true, false}), Error);
  EXPECT_THROW(Sampler(10, {0, 0, 0, true, false}), Error);
  EXPECT_THROW(Sampler(0, {0, 1, 0, true, false}), Error);
  EXPECT_THROW(Sampler(3, {0, 4, 0, true, true}), Error);
  // The repeated-augmentation sampler keeps whole 256s per rank: 300 images on 2 ranks keep 128
  // each, 255 images keep none (torchvision's RASampler would yield an empty epoch).
  SamplerOptions ra{0, 2, 0, true, false};
  ra.repetitions = 3;
  EXPECT_EQ(Sampler(300, ra).per_rank(), 128);
  EXPECT_THROW(Sampler(255, ra), Error);
  ra.repetitions = -1;
  EXPECT_THROW(Sampler(300, ra), Error);
  // Evaluation's uneven split may leave a rank nothing (3 images on 4 ranks): rank 3 scores none,
  // the others one each; training shards may not be empty.
  for (int rank = 0; rank < 4; ++rank) {
    const Sampler s(3, {rank, 4, 0, false, false, /*even=*/false});
    EXPECT_EQ(s.per_rank(), rank < 3 ? 1 : 0) << rank;
    EXPECT_EQ(s.indices(0).size(), static_cast<size_t>(s.per_rank())) << rank;
  }
}

}  // namespace
}  // namespace faster::data

// --cpu-share: what the flag accepts, where `auto` settles on a simulated pipeline whose CPU
// threads sustain a known share, and which images the CPU takes for a share.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "faster/core/error.h"
#include "faster/data/loader/cpu_share.h"

namespace faster::data {
namespace {

TEST(CpuShare, ParsesNumbersAndAuto) {
  EXPECT_EQ(parse_cpu_share("0.4"), (CpuShare{0.4, false}));
  EXPECT_EQ(parse_cpu_share("0"), (CpuShare{0.0, false}));
  EXPECT_EQ(parse_cpu_share("1"), (CpuShare{1.0, false}));
  EXPECT_EQ(parse_cpu_share("auto"), (CpuShare{kAutoShareStart, true}));
  for (const CpuShare& s : {CpuShare{0.4, false}, CpuShare{kAutoShareStart, true}})
    EXPECT_EQ(parse_cpu_share(to_string(s)), s) << to_string(s);
}

TEST(CpuShare, RefusesWhatIsNotAShare) {
  const auto message = [](const std::string& text) {
    try {
      parse_cpu_share(text);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("1.5"), "--cpu-share must be between 0 and 1 (got 1.5)");
  EXPECT_EQ(message("-0.1"), "--cpu-share must be between 0 and 1 (got -0.1)");
  for (const char* text : {"", "x", "0.3x", "Auto", "0.3 0.4"})
    EXPECT_EQ(
        message(text),
        std::string("--cpu-share must be auto or a number between 0 and 1 (got '") + text + "')");
  EXPECT_NE(message("nan"), "accepted");
}

TEST(CpuShare, EachStepFollowsTheRule) {
  EXPECT_DOUBLE_EQ(adapt_cpu_share(0.5, kAutoShareLead - 1, true), 0.5 - kAutoShareDown);
  EXPECT_DOUBLE_EQ(adapt_cpu_share(0.5, 0, false), 0.5 - kAutoShareDown);
  EXPECT_DOUBLE_EQ(adapt_cpu_share(0.5, kAutoShareLead, true), 0.5 + kAutoShareUp);
  EXPECT_DOUBLE_EQ(adapt_cpu_share(0.5, kAutoShareLead, false), 0.5);
  EXPECT_DOUBLE_EQ(adapt_cpu_share(0.01, 0, false), 0.0);
  EXPECT_DOUBLE_EQ(adapt_cpu_share(0.999, 9, true), 1.0);
}

// A pipeline in ticks of one consumed batch: the CPU threads have `budget` ms of work per tick;
// a batch costs them `cpu_ms` per image they decode and `handover_ms` per image they hand to the
// GPU; the ring holds `slots` finished batches.  Returns the mean share and the fraction of ticks
// the consumer found no finished batch, over the second half of `ticks`.
struct Settled {
  double share, starved;
};
Settled simulate(double start, double budget, int ticks) {
  constexpr int kBatch = 256, kSlots = 12;
  constexpr double kCpuMs = 1.5, kHandoverMs = 0.05;
  double share = start, finished = 0, share_sum = 0;
  int starved = 0;
  for (int t = 0; t < ticks; ++t) {
    const double cost = kBatch * (share * kCpuMs + (1 - share) * kHandoverMs);
    finished = std::min<double>(kSlots, finished + budget / cost);
    share = adapt_cpu_share(share, static_cast<int>(finished), finished >= kSlots);
    const bool late = finished < 1;
    if (t >= ticks / 2) share_sum += share, starved += late;
    if (!late) finished -= 1;
  }
  const double n = ticks - ticks / 2;
  return {share_sum / n, starved / n};
}

TEST(CpuShare, AutoSettlesJustUnderWhatTheCpuSustains) {
  for (double sustained : {0.3, 0.6, 0.9}) {
    // The budget that sustains exactly this share of the images on the CPU.
    const double budget = 256 * (sustained * 1.5 + (1 - sustained) * 0.05);
    for (double start : {0.0, kAutoShareStart, 1.0}) {
      const Settled s = simulate(start, budget, 4000);
      EXPECT_NEAR(s.share, sustained, 0.01) << "sustained " << sustained << ", from " << start;
      EXPECT_LT(s.starved, 0.01) << "sustained " << sustained << ", from " << start;
    }
  }
  // A CPU that sustains every image takes them all; one that sustains none gives them all back.
  EXPECT_GT(simulate(kAutoShareStart, 256 * 1.6, 2000).share, 0.99);
  EXPECT_LT(simulate(kAutoShareStart, 256 * 0.04, 2000).share, 0.01);
}

// The cost estimate follows what libjpeg does for a crop: the entropy-coded bytes down to its last
// row, plus its pixels; a crop at the top of the file costs less than the same one at the bottom.
TEST(CpuShare, CostGrowsWithTheRowsDecodedAndThePixels) {
  const double top = cpu_decode_cost(100000, 400, 100, 10000);
  const double bottom = cpu_decode_cost(100000, 400, 400, 10000);
  EXPECT_LT(top, bottom);
  EXPECT_NEAR(bottom - top, cpu_decode_cost(100000, 400, 300, 0), 1e-6);  // linear in the rows
  EXPECT_LT(cpu_decode_cost(100000, 400, 400, 10000), cpu_decode_cost(100000, 400, 400, 20000));
  EXPECT_LT(cpu_decode_cost(50000, 400, 400, 0), cpu_decode_cost(100000, 400, 400, 0));
  EXPECT_DOUBLE_EQ(cpu_decode_cost(100000, 400, 900, 0), cpu_decode_cost(100000, 400, 400, 0));
}

// Offered costs from a skewed (log-normal) distribution in random order, the CPU takes the share
// asked for (within 0.01 over 20,000 images, after 1,000 to settle), and the cheapest: their mean
// cost within 1 % of the mean of the cheapest share of all costs (a pick regardless of cost would
// be 1.3-2.7x that here), at most 6 % of them above the share's quantile.  At 0 it takes none and
// at 1 all, from the first image.
TEST(CpuShare, CheapestShareTakesTheShareOfLowestCosts) {
  std::mt19937 rng(7);
  std::lognormal_distribution<double> cost(13.5, 0.5);  // about 0.7 ms, spread as JPEG sizes are
  const auto mean = [](auto begin, auto end) {
    return std::accumulate(begin, end, 0.0) / static_cast<double>(end - begin);
  };
  for (double share : {0.1, 0.4, 0.75}) {
    CheapestShare pick;
    std::vector<double> all, taken;
    for (int i = 0; i < 21000; ++i) {
      const double c = cost(rng);
      const bool t = pick.take(c, share);
      if (i < 1000) continue;
      all.push_back(c);
      if (t) taken.push_back(c);
    }
    EXPECT_NEAR(double(taken.size()) / all.size(), share, 0.01) << "share " << share;
    std::sort(all.begin(), all.end());
    const auto cut = all.begin() + static_cast<ptrdiff_t>(share * all.size());
    EXPECT_NEAR(mean(taken.begin(), taken.end()) / mean(all.begin(), cut), 1.0, 0.01)
        << "share " << share;
    const auto above =
        std::count_if(taken.begin(), taken.end(), [&](double c) { return c > *cut; });
    EXPECT_LT(double(above) / taken.size(), 0.06) << "share " << share;
    std::printf("share %.2f: taken %.4f, mean cost %.4f of the cheapest's, %.1f %% above\n", share,
                double(taken.size()) / all.size(),
                mean(taken.begin(), taken.end()) / mean(all.begin(), cut),
                100.0 * above / taken.size());
  }
  CheapestShare none, every;
  for (int i = 0; i < 100; ++i) {
    const double c = cost(rng);
    EXPECT_FALSE(none.take(c, 0.0));
    EXPECT_TRUE(every.take(c, 1.0));
  }
}

}  // namespace
}  // namespace faster::data

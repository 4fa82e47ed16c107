// The parallel loop every layer uses (core/parallel.h): each index once, errors stop the others.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "faster/core/parallel.h"

namespace faster {
namespace {

TEST(Parallel, VisitsEveryIndexOnceAndRethrowsTheFirstError) {
  std::vector<std::atomic<int>> hits(1000);
  parallel_for(4, 1000, [&](int worker, int64_t i) {
    ASSERT_LT(worker, 4);
    ++hits[static_cast<size_t>(i)];
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  std::atomic<int> calls{0};
  EXPECT_THROW(parallel_for(3, 100000,
                            [&](int, int64_t i) {
                              ++calls;
                              if (i == 10) throw std::runtime_error("boom");
                            }),
               std::runtime_error);
  EXPECT_LT(calls.load(), 100000);  // the others stopped taking work
}

TEST(Parallel, WorkerCountStaysWithinItemsAndRequest) {
  EXPECT_EQ(worker_count(4, 100), 4);
  EXPECT_EQ(worker_count(4, 2), 2);
  EXPECT_EQ(worker_count(4, 0), 1);
  EXPECT_EQ(worker_count(0, 1000000), default_workers());
}

}  // namespace
}  // namespace faster

// The parallel loop every layer uses (core/parallel.h): each index once, errors stop the others.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
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
  // Whichever worker takes index 10 throws.  Every later index first waits for that throw (so
  // no worker runs through the range while the thrower sits descheduled, as on a loaded 2-core
  // machine once), then takes a millisecond: running out the remaining items would take the
  // other two workers 50 s, so a count below the items means they stopped taking work.
  std::atomic<int> calls{0};
  std::atomic<bool> thrown{false};
  EXPECT_THROW(parallel_for(3, 100000,
                            [&](int, int64_t i) {
                              ++calls;
                              if (i == 10) {
                                thrown = true;
                                throw std::runtime_error("boom");
                              }
                              if (i < 10) return;
                              while (!thrown) std::this_thread::yield();
                              std::this_thread::sleep_for(std::chrono::milliseconds(1));
                            }),
               std::runtime_error);
  EXPECT_LT(calls.load(), 100000);
}

TEST(Parallel, WorkerCountStaysWithinItemsAndRequest) {
  EXPECT_EQ(worker_count(4, 100), 4);
  EXPECT_EQ(worker_count(4, 2), 2);
  EXPECT_EQ(worker_count(4, 0), 1);
  EXPECT_EQ(worker_count(0, 1000000), default_workers());
}

}  // namespace
}  // namespace faster

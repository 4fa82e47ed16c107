// The process clock: it counts from before the test body and advances with the wall clock.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "faster/core/process_clock.h"

namespace faster {
namespace {

TEST(ProcessClock, CountsFromTheProcessStartAndAdvancesWithTheWallClock) {
  const double a = process_seconds();
  EXPECT_GT(a, 0.0);
  EXPECT_LT(a, 24 * 3600.0);  // this test binary did not start yesterday
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double b = process_seconds();
  // The start is read in clock ticks (10 ms); the elapsed time is exact.
  EXPECT_NEAR(b - a, 0.2, 0.05);
}

}  // namespace
}  // namespace faster

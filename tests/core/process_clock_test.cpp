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
  const auto before = std::chrono::steady_clock::now();
  const double a2 = process_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double b = process_seconds();
  const double bracket =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
  // The start is read in clock ticks (10 ms), but the difference of two readings is exact: at
  // least the sleep, at most the steady clock's bracket around both (a loaded machine may
  // oversleep; that is no error of the clock).
  EXPECT_GE(a2, a);
  EXPECT_GE(b - a2, 0.2 - 1e-3);
  EXPECT_LE(b - a2, bracket + 1e-3);
}

}  // namespace
}  // namespace faster

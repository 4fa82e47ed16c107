// Progress display: rates stay readable and true at every scale, slow ones included.
#include <gtest/gtest.h>

#include "faster/core/progress.h"

namespace faster {
namespace {

TEST(Progress, RatesBelowOnePerSecondAreNotShownAsZero) {
  EXPECT_EQ(format_count(0.35), "0.35");
  EXPECT_EQ(format_count(0.052), "0.052");
  EXPECT_EQ(format_count(2.5), "2.5");
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(15), "15");
  EXPECT_EQ(format_count(1944), "1944");
  EXPECT_EQ(format_count(12345), "12.3k");
  EXPECT_EQ(format_count(2.5e6), "2.50M");
}

TEST(Progress, DurationsReadAsTime) {
  EXPECT_EQ(format_duration(4.24), "4.2s");
  EXPECT_EQ(format_duration(83), "1m23s");
  EXPECT_EQ(format_duration(7300), "2h01m");
}

}  // namespace
}  // namespace faster

// Learning-rate and resolution schedules against their formulas at chosen steps and epochs.
#include <gtest/gtest.h>

#include <cmath>

#include "faster/core/error.h"
#include "faster/train/schedule.h"

namespace faster::train {
namespace {

constexpr double kPi = 3.14159265358979323846;

TEST(LrSchedule, WarmupIsLinearPerStepThenCosineReachesMinAtTheLastStep) {
  LrSchedule s;
  s.warmup_epochs = 2, s.warmup_start = 0.1, s.decay = LrDecay::kCosine, s.min_lr = 0.01;
  const int64_t per_epoch = 10;
  const int epochs = 6;  // 60 steps: 20 of warm-up, then 40 of cosine
  EXPECT_DOUBLE_EQ(lr_factor(s, 0, per_epoch, epochs), 0.1);
  EXPECT_DOUBLE_EQ(lr_factor(s, 5, per_epoch, epochs), 0.1 + 0.9 * 5 / 20);
  EXPECT_DOUBLE_EQ(lr_factor(s, 19, per_epoch, epochs), 0.1 + 0.9 * 19 / 20);
  EXPECT_DOUBLE_EQ(lr_factor(s, 20, per_epoch, epochs), 1.0);
  const double t = (35.0 - 20) / 39;  // steps 20..59 map to t in [0, 1]
  EXPECT_NEAR(lr_factor(s, 35, per_epoch, epochs), 0.01 + 0.99 * 0.5 * (1 + std::cos(kPi * t)),
              1e-12);
  EXPECT_NEAR(lr_factor(s, 59, per_epoch, epochs), 0.01, 1e-12);
}

// The speedrun recipe's triangle: linear up from warmup_start, linear down to min_lr at the last
// step.
TEST(LrSchedule, LinearDecayIsATriangleEndingAtMinLr) {
  LrSchedule s;
  s.warmup_epochs = 2, s.warmup_start = 0.2, s.decay = LrDecay::kLinear, s.min_lr = 0.05;
  const int64_t per_epoch = 10;
  const int epochs = 10;  // 100 steps: 20 up, then 80 down (steps 20..99)
  EXPECT_DOUBLE_EQ(lr_factor(s, 0, per_epoch, epochs), 0.2);
  EXPECT_DOUBLE_EQ(lr_factor(s, 10, per_epoch, epochs), 0.6);
  EXPECT_DOUBLE_EQ(lr_factor(s, 20, per_epoch, epochs), 1.0);
  EXPECT_NEAR(lr_factor(s, 59, per_epoch, epochs), 1.0 - 0.95 * 39 / 79, 1e-12);
  EXPECT_NEAR(lr_factor(s, 99, per_epoch, epochs), 0.05, 1e-12);
  EXPECT_NEAR(lr_factor(s, 120, per_epoch, epochs), 0.05, 1e-12);  // past the end: stays
  LrSchedule none;  // no warm-up: the first step is the peak
  none.decay = LrDecay::kLinear;
  EXPECT_DOUBLE_EQ(lr_factor(none, 0, 4, 2), 1.0);
  EXPECT_NEAR(lr_factor(none, 7, 4, 2), 0.0, 1e-12);
}

TEST(LrSchedule, StepDecayMultipliesAtItsEpochsAndConstantStays) {
  LrSchedule s;
  s.decay = LrDecay::kStep, s.step_epochs = {2, 4}, s.step_gamma = 0.1;
  EXPECT_DOUBLE_EQ(lr_factor(s, 19, 10, 6), 1.0);     // epoch 1
  EXPECT_DOUBLE_EQ(lr_factor(s, 20, 10, 6), 0.1);     // epoch 2
  EXPECT_NEAR(lr_factor(s, 45, 10, 6), 0.01, 1e-15);  // epoch 4
  LrSchedule c;
  EXPECT_DOUBLE_EQ(lr_factor(c, 0, 10, 6), 1.0);
  EXPECT_DOUBLE_EQ(lr_factor(c, 59, 10, 6), 1.0);
}

TEST(LrSchedule, RefusesValuesOutOfRange) {
  LrSchedule s;
  s.warmup_epochs = 7;
  EXPECT_THROW(validate(s, 6), Error);
  s = {};
  s.warmup_start = -0.1;
  EXPECT_THROW(validate(s, 6), Error);
  s = {};
  s.decay = LrDecay::kStep;
  EXPECT_THROW(validate(s, 6), Error);  // no steps
  s.step_epochs = {6};
  EXPECT_THROW(validate(s, 6), Error);  // after the last epoch
  s.step_epochs = {3};
  EXPECT_NO_THROW(validate(s, 6));
}

TEST(ResSchedule, RampsLinearlyRoundedDownToTheStep) {
  ResSchedule r;
  r.res = 160, r.end_res = 192, r.ramp_start = 2, r.ramp_end = 6, r.step = 32;
  EXPECT_EQ(res_at(r, 0), 160);
  EXPECT_EQ(res_at(r, 2), 160);
  EXPECT_EQ(res_at(r, 5), 160);  // 160 + 3/4 * 32 = 184, rounded down to 160
  EXPECT_EQ(res_at(r, 6), 192);
  EXPECT_EQ(res_at(r, 9), 192);
  r.step = 8;
  EXPECT_EQ(res_at(r, 4), 176);  // 160 + 2/4 * 32
  EXPECT_EQ(res_at(r, 5), 184);
  EXPECT_EQ(max_res(r), 192);
  ResSchedule fixed;
  fixed.res = 224;
  EXPECT_EQ(res_at(fixed, 10), 224);
  r.ramp_end = 12;
  EXPECT_THROW(validate(r, 10), Error);  // the ramp ends after the run
  ResSchedule as_stored{0};
  EXPECT_NO_THROW(validate(as_stored, 3));
  EXPECT_EQ(res_at(as_stored, 1), 0);
}

TEST(EpochRange, ParsesAColonPairAndRefusesTheRest) {
  int a = 0, b = 0;
  parse_epoch_range("3:7", "--res-ramp", a, b);
  EXPECT_EQ(a, 3);
  EXPECT_EQ(b, 7);
  for (const char* bad : {"3", "3:", ":7", "a:b", "3:7x", ""})
    EXPECT_THROW(parse_epoch_range(bad, "--res-ramp", a, b), Error) << bad;
}

}  // namespace
}  // namespace faster::train

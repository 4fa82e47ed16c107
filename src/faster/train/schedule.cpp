// Learning-rate and resolution schedules.
#include "faster/train/schedule.h"

#include <algorithm>
#include <cmath>

#include "faster/core/error.h"

namespace faster::train {
namespace {
constexpr double kPi = 3.14159265358979323846;
}

namespace {
// torchvision's SequentialLR of a warm-up and its main scheduler, at epoch `epoch`.
double torchvision_factor(const LrSchedule& s, int64_t epoch, int epochs) {
  const auto warmup = static_cast<int64_t>(s.warmup_epochs);
  if (epoch < warmup)
    return s.warmup_shape == WarmupShape::kConstant
               ? s.warmup_start
               : s.warmup_start + (1.0 - s.warmup_start) * static_cast<double>(epoch) / warmup;
  const int64_t e = epoch - warmup;  // the main scheduler's own epoch
  switch (s.decay) {
    case LrDecay::kCosine:
      return s.min_lr + (1.0 - s.min_lr) * 0.5 *
                            (1.0 + std::cos(kPi * static_cast<double>(e) /
                                            std::max<int64_t>(1, epochs - warmup)));
    case LrDecay::kStep:
      return std::pow(s.step_gamma, static_cast<double>(e / std::max(1, s.step_size)));
    case LrDecay::kExponential:
      return std::pow(s.step_gamma, static_cast<double>(e));
    case LrDecay::kConstant:
    case LrDecay::kLinear:
      break;
  }
  return 1.0;
}
}  // namespace

double lr_factor(const LrSchedule& s, int64_t step, int64_t steps_per_epoch, int epochs) {
  if (s.per_epoch)
    return torchvision_factor(s, step / std::max<int64_t>(1, steps_per_epoch), epochs);
  const int64_t total = steps_per_epoch * epochs;
  const int64_t warmup = static_cast<int64_t>(std::llround(s.warmup_epochs * steps_per_epoch));
  if (step < warmup) {
    const double t = static_cast<double>(step) / warmup;
    return s.warmup_start + (1.0 - s.warmup_start) * t;
  }
  switch (s.decay) {
    case LrDecay::kCosine: {
      const int64_t span = std::max<int64_t>(1, total - 1 - warmup);
      const double t = std::min(1.0, static_cast<double>(step - warmup) / span);
      return s.min_lr + (1.0 - s.min_lr) * 0.5 * (1.0 + std::cos(kPi * t));
    }
    case LrDecay::kLinear: {
      const int64_t span = std::max<int64_t>(1, total - 1 - warmup);
      const double t = std::min(1.0, static_cast<double>(step - warmup) / span);
      return 1.0 + (s.min_lr - 1.0) * t;
    }
    case LrDecay::kStep: {
      const int64_t epoch = step / std::max<int64_t>(1, steps_per_epoch);
      double f = 1.0;
      for (int e : s.step_epochs)
        if (epoch >= e) f *= s.step_gamma;
      return f;
    }
    case LrDecay::kExponential: {
      const int64_t epoch = step / std::max<int64_t>(1, steps_per_epoch);
      return std::pow(s.step_gamma, static_cast<double>(epoch));
    }
    case LrDecay::kConstant:
      break;
  }
  return 1.0;
}

void validate(const LrSchedule& s, int epochs) {
  if (!(s.warmup_epochs >= 0) || s.warmup_epochs > epochs)
    FASTER_USAGE_ERROR("--warmup-epochs must be between 0 and --epochs ", epochs, " (got ",
                       s.warmup_epochs, ")");
  if (!(s.warmup_start >= 0 && s.warmup_start <= 1))
    FASTER_USAGE_ERROR("--warmup-start must be between 0 and 1 (got ", s.warmup_start, ")");
  if (!(s.min_lr >= 0 && s.min_lr <= 1))
    FASTER_USAGE_ERROR("--min-lr must be between 0 and 1, a fraction of --lr (got ", s.min_lr, ")");
  if (!(s.step_gamma > 0 && s.step_gamma <= 1))
    FASTER_USAGE_ERROR("--lr-gamma must be in (0, 1] (got ", s.step_gamma, ")");
  if (s.per_epoch) {
    if (s.warmup_epochs != std::floor(s.warmup_epochs))
      FASTER_USAGE_ERROR("--lr-warmup-epochs counts whole epochs with --lr-scheduler (got ",
                         s.warmup_epochs, ")");
    if (s.decay == LrDecay::kStep) check_range("--lr-step-size", s.step_size, 1, 1 << 20);
    return;
  }
  if (s.decay == LrDecay::kStep && s.step_epochs.empty())
    FASTER_USAGE_ERROR("--lr-decay step needs --lr-steps (epochs at which the rate drops)");
  for (int e : s.step_epochs)  // 0-based here, 1-based on the command line
    if (e < 1 || e >= epochs)
      FASTER_USAGE_ERROR("--lr-steps: epoch ", e + 1, " is outside 2..", epochs);
}

int res_at(const ResSchedule& s, int epoch) {
  if (s.res == 0 || s.end_res == 0 || epoch <= s.ramp_start) return s.res;
  if (epoch >= s.ramp_end) return s.end_res;
  const double t = static_cast<double>(epoch - s.ramp_start) / (s.ramp_end - s.ramp_start);
  const int r = static_cast<int>(s.res + t * (s.end_res - s.res));
  const int rounded = r / s.step * s.step;
  return std::clamp(rounded, std::min(s.res, s.end_res), std::max(s.res, s.end_res));
}

int max_res(const ResSchedule& s) {
  return std::max(s.res, s.end_res);
}

namespace {
[[noreturn]] void bad_res_side(int res) {
  FASTER_USAGE_ERROR("--res must be 0 (a small dataset as stored) or between 8 and 4096 (got ", res,
                     ")");
}
}  // namespace

void check_res_side(int res) {
  if (res != 0 && (res < 8 || res > 4096)) bad_res_side(res);
}

void validate(const ResSchedule& s, int epochs) {
  check_range("--res-step", s.step, 1, 512);
  if (s.res == 0 && s.end_res == 0) return;  // as stored
  if (s.res == 0) bad_res_side(s.res);       // a ramp needs a side to start from
  check_res_side(s.res);
  if (s.end_res == 0) return;
  check_range("--res-end", s.end_res, 8, 4096);
  if (s.ramp_start < 0 || s.ramp_end <= s.ramp_start || s.ramp_end >= epochs)
    FASTER_USAGE_ERROR("--res-ramp ", s.ramp_start + 1, ":", s.ramp_end + 1,
                       " must name two epochs 1 <= A < B <= --epochs ", epochs);
}

void parse_epoch_range(const std::string& text, const std::string& flag, int& a, int& b) {
  const auto colon = text.find(':');
  size_t used_a = 0, used_b = 0;
  try {
    if (colon == std::string::npos) throw std::invalid_argument(text);
    a = std::stoi(text.substr(0, colon), &used_a);
    b = std::stoi(text.substr(colon + 1), &used_b);
  } catch (const std::exception&) {
    used_a = 0;
  }
  if (colon == std::string::npos || used_a != colon || used_b != text.size() - colon - 1)
    FASTER_USAGE_ERROR(flag, " must be two epochs A:B (got '", text, "')");
}

}  // namespace faster::train

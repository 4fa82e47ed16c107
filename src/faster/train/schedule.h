// What changes over a run, as plain functions of where the run is: the learning rate per step
// (linear warm-up, then constant, cosine, linear or step decay) and the training resolution per
// epoch (FixRes: train lower than test; progressive resizing: a linear ramp, FFCV-style).  No
// LibTorch: the trainer asks for a number and hands it to the step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "faster/core/enum_names.h"

namespace faster::train {

enum class LrDecay { kConstant, kCosine, kStep, kLinear, kExponential };
inline constexpr EnumName<LrDecay> kLrDecayNames[] = {{"constant", LrDecay::kConstant},
                                                      {"cosine", LrDecay::kCosine},
                                                      {"step", LrDecay::kStep},
                                                      {"linear", LrDecay::kLinear},
                                                      {"exponential", LrDecay::kExponential}};
// torchvision's --lr-scheduler names: its schedulers, stepped once per epoch.
inline constexpr EnumName<LrDecay> kTorchvisionSchedulers[] = {
    {"steplr", LrDecay::kStep},
    {"cosineannealinglr", LrDecay::kCosine},
    {"exponentiallr", LrDecay::kExponential}};

// The warm-up's shape: linear from warmup_start to 1, or constant at warmup_start (torchvision's
// --lr-warmup-method linear|constant).
enum class WarmupShape { kLinear, kConstant };
inline constexpr EnumName<WarmupShape> kWarmupShapeNames[] = {{"linear", WarmupShape::kLinear},
                                                              {"constant", WarmupShape::kConstant}};

// The rate relative to its peak (SgdOptions::lr): 1 after the warm-up until a decay starts.
struct LrSchedule {
  double warmup_epochs = 0;   // linear from warmup_start to 1, per step
  double warmup_start = 0.0;  // fraction of lr the first step uses (torchvision: 0.01)
  LrDecay decay = LrDecay::kConstant;
  double min_lr = 0.0;           // cosine, linear: the rate at the end of the run, of the peak
  std::vector<int> step_epochs;  // step: epochs (0-based) at which the rate is multiplied...
  double step_gamma = 0.1;       // ...by this (exponential: every epoch)
  // torchvision's schedulers (--lr-scheduler): the rate changes once per epoch, the warm-up over
  // whole epochs (linear: LinearLR from warmup_start, constant: ConstantLR at it), then StepLR
  // (x step_gamma every step_size epochs), CosineAnnealingLR (T_max = epochs - warm-up, to min_lr)
  // or ExponentialLR (x step_gamma each epoch), counted from the warm-up's end as SequentialLR
  // does.
  bool per_epoch = false;
  WarmupShape warmup_shape = WarmupShape::kLinear;
  int step_size = 30;
};

// The rate of step `step` (0-based, global) of a run of `epochs` epochs of `steps_per_epoch` steps,
// as a fraction of the peak.  Cosine and linear decay over the steps after the warm-up down to
// min_lr at the last step (linear after a linear warm-up: a triangular, one-cycle schedule);
// per_epoch: torchvision's, per epoch.
double lr_factor(const LrSchedule& s, int64_t step, int64_t steps_per_epoch, int epochs);

// Throws faster::Error naming the flag when a value is out of range.
void validate(const LrSchedule& s, int epochs);

struct ResSchedule {
  int res = 224;                     // training resolution (random-resized-crop side); 0: as stored
  int end_res = 0;                   // 0: fixed at res; else ramped linearly from res to end_res...
  int ramp_start = 0, ramp_end = 0;  // ...between these epochs (0-based, inclusive)
  int step = 32;                     // ramped values are rounded down to a multiple of this
};

// The training resolution of `epoch` (0-based).
int res_at(const ResSchedule& s, int epoch);
// The largest resolution of the run (buffers are sized for it).
int max_res(const ResSchedule& s);
void validate(const ResSchedule& s, int epochs);
// --res: 0 (as stored) or a side from 8 to 4096.
void check_res_side(int res);

// Parses "A:B" (epochs, 0-based, inclusive) into a and b; throws naming `flag`.
void parse_epoch_range(const std::string& text, const std::string& flag, int& a, int& b);

}  // namespace faster::train

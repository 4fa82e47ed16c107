// torchvision's references' checkpoints (--output-dir): after every epoch, DIR/model_{epoch}.pth
// and DIR/checkpoint.pth, a dict torchvision's train.py --resume reads as it reads its own:
// "model" (the state_dict, torchvision's names), "optimizer" (torch.optim.SGD's state_dict: the
// momentum buffers, and the parameter groups train.py's set_weight_decay makes of the run's
// decays), "lr_scheduler" (the state_dict of the scheduler train.py builds: its main scheduler, in
// a SequentialLR behind the warm-up), "epoch", "args" (train.py's arguments as a dict), and
// "model_ema" (AveragedModel's state_dict) and "scaler" (GradScaler's) where the run has them.
#pragma once

#include <string>

#include "faster/train/options.h"
#include "faster/train/stepper.h"

namespace faster::train {

// What --output-dir needs of the run: a torchvision model and optimizer (ResNets, SGD without
// Muon) and torchvision's per-epoch schedule (--lr-scheduler, or --recipe torchvision).  Usage
// errors otherwise.
void check_output_dir_options(const TrainOptions& o);

// Writes the checkpoint of the run after `epoch` (0-based) into o.output_dir, both names, each
// atomically.  `steps_per_epoch`: the schedule's.
void save_torchvision_checkpoint(const TrainOptions& o, int epoch, int64_t steps_per_epoch,
                                 const torch::nn::Module& model, Stepper& stepper);

}  // namespace faster::train

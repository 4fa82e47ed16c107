// The one-off costs of a fresh process's first step, paid early: the CUDA context, cuDNN's and
// cuBLAS's libraries and handles, the autocast and loss kernels (warm_up_device), and the kernels
// of the model's own first step (warm_up_model).  The trainer runs both on threads of their own
// while it reads the data and builds the run (TrainOptions::prewarm); neither draws random numbers.
#pragma once

#include <torch/types.h>

#include <future>
#include <string>
#include <vector>

#include "faster/models/model.h"
#include "faster/train/amp.h"
#include "faster/train/options.h"

namespace faster::train {

// A small convolution, pooling and GELU (on a second thread), and a linear layer and
// cross-entropy, forward and backward, at `precision` (channels-last when asked) on `device`, on
// made-up values (no random generator is drawn on); waits for the device and the thread.  Nothing
// is kept.
void warm_up_device(torch::Device device, Precision precision, bool channels_last);

// A fresh process pays for each kernel of its first step once, process-wide (CUDA loads modules
// lazily; cuDNN's engines build or compile theirs): SpeedNet's first step took 0.4-0.5 s on an
// H100, its convolutions' first calls 0.15-0.4 s in turn, and about 0.06 s again on a thread of
// their own afterwards (whose cuDNN plans, per thread in LibTorch, were new but whose kernels were
// loaded; BENCHMARKS.md, issue 13).  This pays it on a thread of its own, on a stream of its own,
// while the trainer builds the rest: `model`, a copy built like the run's (on `device`, in its
// memory format; plain BatchNorm where the run's is synchronised, so that it makes no collective
// call), is initialised from made-up images where the run's is from the data (o.whiten; those
// parameters then frozen with o.freeze_whitening), trains one step (forward, backward and o.sgd's
// optimizer, Muon included) on made-up images of `input_shape` [N, C, H, W] and tests them once,
// at o.precision, in o.channels_last's format; no random generator is drawn on.  Nothing is kept:
// the copy is released when the thread ends.  The future holds "" or what went wrong (an
// optimisation's failure, for the trainer to report and go on).  Get it before capturing a CUDA
// graph (a capture refuses other threads' work).
std::future<std::string> warm_up_model(models::Model model, std::vector<int64_t> input_shape,
                                       const TrainOptions& o, torch::Device device);

}  // namespace faster::train

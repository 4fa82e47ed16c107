// The one-off costs of a fresh process's first step, paid early: the CUDA context, cuDNN's and
// cuBLAS's libraries and handles, the autocast and loss kernels.  The trainer runs it while another
// thread reads the data (TrainOptions::prewarm), so the two overlap.
#pragma once

#include <torch/types.h>

#include "faster/train/amp.h"

namespace faster::train {

// A small convolution, pooling and GELU (on a second thread), and a linear layer and
// cross-entropy, forward and backward, at `precision` (channels-last when asked) on `device`;
// waits for the device and the thread.  Nothing is kept.
void warm_up_device(torch::Device device, Precision precision, bool channels_last);

}  // namespace faster::train

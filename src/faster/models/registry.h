// The model registry: every architecture `faster train --model` knows, built from one options
// struct into one Model type (models/model.h).  Adding an architecture adds a row to the table in
// registry.cpp; nothing above models/ names a concrete network.
#pragma once

#include <string>
#include <vector>

#include "faster/models/model.h"
#include "faster/models/sync_batchnorm.h"

namespace faster::models {

struct ModelOptions {
  std::string name = "thinnet";  // one of model_names()
  int in_channels = 1;
  int classes = 10;
  Norm norm = Norm::kBatch;
  AllReduceSum sync_all_reduce;  // Norm::kSync: sums a tensor over the ranks of the job
  // ThinNet: duplicate convs per stage and filters per stage; ReLU + BatchNorm as faster's fused
  // CUDA kernels where they apply.
  std::vector<int> blocks{3, 3, 2};
  std::vector<int> filters{32, 64, 128};
  bool fused = true;
};

// Builds the named architecture; throws faster::Error naming the problem (unknown name, options
// the architecture cannot take).
Model make_model(const ModelOptions& options);

// The registered names, in the order `--help` lists them.
std::vector<std::string> model_names();

// The smallest image side the architecture accepts (ThinNet's unpadded convs shrink the map).
int min_input_size(const ModelOptions& options);

}  // namespace faster::models

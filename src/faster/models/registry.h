// The model registry: every architecture `faster train --model` knows, built from one options
// struct into one Model type (models/model.h).  Adding an architecture adds a row to the table in
// registry.cpp; nothing above models/ names a concrete network.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "faster/data/augment/store.h"
#include "faster/models/model.h"
#include "faster/models/sync_batchnorm.h"

namespace faster::models {

struct ModelOptions {
  std::string name = "thinnet";  // one of model_names()
  int in_channels = 1;
  int classes = 10;
  Norm norm = Norm::kBatch;
  AllReduceSum sync_all_reduce;  // Norm::kSync: sums a tensor over the ranks of the job
  // ThinNet: duplicate convs per stage and filters per stage.  SpeedNet: filters per stage and
  // convs after each stage's pooled entry conv (default_widths gives each architecture's own).
  std::vector<int> blocks{3, 3, 2};
  std::vector<int> filters{32, 64, 128};
  // Normalization and activation as one fused kernel where it applies: ThinNet's ReLU -> BatchNorm
  // and SpeedNet's BatchNorm -> GELU as faster's CUDA kernels (norm_activation.h), ResNets'
  // BatchNorm -> (+ residual) -> ReLU as cuDNN's (batchnorm_relu.h, fp16 channels-last training).
  bool fused = true;
  // ResNets: zero the last BatchNorm weight of each residual block (each starts as the identity).
  bool zero_init_residual = false;
  // SpeedNet: the directions of 3x3 patches its stem keeps (2 channels each); 0 = all 9 x C.
  int stem_dims = 0;
};

// Builds the named architecture; throws faster::Error naming the problem (unknown name, options
// the architecture cannot take).
Model make_model(const ModelOptions& options);

// The registered names, in the order `--help` lists them.
std::vector<std::string> model_names();

// What a training run needs to know of an architecture without building it.
enum class Family {
  kThinNet,   // the seed's small network: takes the data's channels, x / 255
  kResNet,    // torchvision's ResNets: RGB input (a gray image repeated), ImageNet mean and std
  kSpeedNet,  // the speedrun recipe's network: the data's channels, x / 255
};
Family family(const std::string& name);
// The channels the architecture takes for data of `data_channels` channels.
int input_channels(const std::string& name, int data_channels);
// Whether a GPU step may hand the architecture its batches in autocast's type (normalized straight
// into fp16/bf16) rather than float32: ResNets, unless FASTER_RESNET_LEVERS leaves "input" out
// (resnet.h); the others keep float32 input, their numerics as measured.
bool takes_autocast_input(const std::string& name);

// An architecture's own blocks and filters (what --blocks and --filters default to).
struct Widths {
  std::vector<int> blocks, filters;
};
Widths default_widths(const std::string& name);

// Initialises the layers of `model` that start from the data (SpeedNet's whitening stem) from
// `images` ([n, C, H, W] float, normalized as the model sees them) and returns the parameters it
// set; none when the architecture has no such layer.
std::vector<torch::Tensor> init_from_data(Model& model, const torch::Tensor& images);

// Host memory a CPU training step takes: a fixed part and a part per image at 224x224 (it scales
// with the pixels), measured (models/registry.cpp); 0 and 0 where the model is small enough never
// to matter.
struct CpuTrainMemory {
  int64_t fixed_bytes = 0, per_image_224_bytes = 0;
};
CpuTrainMemory cpu_train_memory(const std::string& name);

// The smallest image side the architecture accepts (ThinNet's unpadded convs shrink the map).
int min_input_size(const ModelOptions& options);

// Which registered architecture a state_dict belongs to, from its tensors' names and shapes: the
// name, classes, input channels and (ThinNet, SpeedNet) blocks, filters and norm.  Throws
// faster::Error (prefixed by `where`) when it matches none.
ModelOptions infer_model_options(const std::map<std::string, std::vector<int64_t>>& shapes,
                                 const std::string& where);

// How pixels are scaled before they reach the architecture: (x / 255 - mean) / std.  The seed's
// ThinNet takes x / 255 (mean 0, std 1); ResNets take torchvision's ImageNet mean and std, as
// torchvision's weights expect.
data::Normalization input_normalization(const std::string& name);

}  // namespace faster::models

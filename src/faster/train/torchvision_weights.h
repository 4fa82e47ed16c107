// torchvision's pretrained weights by name, as its train.py's --weights takes them
// ("ResNet50_Weights.IMAGENET1K_V2", the enum's DEFAULT, or a bare tag of --model's enum), read
// from the cache torchvision downloads them into (torch.hub's: $TORCH_HOME/hub/checkpoints,
// TORCH_HOME defaulting to $XDG_CACHE_HOME/torch, then ~/.cache/torch).  faster downloads nothing:
// a name whose file is not there is an error that says where it goes and where it comes from.  No
// LibTorch.
#pragma once

#include <optional>
#include <string>

namespace faster::train {

struct TorchvisionWeights {
  std::string name;  // "ResNet50_Weights.IMAGENET1K_V2" (DEFAULT resolved)
  std::string arch;  // faster's and torchvision's model name, "resnet50"
  std::string file;  // the file torchvision saves, "resnet50-11ad3fa6.pth"
  int resize = 256;  // the evaluation's shorter side (its transforms' resize_size; crop 224)
  int crop = 224;
  std::string url() const;  // where torchvision downloads it from
};

// Whether --weights' `text` names torchvision's weights: of the form X_Weights.Y, and no file of
// that name is there.
bool is_weights_name(const std::string& text);

// The weights named (X_Weights.Y, Y a tag or DEFAULT); a UsageError naming the known tags of X,
// or the known enums, where there is no such entry.
TorchvisionWeights torchvision_weights(const std::string& name);

// --weights as torchvision's weights enums read a string (WeightsEnum.verify): a bare tag
// ("IMAGENET1K_V2", "DEFAULT": capitals, digits and underscores, no file of that name) is a tag of
// `model`'s enum, "ResNet50_Weights.IMAGENET1K_V2"; anything else is returned as it is.  A bare tag
// with no model, or a model faster knows no weights of, is a UsageError.
std::string qualify_weights_tag(const std::string& weights, const std::string& model);

// torch.hub's folder of downloaded weights, from the environment as torch.hub.get_dir() reads it.
std::string torch_hub_checkpoints();

// The cached file of `w`; a NotFoundError saying where to put it and how, where it is missing.
std::string cached_weights_file(const TorchvisionWeights& w);

}  // namespace faster::train

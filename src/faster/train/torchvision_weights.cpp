// torchvision's weights enums for the ResNet family (torchvision/models/resnet.py), and torch.hub's
// cache of them.
#include "faster/train/torchvision_weights.h"

#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

#include "faster/core/error.h"

namespace faster::train {
namespace {
namespace fs = std::filesystem;

struct Entry {
  const char* enum_name;  // "ResNet50_Weights"
  const char* tag;        // "IMAGENET1K_V1"
  const char* arch;
  const char* file;
  int resize;
  bool is_default;
};

// Each entry's file and evaluation resize as torchvision's enums hold them (tests/train check
// them against torchvision's own).
constexpr Entry kWeights[] = {
    {"ResNet18_Weights", "IMAGENET1K_V1", "resnet18", "resnet18-f37072fd.pth", 256, true},
    {"ResNet34_Weights", "IMAGENET1K_V1", "resnet34", "resnet34-b627a593.pth", 256, true},
    {"ResNet50_Weights", "IMAGENET1K_V1", "resnet50", "resnet50-0676ba61.pth", 256, false},
    {"ResNet50_Weights", "IMAGENET1K_V2", "resnet50", "resnet50-11ad3fa6.pth", 232, true},
    {"ResNet101_Weights", "IMAGENET1K_V1", "resnet101", "resnet101-63fe2227.pth", 256, false},
    {"ResNet101_Weights", "IMAGENET1K_V2", "resnet101", "resnet101-cd907fc2.pth", 232, true},
    {"ResNet152_Weights", "IMAGENET1K_V1", "resnet152", "resnet152-394f9c45.pth", 256, false},
    {"ResNet152_Weights", "IMAGENET1K_V2", "resnet152", "resnet152-f82ba261.pth", 232, true},
    {"ResNeXt50_32X4D_Weights", "IMAGENET1K_V1", "resnext50_32x4d", "resnext50_32x4d-7cdf4587.pth",
     256, false},
    {"ResNeXt50_32X4D_Weights", "IMAGENET1K_V2", "resnext50_32x4d", "resnext50_32x4d-1a0047aa.pth",
     232, true},
    {"ResNeXt101_32X8D_Weights", "IMAGENET1K_V1", "resnext101_32x8d",
     "resnext101_32x8d-8ba56ff5.pth", 256, false},
    {"ResNeXt101_32X8D_Weights", "IMAGENET1K_V2", "resnext101_32x8d",
     "resnext101_32x8d-110c445d.pth", 232, true},
    {"ResNeXt101_64X4D_Weights", "IMAGENET1K_V1", "resnext101_64x4d",
     "resnext101_64x4d-173b62eb.pth", 232, true},
    {"Wide_ResNet50_2_Weights", "IMAGENET1K_V1", "wide_resnet50_2", "wide_resnet50_2-95faca4d.pth",
     256, false},
    {"Wide_ResNet50_2_Weights", "IMAGENET1K_V2", "wide_resnet50_2", "wide_resnet50_2-9ba9bcbe.pth",
     232, true},
    {"Wide_ResNet101_2_Weights", "IMAGENET1K_V1", "wide_resnet101_2",
     "wide_resnet101_2-32ee1156.pth", 256, false},
    {"Wide_ResNet101_2_Weights", "IMAGENET1K_V2", "wide_resnet101_2",
     "wide_resnet101_2-d733dc28.pth", 232, true},
};

// The distinct values of one field of the table, in its order, joined by ", " (a model's entries
// stand together).
std::string listed(const char* Entry::*field) {
  std::string out;
  std::string_view last;
  for (const auto& e : kWeights) {
    if (e.*field == last) continue;
    out += (out.empty() ? "" : ", ") + std::string(e.*field);
    last = e.*field;
  }
  return out;
}

// An environment variable's value, or nullopt where it is unset or empty.
std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

// os.path.expanduser of a leading "~".
std::string expand_user(const std::string& path) {
  if (path.empty() || path[0] != '~' || (path.size() > 1 && path[1] != '/')) return path;
  return env("HOME").value_or("") + path.substr(1);
}

}  // namespace

std::string TorchvisionWeights::url() const {
  return "https://download.pytorch.org/models/" + file;
}

bool is_weights_name(const std::string& text) {
  const auto dot = text.find('.');
  const std::string suffix = "_Weights";
  std::error_code ec;
  return dot != std::string::npos && dot > suffix.size() &&
         text.compare(dot - suffix.size(), suffix.size(), suffix) == 0 &&
         text.find('/') == std::string::npos && dot + 1 < text.size() && !fs::exists(text, ec);
}

TorchvisionWeights torchvision_weights(const std::string& name) {
  const auto dot = name.find('.');
  const std::string enum_name = name.substr(0, dot);
  const std::string tag = dot == std::string::npos ? "" : name.substr(dot + 1);
  std::string tags;
  for (const auto& e : kWeights) {
    if (enum_name != e.enum_name) continue;
    if (tag == e.tag || (tag == "DEFAULT" && e.is_default))
      return {enum_name + "." + e.tag, e.arch, e.file, e.resize, 224};
    tags += std::string(tags.empty() ? "" : ", ") + e.tag;
  }
  if (!tags.empty())
    FASTER_USAGE_ERROR("--weights ", name, ": ", enum_name, " has ", tags, " (or DEFAULT)");
  FASTER_USAGE_ERROR("--weights ", name, ": not torchvision weights faster knows (the ResNet ",
                     "family's: ", listed(&Entry::enum_name), ")");
}

std::string qualify_weights_tag(const std::string& weights, const std::string& model) {
  const bool bare =
      !weights.empty() &&
      weights.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
  std::error_code ec;
  if (!bare || fs::exists(weights, ec)) return weights;
  if (model.empty())
    FASTER_USAGE_ERROR("--weights ", weights, ": a tag of a model's weights needs --model (",
                       "--model resnet50 --weights ", weights, " is ResNet50_Weights.", weights,
                       ")");
  for (const auto& e : kWeights)
    if (model == e.arch) return std::string(e.enum_name) + "." + weights;
  FASTER_USAGE_ERROR("--weights ", weights, ": faster knows no torchvision weights of ", model,
                     " (the ResNet family's: ", listed(&Entry::arch), ")");
}

std::string torch_hub_checkpoints() {
  std::string home;
  if (auto t = env("TORCH_HOME"))
    home = expand_user(*t);
  else
    home = (fs::path(expand_user(env("XDG_CACHE_HOME").value_or("~/.cache"))) / "torch").string();
  return (fs::path(home) / "hub" / "checkpoints").string();
}

std::string cached_weights_file(const TorchvisionWeights& w) {
  const fs::path path = fs::path(torch_hub_checkpoints()) / w.file;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw NotFoundError(
        w.name + " is not in torch's cache of downloaded weights (" + path.string() +
            " does not exist); faster downloads nothing",
        "fetch it there once: curl -L --create-dirs -o " + path.string() + " " + w.url() +
            " (or python3 -c \"import torchvision; torchvision.models.get_weight('" + w.name +
            "').get_state_dict(progress=True)\")");
  return path.string();
}

}  // namespace faster::train

// The registry's table: one row per architecture.
#include "faster/models/registry.h"

#include <functional>

#include "faster/core/error.h"
#include "faster/models/resnet.h"
#include "faster/models/speednet.h"
#include "faster/models/thinnet.h"

namespace faster::models {
namespace {

ThinNetOptions thinnet_options(const ModelOptions& o) {
  ThinNetOptions t;
  t.in_channels = o.in_channels;
  t.classes = o.classes;
  t.filters = o.filters;
  t.blocks = o.blocks;
  t.norm = o.norm;
  t.sync_all_reduce = o.sync_all_reduce;
  t.fused = o.fused;
  return t;
}

SpeedNetOptions speednet_options(const ModelOptions& o) {
  if (o.norm != Norm::kBatch) FASTER_THROW("speednet: only BatchNorm (--norm batch, no --sync-bn)");
  SpeedNetOptions s;
  s.in_channels = o.in_channels;
  s.classes = o.classes;
  s.filters = o.filters;
  s.blocks = o.blocks;
  s.stem_dims = o.stem_dims;
  s.fused = o.fused;
  return s;
}

Model make_resnet(const std::string& name, const ModelOptions& o) {
  ResNetOptions r;
  r.arch = name;
  r.classes = o.classes;
  r.in_channels = o.in_channels;
  r.zero_init_residual = o.zero_init_residual;
  r.norm = o.norm;
  r.sync_all_reduce = o.sync_all_reduce;
  r.fused = o.fused;
  return Model(ResNet(r).ptr(), name);
}

struct Entry {
  std::string name;
  Family family;
  std::function<Model(const ModelOptions&)> make;
  std::function<int(const ModelOptions&)> min_input_size;
  data::Normalization norm;
  Widths widths;
  // Returns the parameters it set; may be empty.
  std::function<std::vector<torch::Tensor>(Model&, const torch::Tensor&)> init_from_data;
  CpuTrainMemory cpu_memory;
};

// Peak resident memory of `faster train --device cpu --res 224` (fp32, LibTorch 1.13, 2 cores),
// batch 4 against 32: the slope per image and what is left at batch 0, loader ring included.
CpuTrainMemory resnet_cpu_memory(const std::string& name) {
  constexpr int64_t MB = 1 << 20;
  if (name == "resnet18") return {600 * MB, 31 * MB};    // 722 MB at 4, 1,583 MB at 32
  if (name == "resnet34") return {980 * MB, 33 * MB};    // 1,108 MB, 2,021 MB
  if (name == "resnet50") return {1120 * MB, 108 * MB};  // 1,552 MB, 4,565 MB
  // The same way, 2026-12-07 (a folder of 32 `faster synth` JPEGs, one epoch):
  if (name == "resnet101") return {1722 * MB, 144 * MB};         // 2,297 MB, 6,323 MB
  if (name == "resnet152") return {2188 * MB, 207 * MB};         // 3,014 MB, 8,800 MB
  if (name == "resnext50_32x4d") return {1132 * MB, 129 * MB};   // 1,650 MB, 5,276 MB
  if (name == "resnext101_32x8d") return {3099 * MB, 301 * MB};  // 4,302 MB, 12,723 MB
  if (name == "resnext101_64x4d") return {2767 * MB, 329 * MB};  // 4,083 MB, 13,298 MB
  if (name == "wide_resnet50_2") return {2684 * MB, 119 * MB};   // 3,161 MB, 6,501 MB
  if (name == "wide_resnet101_2") return {4519 * MB, 191 * MB};  // 5,283 MB, 10,630 MB
  return {};
}

data::Normalization unit_normalization() {
  data::Normalization n;
  for (int c = 0; c < 3; ++c) n.mean[c] = 0, n.std[c] = 1;
  return n;
}

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = [] {
    std::vector<Entry> e = {
        {"thinnet",
         Family::kThinNet,
         [](const ModelOptions& o) { return Model(ThinNet(thinnet_options(o)).ptr(), "thinnet"); },
         [](const ModelOptions& o) { return thinnet_options(o).min_input_size(); },
         unit_normalization(),
         {{3, 3, 2}, {32, 64, 128}},
         {},
         {}},
        {"speednet",
         Family::kSpeedNet,
         [](const ModelOptions& o) {
           return Model(SpeedNet(speednet_options(o)).ptr(), "speednet");
         },
         [](const ModelOptions& o) { return speednet_options(o).min_input_size(); },
         unit_normalization(),
         {{1, 1, 1}, {64, 128, 256}},
         [](Model& m, const torch::Tensor& images) {
           auto& net = dynamic_cast<SpeedNetImpl&>(m.module());
           net.init_whitening(images);
           return net.stem()->parameters();
         },
         {}},
    };
    // Any side works (the last stage's map pools to 1x1); below 32 px it is 1x1 from layer3 on.
    for (const auto& name : resnet_names())
      e.push_back({name,
                   Family::kResNet,
                   [name](const ModelOptions& o) { return make_resnet(name, o); },
                   [](const ModelOptions&) { return 1; },
                   data::Normalization{},
                   {},
                   {},
                   resnet_cpu_memory(name)});
    return e;
  }();
  return entries;
}

const Entry& find(const std::string& name) {
  for (const auto& e : registry())
    if (name == e.name) return e;
  std::string names;
  for (const auto& n : model_names()) names += (names.empty() ? "" : ", ") + n;
  FASTER_USAGE_ERROR("--model '", name, "' is not a model faster knows (", names, ")");
}

}  // namespace

Model make_model(const ModelOptions& options) {
  return find(options.name).make(options);
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& e : registry()) names.push_back(e.name);
  return names;
}

Widths default_widths(const std::string& name) {
  return find(name).widths;
}

std::vector<torch::Tensor> init_from_data(Model& model, const torch::Tensor& images) {
  const auto& init = find(model.name()).init_from_data;
  return init ? init(model, images) : std::vector<torch::Tensor>{};
}

CpuTrainMemory cpu_train_memory(const std::string& name) {
  return find(name).cpu_memory;
}

int min_input_size(const ModelOptions& options) {
  return find(options.name).min_input_size(options);
}

Family family(const std::string& name) {
  return find(name).family;
}

int input_channels(const std::string& name, int data_channels) {
  return family(name) == Family::kResNet ? 3 : data_channels;
}

bool takes_autocast_input(const std::string& name) {
  return family(name) == Family::kResNet && resnet_lever("input");
}

data::Normalization input_normalization(const std::string& name) {
  return find(name).norm;
}

ModelOptions infer_model_options(const std::map<std::string, std::vector<int64_t>>& shapes,
                                 const std::string& where) {
  const auto shape = [&](const std::string& key) -> const std::vector<int64_t>& {
    static const std::vector<int64_t> none;
    auto it = shapes.find(key);
    return it == shapes.end() ? none : it->second;
  };
  ModelOptions o;
  const auto& fc = shape("fc.weight");
  if (fc.size() != 2) FASTER_THROW(where, ": no fc.weight of a classifier");
  o.classes = static_cast<int>(fc[0]);
  if (shape("conv1.weight").size() == 4 && shape("layer4.0.conv1.weight").size() == 4) {
    // torchvision's ResNets: Bottleneck blocks have a conv3, the layers' lengths tell the depth,
    // and the first 3x3's shape [width, width / groups, 3, 3] a ResNeXt's or wide ResNet's
    // groups and width per group (layer1's planes are 64: width = width_per_group x groups).
    std::array<int, 4> blocks{};
    for (int l = 0; l < 4; ++l)
      while (shapes.count("layer" + std::to_string(l + 1) + "." + std::to_string(blocks[l]) +
                          ".conv1.weight"))
        ++blocks[l];
    const bool bottleneck = shapes.count("layer1.0.conv3.weight") > 0;
    const auto& conv2 = shape("layer1.0.conv2.weight");
    const int width = conv2.size() == 4 ? static_cast<int>(conv2[0]) : 0;
    const int groups =
        conv2.size() == 4 && conv2[1] > 0 ? static_cast<int>(conv2[0] / conv2[1]) : 0;
    o.name = resnet_name_of(bottleneck, blocks, groups, groups > 0 ? width / groups : 0);
    if (o.name.empty())
      FASTER_THROW(where, ": a ResNet of blocks ", blocks[0], ",", blocks[1], ",", blocks[2], ",",
                   blocks[3], bottleneck ? " (Bottleneck" : " (BasicBlock",
                   bottleneck ? ", " + std::to_string(groups) + " groups of " +
                                    std::to_string(groups > 0 ? width / groups : 0) + ")"
                              : std::string(")"),
                   " is none of torchvision's that faster builds");
    o.in_channels = static_cast<int>(shape("conv1.weight")[1]);
    return o;
  }
  if (shape("features.0.0.weight").size() == 4) {
    // ThinNet: a run of convs with the same filter count is a stage (its entry conv + blocks).
    o.name = "thinnet";
    o.in_channels = static_cast<int>(shape("features.0.0.weight")[1]);
    o.filters.clear(), o.blocks.clear();
    for (int i = 0; shapes.count("features." + std::to_string(i) + ".0.weight"); ++i) {
      const int f = static_cast<int>(shape("features." + std::to_string(i) + ".0.weight")[0]);
      if (!o.filters.empty() && o.filters.back() == f)
        ++o.blocks.back();
      else
        o.filters.push_back(f), o.blocks.push_back(0);
    }
    o.norm = shapes.count("features.0.2.weight") ? Norm::kBatch : Norm::kNone;
    return o;
  }
  if (shape("stem.weight").size() == 4 && shape("stages.0.conv0.weight").size() == 4) {
    // SpeedNet: a stage's convs are conv0 (pooled entry) and conv1..conv<blocks>.
    o.name = "speednet";
    o.in_channels = static_cast<int>(shape("stem.weight")[1]);
    o.stem_dims = static_cast<int>(shape("stem.weight")[0] / 2);
    o.filters.clear(), o.blocks.clear();
    for (int i = 0; shapes.count("stages." + std::to_string(i) + ".conv0.weight"); ++i) {
      const auto stage = "stages." + std::to_string(i) + ".conv";
      o.filters.push_back(static_cast<int>(shape(stage + "0.weight")[0]));
      int b = 0;
      while (shapes.count(stage + std::to_string(b + 1) + ".weight")) ++b;
      o.blocks.push_back(b);
    }
    return o;
  }
  FASTER_THROW(where,
               ": its names match no model faster knows (torchvision's ResNets, ResNeXts and wide "
               "ResNets, ThinNet, SpeedNet)");
}

}  // namespace faster::models

// One type for every network faster trains: the step, CUDA graphs, DataParallel and DDP take a
// Model, whatever architecture the registry (models/registry.h) built.  Each architecture is a
// torch::nn::Cloneable module that also implements Classifier, so replicas made by clone() keep
// their forward.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <memory>
#include <string>

#include "faster/core/enum_names.h"
#include "faster/core/error.h"

namespace faster::models {

// Normalization after convolutions: BatchNorm2d, SyncBatchNorm over the ranks of a DDP job (same
// parameter names, models/sync_batchnorm.h) or none (ThinNet only).
enum class Norm { kBatch, kSync, kNone };
inline constexpr EnumName<Norm> kNormNames[] = {
    {"batch", Norm::kBatch}, {"sync", Norm::kSync}, {"none", Norm::kNone}};

// The one call the trainer makes on a network: images [N, C, H, W] -> logits [N, classes].
class Classifier {
 public:
  virtual ~Classifier() = default;
  virtual torch::Tensor forward(torch::Tensor x) = 0;
};

// A handle to a network (shared, like LibTorch's module holders): its module for parameters,
// buffers, train()/eval() and to(); its Classifier for forward.
class Model {
 public:
  Model() = default;
  // `module` must implement Classifier (every registered architecture does).
  Model(std::shared_ptr<torch::nn::Module> module, std::string name)
      : module_(std::move(module)), name_(std::move(name)) {
    classifier_ = dynamic_cast<Classifier*>(module_.get());
    FASTER_CHECK(classifier_ != nullptr, "model ", name_, " does not implement Classifier");
  }

  torch::Tensor forward(const torch::Tensor& x) const { return classifier_->forward(x); }
  torch::nn::Module& module() const { return *module_; }
  torch::nn::Module* operator->() const { return module_.get(); }
  const std::shared_ptr<torch::nn::Module>& ptr() const { return module_; }
  // The registry's name: "thinnet", "resnet50", ...
  const std::string& name() const { return name_; }
  explicit operator bool() const { return module_ != nullptr; }

 private:
  std::shared_ptr<torch::nn::Module> module_;
  Classifier* classifier_ = nullptr;
  std::string name_;
};

// The Classifier of any module a Model holds, or of a replica cloned from one.
inline Classifier& classifier_of(torch::nn::Module& module) {
  auto* c = dynamic_cast<Classifier*>(&module);
  FASTER_CHECK(c != nullptr, "module ", module.name(), " does not implement Classifier");
  return *c;
}

}  // namespace faster::models

// CUDA-graph capture of a training or evaluation step: with static shapes the whole step (forward,
// backward, optimizer) replays as one launch, removing per-kernel launch cost.  Implemented in
// step_graph_cuda.cpp for CUDA builds; step_graph_cpu.cpp says it is unavailable.
#pragma once

#include <torch/types.h>

#include <functional>
#include <memory>

namespace faster::train {

// A stream on which a graphed run does all its work (capture needs a non-default stream), made
// current for the scope's lifetime.  On CPU it does nothing.
class SideStreamScope {
 public:
  explicit SideStreamScope(torch::Device device);
  ~SideStreamScope();
  SideStreamScope(const SideStreamScope&) = delete;
  SideStreamScope& operator=(const SideStreamScope&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class StepGraph {
 public:
  StepGraph();
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  static bool available();
  // Records `step` (not executed); its tensors must stay alive and at the same addresses.
  void capture(const std::function<void()>& step);
  void replay();
  bool captured() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faster::train

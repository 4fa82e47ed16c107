// StepGraph for builds without CUDA: graphs are unavailable, and the CLI refuses the flag before
// anything reaches here.
#include "faster/core/error.h"
#include "faster/train/step_graph.h"

namespace faster::train {

struct SideStreamScope::Impl {};
SideStreamScope::SideStreamScope(torch::Device) {}
SideStreamScope::~SideStreamScope() = default;

struct StepGraph::Impl {};
StepGraph::StepGraph() = default;
StepGraph::~StepGraph() = default;
bool StepGraph::available() {
  return false;
}
void StepGraph::capture(const std::function<void()>&) {
  FASTER_THROW("CUDA graphs need a CUDA build of faster");
}
void StepGraph::replay() {
  FASTER_THROW("CUDA graphs need a CUDA build of faster");
}
bool StepGraph::captured() const {
  return false;
}

}  // namespace faster::train

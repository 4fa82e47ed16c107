// StepGraph on CUDA: at::cuda::CUDAGraph captured on the current (non-default) stream.
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>

#include "faster/core/error.h"
#include "faster/train/step_graph.h"

namespace faster::train {

namespace {
// Makes `waiter` wait for the work queued so far on `other` (device side, no host sync).
void wait_for(const c10::cuda::CUDAStream& waiter, const c10::cuda::CUDAStream& other) {
  at::cuda::CUDAEvent event;
  event.record(other);
  event.block(waiter);
}
}  // namespace

struct SideStreamScope::Impl {
  std::optional<c10::cuda::CUDAStreamGuard> guard;
};

SideStreamScope::SideStreamScope(torch::Device device) : impl_(std::make_unique<Impl>()) {
  if (!device.is_cuda()) return;
  auto stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
  // The side stream starts after everything already queued on the default stream.
  wait_for(stream, c10::cuda::getDefaultCUDAStream(device.index()));
  impl_->guard.emplace(stream);
}

SideStreamScope::~SideStreamScope() {
  if (!impl_->guard) return;
  auto side = impl_->guard->current_stream();
  auto original = impl_->guard->original_stream();
  impl_->guard.reset();
  wait_for(original, side);
}

struct StepGraph::Impl {
  at::cuda::CUDAGraph graph;
  bool captured = false;
};

StepGraph::StepGraph() : impl_(std::make_unique<Impl>()) {}
StepGraph::~StepGraph() = default;
bool StepGraph::available() {
  return true;
}

void StepGraph::capture(const std::function<void()>& step) {
  FASTER_CHECK(!impl_->captured, "graph captured twice");
  FASTER_CHECK(c10::cuda::getCurrentCUDAStream() != c10::cuda::getDefaultCUDAStream(),
               "capture needs a side stream (SideStreamScope)");
  // Thread-local capture: the loader's threads (nvJPEG stages, copies) keep using CUDA on their own
  // streams while the step is captured; only this thread's calls are part of the graph.
  impl_->graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
  try {
    step();
  } catch (...) {
    impl_->graph.capture_end();
    throw;
  }
  impl_->graph.capture_end();
  impl_->captured = true;
}

void StepGraph::replay() {
  impl_->graph.replay();
}
bool StepGraph::captured() const {
  return impl_->captured;
}

}  // namespace faster::train

// DeviceCopy with CUDA: host->device copies on a side stream, one event per ring slot.  The
// consumer's stream waits on the event (no host sync), and the slot's event tells when the pinned
// buffer may be refilled.
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <vector>

#include "faster/core/error.h"
#include "faster/data/loader/device_copy.h"

namespace faster::data {

struct DeviceCopy::Impl {
  torch::Device device;
  bool cuda;
  std::vector<at::cuda::CUDAEvent> done;  // per slot: the copy out of it has finished
  std::vector<bool> pending;
  c10::optional<c10::cuda::CUDAStream> stream;
};

DeviceCopy::DeviceCopy(torch::Device device, int slots)
    : impl_(new Impl{device, device.is_cuda(), {}, {}, c10::nullopt}) {
  if (!impl_->cuda) return;
  c10::cuda::CUDAGuard guard(device);
  impl_->stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
  impl_->done.resize(slots);
  impl_->pending.assign(slots, false);
}

DeviceCopy::~DeviceCopy() = default;

bool DeviceCopy::wants_pinned() const {
  return impl_->cuda;
}

torch::Tensor DeviceCopy::copy(const torch::Tensor& host, int slot) {
  if (!impl_->cuda) return host;
  c10::cuda::CUDAGuard guard(impl_->device);
  auto consumer = c10::cuda::getCurrentCUDAStream(impl_->device.index());
  // Allocated on the consumer's stream (where it will be used and freed); the side stream first
  // waits for the consumer's earlier work, since the caching allocator may hand back memory that
  // work still reads.
  auto out = torch::empty(host.sizes(), host.options().device(impl_->device).pinned_memory(false));
  at::cuda::CUDAEvent ready;
  ready.record(consumer);
  ready.block(*impl_->stream);
  {
    c10::cuda::CUDAStreamGuard side(*impl_->stream);
    out.copy_(host, /*non_blocking=*/true);
  }
  impl_->done[slot].record(*impl_->stream);
  impl_->pending[slot] = true;
  impl_->done[slot].block(consumer);
  return out;
}

void DeviceCopy::wait_slot(int slot) {
  if (!impl_->cuda || !impl_->pending[slot]) return;
  impl_->done[slot].synchronize();
  impl_->pending[slot] = false;
}

std::string DeviceCopy::describe() const {
  if (!impl_->cuda) return "host memory";
  return impl_->device.str() + ", side stream, pinned host ring";
}

}  // namespace faster::data

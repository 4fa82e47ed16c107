// DeviceCopy with CUDA: host->device copies on a side stream, one event per ring slot.  The
// consumer's stream waits on the event (no host sync), and the slot's event tells when the pinned
// buffer may be refilled.
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdlib>
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
  // Under trial (issue 35): FASTER_COPY_AFTER_CONSUMER=1 restores the earlier copy, allocated on
  // the consumer's stream and so started only after all the consumer's work queued before it.
  bool after_consumer = false;
};

DeviceCopy::DeviceCopy(torch::Device device, int slots)
    : impl_(new Impl{device, device.is_cuda(), {}, {}, c10::nullopt}) {
  if (!impl_->cuda) return;
  const char* after = std::getenv("FASTER_COPY_AFTER_CONSUMER");
  impl_->after_consumer = after && std::string(after) == "1";
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
  const auto device_options = host.options().device(impl_->device).pinned_memory(false);
  torch::Tensor out;
  if (impl_->after_consumer) {
    out = torch::empty(host.sizes(), device_options);
    at::cuda::CUDAEvent ready;
    ready.record(consumer);
    ready.block(*impl_->stream);
    c10::cuda::CUDAStreamGuard side(*impl_->stream);
    out.copy_(host, /*non_blocking=*/true);
  } else {
    // Allocated and written on the side stream, so the caching allocator hands it memory the side
    // stream's own earlier work has finished with: the copy waits for none of the consumer's work
    // and runs beside its steps.  Recorded on the consumer's stream, the memory goes back to the
    // side stream only once the consumer's work queued before it is freed has run.  (Allocated on
    // the consumer's stream instead, the copy had to wait for all the consumer's earlier work, and
    // next()'s wait for the slot before it with it: the host could not run over a step ahead.)
    c10::cuda::CUDAStreamGuard side(*impl_->stream);
    out = torch::empty(host.sizes(), device_options);
    out.copy_(host, /*non_blocking=*/true);
    out.record_stream(consumer);
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

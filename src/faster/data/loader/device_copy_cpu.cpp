// DeviceCopy without CUDA: batches stay in host memory.
#include "faster/data/loader/device_copy.h"

#include "faster/core/error.h"

namespace faster::data {

struct DeviceCopy::Impl {};

DeviceCopy::DeviceCopy(torch::Device device, int) {
  if (!device.is_cpu())
    FASTER_THROW("device ", device.str(), " requested, but this build of faster has no CUDA");
}
DeviceCopy::~DeviceCopy() = default;
bool DeviceCopy::wants_pinned() const {
  return false;
}
torch::Tensor DeviceCopy::copy(const torch::Tensor& host, int) {
  return host;
}
void DeviceCopy::wait_slot(int) {}
std::string DeviceCopy::describe() const {
  return "host memory (no GPU)";
}

}  // namespace faster::data

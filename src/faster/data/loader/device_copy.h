// Moving finished host batches to the device.  The CUDA build (device_copy_cuda.cpp) copies from
// pinned memory on a side stream and makes the consumer's stream wait on an event; the CPU build
// (device_copy_cpu.cpp) hands the host tensor over.  CMake picks one file: no #if in the loader.
#pragma once

#include <torch/torch.h>

#include <memory>

namespace faster::data {

class DeviceCopy {
 public:
  // `slots`: size of the host ring; each slot's copy is tracked so the slot is reused only after
  // the device has finished reading it.
  DeviceCopy(torch::Device device, int slots);
  ~DeviceCopy();
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;

  // Whether host buffers should be pinned (page-locked) for asynchronous copies.
  bool wants_pinned() const;
  // Starts copying `host` (held in ring slot `slot`) and returns the device tensor, usable on the
  // caller's current stream.  On the CPU it returns `host` itself.
  torch::Tensor copy(const torch::Tensor& host, int slot);
  // Blocks until the copy out of `slot` has finished reading host memory.
  void wait_slot(int slot);
  // A short description for reports: "cuda:0, side stream, pinned" or "host memory (no GPU)".
  std::string describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faster::data

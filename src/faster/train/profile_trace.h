// --profile: a Chrome trace (chrome://tracing, Perfetto, TensorBoard) of a few training steps.  On
// a GPU it holds the CUDA kernels (those replayed from a captured step graph too), their launches
// and LibTorch's operators, through LibTorch's Kineto profiler; on the CPU LibTorch's operators,
// through its legacy profiler (Kineto is not in every LibTorch).  scripts/profile_summary.py sums
// a trace's kernel time by kind and its gaps.
#pragma once

#include <memory>
#include <string>

#include <c10/core/Device.h>

namespace faster::train {

class ProfileTrace {
 public:
  // Starts recording; the trace goes to `path` (through a temporary file beside it) on stop().
  ProfileTrace(std::string path, c10::Device device);
  ~ProfileTrace();  // stops without writing, if stop() was not called
  ProfileTrace(const ProfileTrace&) = delete;
  ProfileTrace& operator=(const ProfileTrace&) = delete;

  // Waits for the device, stops recording and writes the trace.
  void stop();

 private:
  struct Legacy;
  std::string path_;
  c10::Device device_;
  std::unique_ptr<Legacy> legacy_;  // the CPU's recorder
  bool kineto_ = false;             // recording through Kineto
};

// The first of the `count` training steps of the last epoch a --profile trace holds: from the
// 21st on; in an epoch too short for that to be its middle, the steps about its middle.
int64_t profile_first_step(int64_t steps_per_epoch, int64_t count);

}  // namespace faster::train

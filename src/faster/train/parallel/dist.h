// The distributed engine of a DDP job: a c10d TCPStore rendezvous and a process group (NCCL on
// GPUs, Gloo on CPUs).  The c10d types stay inside dist*.cpp; callers see sums and broadcasts.
#pragma once

#include <torch/types.h>

#include <chrono>
#include <memory>

#include "faster/train/parallel/world.h"

namespace faster::train {

// An all-reduce in flight; wait() makes the caller's stream (or, for CPU tensors, the host) wait.
class PendingReduce {
 public:
  virtual ~PendingReduce() = default;
  virtual void wait() = 0;
};

class Dist {
 public:
  virtual ~Dist() = default;
  // Rendezvous of all ranks through a TCPStore on world.master_addr:master_port, then the group.
  static std::unique_ptr<Dist> connect(const WorldInfo& world, torch::Device device,
                                       std::chrono::milliseconds timeout);

  const WorldInfo& world() const { return world_; }
  virtual std::unique_ptr<PendingReduce> all_reduce_sum_async(torch::Tensor t) = 0;
  void all_reduce_sum(torch::Tensor t) { all_reduce_sum_async(std::move(t))->wait(); }
  virtual void broadcast_from_rank0(torch::Tensor t) = 0;
  virtual std::string backend() const = 0;

 protected:
  explicit Dist(WorldInfo world) : world_(std::move(world)) {}
  WorldInfo world_;
};

}  // namespace faster::train

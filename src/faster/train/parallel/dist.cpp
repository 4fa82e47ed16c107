// Dist: TCPStore rendezvous and the Gloo group (NCCL comes from dist_nccl_cuda.cpp).
#include "faster/train/parallel/dist.h"

#include <cstdlib>
#include <sstream>
#include <string>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "faster/core/error.h"
#include "faster/train/parallel/c10d_backend.h"

namespace faster::train {
namespace {

class PendingWork : public PendingReduce {
 public:
  explicit PendingWork(c10::intrusive_ptr<c10d::Work> work) : work_(std::move(work)) {}
  void wait() override { work_->wait(); }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
};

class C10dDist : public Dist {
 public:
  C10dDist(WorldInfo world, c10::intrusive_ptr<c10d::Store> store, C10dGroup group,
           std::string name)
      : Dist(std::move(world)),
        store_(std::move(store)),
        group_(std::move(group)),
        name_(std::move(name)) {}

  std::unique_ptr<PendingReduce> all_reduce_sum_async(torch::Tensor t) override {
    std::vector<torch::Tensor> ts{std::move(t)};
    c10d::AllreduceOptions o;
    o.reduceOp = c10d::ReduceOp::SUM;
    return std::make_unique<PendingWork>(group_->allreduce(ts, o));
  }

  void broadcast_from_rank0(torch::Tensor t) override {
    std::vector<torch::Tensor> ts{std::move(t)};
    c10d::BroadcastOptions o;
    o.rootRank = 0;
    group_->broadcast(ts, o)->wait();
  }

  std::string backend() const override { return name_; }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  C10dGroup group_;
  std::string name_;
};

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

// The rendezvous: rank 0 serves the store; a busy port or an unreachable master becomes one line.
c10::intrusive_ptr<c10d::Store> rendezvous(const WorldInfo& w, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(w.master_port);
  o.isServer = w.rank == 0;
  o.numWorkers = w.world;
  o.waitWorkers = true;
  o.timeout = timeout;
  try {
    return c10::make_intrusive<c10d::TCPStore>(w.master_addr, o);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    const std::string where = w.master_addr + ":" + std::to_string(w.master_port);
    if (what.find("in use") != std::string::npos || what.find("EADDRINUSE") != std::string::npos)
      throw Error("rank 0 cannot listen on " + where + ": the port is busy",
                  "set MASTER_PORT (or torchrun --master-port) to a free port");
    throw Error("rank " + std::to_string(w.rank) + " could not join the job at " + where +
                    " within " + std::to_string(timeout.count() / 1000) +
                    " s: " + what.substr(0, what.find('\n')),
                "check MASTER_ADDR/MASTER_PORT and that all " + std::to_string(w.world) +
                    " ranks were started");
  }
}

}  // namespace

std::unique_ptr<Dist> Dist::connect(const WorldInfo& w, torch::Device device,
                                    std::chrono::milliseconds timeout) {
  auto store = rendezvous(w, timeout);
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("faster", store);
  if (device.is_cuda()) {
    auto group = make_nccl_group(prefixed, w.rank, w.world, timeout);
    return std::make_unique<C10dDist>(w, store, group, "nccl");
  }
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  // GLOO_SOCKET_IFNAME names the network interfaces, comma-separated, as PyTorch reads it (its
  // bindings, not LibTorch's C++ group): a host whose name resolves to a loopback address would
  // otherwise offer that to its peers.
  const char* ifaces = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifaces && *ifaces) {
    std::stringstream list(ifaces);
    for (std::string iface; std::getline(list, iface, ',');) {
      if (iface.empty()) continue;
      try {
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(iface));
      } catch (const std::exception& e) {
        const std::string why = e.what();
        throw Error("GLOO_SOCKET_IFNAME: cannot use network interface " + iface + ": " +
                        why.substr(0, why.find('\n')),
                    "'ip -brief address' lists this host's interfaces and their addresses");
      }
    }
  }
  if (options->devices.empty())
    options->devices.push_back(is_loopback(w.master_addr)
                                   ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                   : c10d::ProcessGroupGloo::createDefaultDevice());
  options->threads = 2;
  C10dGroup group = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, w.rank, w.world, options);
  return std::make_unique<C10dDist>(w, store, group, "gloo");
}

}  // namespace faster::train

// Dist: TCPStore rendezvous and the Gloo group (NCCL comes from dist_nccl_cuda.cpp).
#include "faster/train/parallel/dist.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

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

std::string address(const WorldInfo& w) {
  return w.master_addr + ":" + std::to_string(w.master_port);
}

std::string seconds_text(std::chrono::milliseconds t) {
  return std::to_string(t.count() / 1000) + " s";
}

// Rank 0 serves the store, the others connect to it (retrying until `timeout`); then every rank
// counts itself in and waits until all have, within the same `timeout` from the start.  The store's
// own wait for its workers is not used: LibTorch 1.13's gives up at its timeout without an error,
// and Gloo then waited as long again before a bare "Socket Timeout".
c10::intrusive_ptr<c10d::Store> join_store(const WorldInfo& w, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string where = address(w);
  // torchrun's agent serves the store on MASTER_PORT itself when it says so: every rank is a
  // client then, with its keys under the restart's prefix, as PyTorch's env:// rendezvous does.
  const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  const bool agent_store = agent && std::string(agent) == "True";
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(w.master_port);
  o.isServer = w.rank == 0 && !agent_store;
  o.numWorkers = w.world;
  o.waitWorkers = false;
  o.timeout = timeout;
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(w.master_addr, o);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (what.find("in use") != std::string::npos || what.find("EADDRINUSE") != std::string::npos)
      throw Error("cannot listen on " + where + ": the port is busy",
                  "set MASTER_PORT (or torchrun --master-port) to a free port");
    throw Error("could not join the job at " + where + " within " + seconds_text(timeout) + ": " +
                    what.substr(0, what.find('\n')),
                "check MASTER_ADDR/MASTER_PORT and that all " + std::to_string(w.world) +
                    " ranks were started");
  }
  if (agent_store) {
    const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
    store = c10::make_intrusive<c10d::PrefixStore>(
        "/worker/attempt_" + std::string(attempt && *attempt ? attempt : "0"), store);
  }
  const std::string key = "faster/joined";
  for (int64_t joined = store->add(key, 1); joined < w.world; joined = store->add(key, 0)) {
    // At the deadline one more look: a rank that came just now is not left waiting alone.
    if (std::chrono::steady_clock::now() > deadline && (joined = store->add(key, 0)) < w.world)
      throw Error(std::to_string(joined) + " of " + std::to_string(w.world) +
                      " ranks joined the job at " + where + " within " + seconds_text(timeout),
                  "start all " + std::to_string(w.world) +
                      " ranks (a rank that did not come says why in its own output), or give "
                      "them more time (--dist-timeout)");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return store;
}

// The rendezvous, bounded: a rank whose store connection gets no answer (another program holds
// MASTER_PORT on rank 0's host) would wait in LibTorch's read for ever, so the join runs on its own
// thread and this one gives up a little after the timeout with one line (the thread is left
// blocked; the process ends with the error).
c10::intrusive_ptr<c10d::Store> rendezvous(const WorldInfo& w, std::chrono::milliseconds timeout) {
  struct Join {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    c10::intrusive_ptr<c10d::Store> store;
    std::exception_ptr error;
  };
  auto join = std::make_shared<Join>();
  std::thread([join, w, timeout] {
    c10::intrusive_ptr<c10d::Store> store;
    std::exception_ptr error;
    try {
      store = join_store(w, timeout);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(join->mutex);
    join->store = std::move(store);
    join->error = error;
    join->done = true;
    join->done_cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(join->mutex);
  if (!join->done_cv.wait_for(lock, timeout + std::chrono::seconds(5), [&] { return join->done; }))
    throw Error("could not join the job at " + address(w) + " within " + seconds_text(timeout) +
                    ": no answer from the store there",
                "is another program listening on MASTER_PORT on rank 0's host? Check "
                "MASTER_ADDR/MASTER_PORT and that rank 0 was started");
  if (join->error) std::rethrow_exception(join->error);
  return join->store;
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

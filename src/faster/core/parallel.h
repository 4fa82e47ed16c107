// A parallel loop for every layer (tools, the page-cache prefetch, DataParallel's replicas):
// `workers` threads take indices from a shared counter (so a slow item never holds up a fixed
// share of the work), and the first error stops everyone.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "faster/core/error.h"
#include "faster/core/flag_rules.h"

namespace faster {

// Threads to use when the user did not say: every core.
inline int default_workers() {
  return std::max(1u, std::thread::hardware_concurrency());
}

// --workers as the tools take it: 0 (every core) up to kMaxWorkers; a usage error otherwise.
inline void check_workers(int requested) {
  check_range("--workers", requested, 0, kMaxWorkers);
}

// The threads to run for `items` items: what the user asked (0: every core), at least one,
// never more than there are items.
inline int worker_count(int requested, int64_t items) {
  return static_cast<int>(std::clamp<int64_t>(requested > 0 ? requested : default_workers(), 1,
                                              std::max<int64_t>(items, 1)));
}

// Calls fn(worker, index) for every index in [0, count), worker in [0, workers).  When a call
// throws, the others finish the item they are on, take no new one, and the first exception is
// rethrown here after every thread has joined.
template <typename Fn>
void parallel_for(int workers, int64_t count, Fn&& fn) {
  workers = static_cast<int>(std::clamp<int64_t>(workers, 1, std::max<int64_t>(count, 1)));
  std::atomic<int64_t> next{0};
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto body = [&](int worker) {
    for (int64_t i; !stop && (i = next++) < count;) {
      try {
        fn(worker, i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        stop = true;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) threads.emplace_back(body, w);
  body(0);
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace faster

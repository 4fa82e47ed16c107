// CPU runtime settings.
#include "faster/train/cpu_runtime.h"

#include <ATen/Parallel.h>
#include <malloc.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "faster/core/env.h"

namespace faster::train {

void configure_cpu_runtime(int local_ranks) {
  // LibTorch sizes its thread pool by the physical cores cpuinfo finds, which undercounts some
  // virtual machines (1 on a 2-core KVM guest, where half the machine then idles; PyTorch alike).
  // The steps take the cores this process may use, shared among the local ranks, unless
  // OMP_NUM_THREADS names a count.
  if (!std::getenv("OMP_NUM_THREADS"))
    at::set_num_threads(std::max(1, usable_cores() / std::max(1, local_ranks)));
  // Every activation and gradient is a fresh allocation of up to tens of MB.  glibc serves those
  // with mmap and returns them with munmap, so each step page-faults its whole working set in
  // again (10,000 faults per step of the CPU recipe: a fifth of the run in the kernel).  Freed
  // memory is kept in the heap and reused instead: no mmap, no trimming.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

}  // namespace faster::train

// Process settings for training and evaluating on the CPU: LibTorch's thread count and glibc's
// handling of freed memory.  Both defaults cost a 2-core machine about half its speed
// (BENCHMARKS.md, "Where the CPU time went").
#pragma once

namespace faster::train {

// Call once before the first step on the CPU.  `local_ranks`: processes of the job on this machine,
// which share its cores.
void configure_cpu_runtime(int local_ranks);

}  // namespace faster::train

// The CUDA context, begun before main().  On a GPU machine faster-torch spends 0.4-0.6 s loading
// and initialising LibTorch's libraries before main() runs, and its first CUDA call then spends
// another 0.35 s making the device's context (BENCHMARKS.md, issue 13).  Neither needs the other:
// faster-torch's .preinit_array entry, which runs before any shared library's constructor, calls
// start_early_context(), which loads the CUDA driver on the main thread and starts a thread that
// initialises it and retains the device's primary context, the one CUDA's runtime (and so
// LibTorch) takes up on its first call instead of making its own.  No CUDA header is needed: the
// driver's three entry points are looked up by name, and without a driver nothing happens.
#pragma once

#include <functional>

namespace faster {

using EnvLookup = std::function<const char*(const char*)>;

// The CUDA device (an ordinal among the visible ones) the command line will use first, where the
// command runs on a GPU and its flags and environment say which before they are parsed: --device
// (auto and cuda are device 0), LOCAL_RANK or SLURM_LOCALID for a DDP rank.  -1 for none or not
// known: another command, a CPU --device, --help, a DDP launcher that starts the ranks, or
// FASTER_EARLY_CONTEXT=0; with `on_by_default` false (a build without CUDA), also unless
// FASTER_EARLY_CONTEXT=1.
int early_context_device(int argc, const char* const* argv, const EnvLookup& env,
                         bool on_by_default);

// Before main(), with the preinit entry's arguments, before the C and C++ runtimes' constructors
// (so C calls only; `environ` is set from envp).  Does nothing where early_context_device says -1
// or the driver (libcuda.so.1) cannot be loaded.
void start_early_context(int argc, char** argv, char** envp, bool on_by_default);

// Waits for the thread start_early_context() began (at once if none), and returns the process
// clock's seconds when the context was ready, 0 if none was made.  Any thread, any number of times.
double finish_early_context();

}  // namespace faster

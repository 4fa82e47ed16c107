// The CUDA context, begun before main().  On a GPU machine faster-torch spends 0.4-0.6 s in
// LibTorch's libraries' constructors before main() runs, and its first CUDA call then spends
// another 0.2-0.35 s making the device's context (BENCHMARKS.md, issue 13).  Neither needs the
// other.  faster-torch's .preinit_array calls begin_early_context, which the dynamic loader runs
// after relocating the program and before any library's constructor (LibTorch's included; tests/
// core/early_context_test.cpp checks the order; loading the driver there runs the C library's
// initialiser and the driver's first): it loads the CUDA driver and starts a thread that
// initialises it and retains the device's primary context, the one CUDA's runtime (and so LibTorch)
// takes up on its first call instead of making its own.  LibTorch's libraries' constructors run on
// the main thread meanwhile (one that wrote the environment would race with the driver reading
// it; none is known to).  No CUDA header is needed: the driver's four entry points are looked up by
// name, and without a driver nothing happens.  CUDA builds only; on for the speedrun recipes
// (early_context_by_default), FASTER_EARLY_CONTEXT=1 or 0 switches it for any command.  (A library
// constructor did this before, placed by link order: under pip's LibTorch the loader ran it after
// libc10's and libtorch_cpu's, which are most of the 0.4-0.6 s, so it overlapped little, and it
// made no measurable difference.)
#pragma once

#include <functional>

namespace faster {

using EnvLookup = std::function<const char*(const char*)>;

// The CUDA device (an ordinal among the visible ones) the command line will use first, where the
// command makes a CUDA context itself (train, eval, load but not load --decode-only) and its flags
// and environment say which device before they are parsed, as the trainer will decide it:
// --device (auto and cuda are device 0); with --parallel ddp a rank's local rank (LOCAL_RANK, else
// RANK; SLURM_LOCALID in a Slurm step, device 0 where its task sees one GPU:
// core/launch_env.h).  -1 for none or not known: another command, a CPU --device, --help, the DDP
// launcher that starts the ranks (--nproc, no rank in its environment), CUDA_INJECTION64_PATH set
// (a profiler's library, which the driver loads while LibTorch's constructors still run), or
// FASTER_EARLY_CONTEXT other than 1 (unset: `on_by_default`).
int early_context_device(int argc, const char* const* argv, const EnvLookup& env,
                         bool on_by_default);

// Whether the early context is on without FASTER_EARLY_CONTEXT: for `train --recipe speedrun` and
// `speedrun95`, whose time is the whole wall clock from the process's start (their data are small
// arrays: the work queues ask_for_more_work_queues adds for JPEG data do not apply).
bool early_context_by_default(int argc, const char* const* argv);

// Starts the context's thread where early_context_device says (a command that makes a context;
// FASTER_EARLY_CONTEXT=1, or unset where early_context_by_default), with the loader's arguments to
// a .preinit_array entry (`envp`: the environment, which the C library has not taken up yet then).
// Does nothing in a build without CUDA, or with a driver older than CUDA 12.2's.
void begin_early_context(int argc, char** argv, char** envp);

// Waits for the thread begin_early_context began (at once if none).  Returns how many seconds ago
// the context was ready, or -1 if none was made.  Any thread, any number of times; called before
// the process exits and before anything sets environment variables (the driver reads them
// meanwhile).
double finish_early_context();

// Asks for 32 hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS; the driver's default is 8) for
// the CUDA context this process makes next, unless the environment already says how many.  With 8,
// streams share queues and a kernel on one waits behind another stream's: ResNet-18 from JPEG
// (nvJPEG's stage streams beside the training's) trained at 14,682-15,024 img/s with 8 and
// 17,417-17,496 with 32 (BENCHMARKS.md, issue 12).  Call before the process's first CUDA call;
// too late (nothing changes) where the early context has already made the context.  Returns
// whether it set the variable.
bool ask_for_more_work_queues();

}  // namespace faster

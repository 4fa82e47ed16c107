// Seconds since this process started, as the kernel counts it (/proc/self/stat), so the time before
// main() (the dynamic loader mapping LibTorch and CUDA's libraries, static constructors) and the
// `faster` front that exec'd faster-torch (the same process) are included: the clock a user's
// stopwatch around the command would show.
#pragma once

namespace faster {

// Seconds from the process's start to now (10 ms granularity: the kernel's clock ticks); throws
// faster::Error when /proc cannot be read.
double process_seconds();

// main() calls this first: process_seconds() then, the time the dynamic loader and the static
// constructors took (and the `faster` front's exec).  main_entered_seconds() is 0 until it is
// called.
void mark_main_entered();
double main_entered_seconds();

}  // namespace faster

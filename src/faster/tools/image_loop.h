// The tree tools' loop over their images (resize, export, synth): parallel, with a progress bar,
// stopped between images by Ctrl-C or SIGTERM.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "faster/core/error.h"
#include "faster/core/interrupt.h"
#include "faster/core/parallel.h"
#include "faster/core/progress.h"

namespace faster::tools {

// Calls fn(worker, index) for each of `count` images on `workers` threads (parallel_for: the
// first error stops them all), with a progress bar labelled `tool` ("resize") when `show`.  The
// first Ctrl-C or SIGTERM stops the threads at their next image (each output is written whole or
// not at all) and throws Interrupted, saying how far the run got; the tree's manifest still says
// it is unfinished, so readers refuse it until a re-run completes it.
template <typename Fn>
void for_each_image(const char* tool, int workers, int64_t count, bool show, Fn&& fn) {
  InterruptScope interrupt;
  std::atomic<int64_t> done{0};
  std::optional<Progress> progress;
  if (show) progress.emplace(tool, count, "img");
  const std::string hint = std::string("run the same 'faster ") + tool +
                           "' again to finish the tree (readers refuse it until then)";
  try {
    parallel_for(workers, count, [&](int worker, int64_t i) {
      stop_if_interrupted([] { return std::string(); }, hint);
      fn(worker, i);
      ++done;
      if (progress) progress->add();
    });
  } catch (const Interrupted& e) {
    // Every thread has finished the image it was on: the count is the files written.
    throw Interrupted(e.signal(),
                      detail::concat("interrupted (", signal_name(e.signal()), ") after ",
                                     done.load(), " of ", count, " images"),
                      hint);
  }
}

}  // namespace faster::tools

// The tree tools' loop over their images (resize, export, synth): parallel, with a progress bar.
#pragma once

#include <cstdint>
#include <optional>

#include "faster/core/parallel.h"
#include "faster/core/progress.h"

namespace faster::tools {

// Calls fn(worker, index) for each of `count` images on `workers` threads (parallel_for: the
// first error stops them all), with a progress bar labelled `label` when `show`.
template <typename Fn>
void for_each_image(const char* label, int workers, int64_t count, bool show, Fn&& fn) {
  std::optional<Progress> progress;
  if (show) progress.emplace(label, count, "img");
  parallel_for(workers, count, [&](int worker, int64_t i) {
    fn(worker, i);
    if (progress) progress->add();
  });
}

}  // namespace faster::tools

// The numeric flags several commands share, each one's range stated once: every command that has
// one parses it through cli's add_count_option with these, and the tools and the loader plan check
// it with them; tests/cli/flag_rules_test.cpp holds every command to the same message and exit
// code.
#pragma once

#include <cstdint>

namespace faster {

// --workers: threads; 0 is the default (all cores; a small dataset held in memory, 4).
inline constexpr int64_t kMaxWorkers = 1024;
// --epochs: a training run's or a timed load's.
inline constexpr int64_t kMaxEpochs = 1'000'000;

}  // namespace faster

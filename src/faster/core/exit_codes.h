// Exit codes, the same for every command (docs/exit_codes.md): 0 done; 1 stopped by an error met
// while working (data, files, devices; the tools resume when re-run); 2 a usage error (the command
// line alone is wrong: a flag, a value, a range, a combination), nothing done; 3 done, but bad
// input was skipped (or --verify found damage).  Here, not in the command layer, because the DDP
// launcher tells a rank's "done, but" from its failure.
#pragma once

namespace faster {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitBadInput = 3;

}  // namespace faster

// `faster train`'s command line (internal to cli/): the flags' values as parsed, with what the
// user gave (train_flags.cpp adds the flags); resolve_flags (train_recipe.cpp) turns them into
// the run's TrainOptions.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <optional>
#include <string>

#include "faster/cli/command.h"
#include "faster/core/error.h"
#include "faster/train/parallel/world.h"
#include "faster/train/trainer.h"

namespace faster::cli {

struct TrainFlags {
  train::TrainOptions o;
  std::string blocks, filters;  // empty: the recipe's or the model's (apply_recipe)
  bool amp = false;
  train::Precision amp_dtype = train::Precision::kFloat16;
  train::Recipe recipe = train::Recipe::kSeed;
  std::string res_ramp, lr_steps;
  bool fast = false;
  bool no_fuse = false;
  int nproc = 0;
  bool nproc_taken = false;  // --nproc is a resumed DDP run's world size (apply_recipe)
  CLI::App* cmd = nullptr;
  // Resuming with no --recipe: the checkpoint's run fills what is not given (apply_recipe), its
  // precision too where no --fast/--amp/--amp-dtype is given.
  bool from_checkpoint = false;
  std::optional<train::Precision> saved_precision;
  bool ramp_taken = false;      // --res-ramp's epochs are the checkpoint's
  std::string taken_outputs;    // " --checkpoint C --save S ...": a resume's, from its checkpoint
  std::string dropped_outputs;  // what of them is not written, and why
  bool arrays = false;          // --data is a small dataset (apply_recipe looks once)

  // Whether the command line gave `flag` (else a recipe or a default decides).
  bool given(const char* flag) const { return cmd->get_option(flag)->count() > 0; }
};

// Whether this process is a rank a launcher started (torchrun and our own set RANK; srun's tasks).
inline bool in_launched_job() {
  const char* rank = std::getenv("RANK");
  return (rank && *rank) || train::in_slurm_step();
}

// Adds train's flags to `cmd`, their values landing in `f`.
void add_train_flags(CLI::App* cmd, TrainFlags& f);
// The flags as TrainOptions: the recipe's (or a resumed checkpoint's) defaults for what was not
// given, the flags that only mean something together checked, the lists parsed, the modes.
void resolve_flags(TrainFlags& f);
// The recipe's line before training: what the flags not given became.
void print_recipe(const TrainFlags& f);

}  // namespace faster::cli

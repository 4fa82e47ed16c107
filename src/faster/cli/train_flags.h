// `faster train`'s command line (internal to cli/): the flags' values as parsed, with what the
// user gave (train_flags.cpp adds the flags); resolve_flags (train_recipe.cpp) turns them into
// the run's TrainOptions.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "faster/cli/command.h"
#include "faster/core/error.h"
#include "faster/train/parallel/world.h"
#include "faster/train/trainer.h"

namespace faster::cli {

// train.py's flags that change nothing in faster's run: taken, and said once at the start, why.
struct InertFlag {
  const char* flag;
  bool is_flag;  // takes no value
  const char* why;
};
inline constexpr InertFlag kInertTorchvisionFlags[] = {
    {"--cache-dataset", true,
     "faster keeps no dataset cache: its folder scan (or LMDB's index) is read in moments"},
    {"--backend", false,
     "faster decodes with libjpeg-turbo or nvJPEG and applies torchvision's transforms as "
     "restated in faster, for pil and tensor alike"},
    {"--use-v2", true,
     "faster applies torchvision's transforms as restated in faster, v1 or v2 alike"},
    {"--transformer-embedding-decay", false,
     "a ResNet has no transformer embeddings, so nothing takes that decay (as in train.py)"},
    {"--world-size", false,
     "the world's size is the launcher's (torchrun, Slurm or --nproc), as train.py takes "
     "torchrun's"},
    // On a GPU refused (choose_recipe): faster's kernels and cuDNN's are not pinned.
    {"--use-deterministic-algorithms", true,
     "faster's CPU runs are deterministic already: the same seed, data and threads give the "
     "same weights"},
};

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
  // torchvision's train.py flags whose values are not faster's as they stand (train_flags.cpp).
  std::string data_path;  // --data-path: --data, and --recipe torchvision's defaults
  train::LrDecay lr_scheduler = train::LrDecay::kStep;
  double lr_min = 0;
  bool model_ema = false;
  double model_ema_decay = 0.99998;
  bool ra_sampler = false;
  int ra_reps = 3;
  std::string opt, interpolation;
  bool test_only = false;          // --test-only: score --resume's weights on the val split (eval)
  std::vector<std::string> inert;  // the values of train.py's flags that change nothing
  std::string dist_url = "env://";
  int start_epoch = 0;
  std::vector<std::string> notes;  // said once at the start (print_recipe): flags taken as inert

  // Whether the command line gave `flag` (else a recipe or a default decides); --data counts
  // --data-path, its torchvision spelling.
  bool given(const char* flag) const {
    if (std::string(flag) == "--data" && given("--data-path")) return true;
    return cmd->get_option(flag)->count() > 0;
  }
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
// torchvision's spellings whose values faster takes apart (--data-path, --opt, --interpolation),
// and its flags faster refuses by name (usage errors).
void take_torchvision_spellings(TrainFlags& f);
// `faster eval`'s line for `r`, and its --json where one is named; returns the exit code.
int print_eval(const train::EvalReport& r, const std::string& json);
// The recipe's line before training: what the flags not given became.
void print_recipe(const TrainFlags& f);

}  // namespace faster::cli

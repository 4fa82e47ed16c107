// The parts a training run's steps share (trainer.cpp reads as those steps): the job this process
// belongs to, the set-up's milestones, the model and its stepper, the loaders, the metrics log,
// and the epoch loop (epoch.cpp).  Internal to train/: the public face is trainer.h.
#pragma once

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "faster/core/interrupt.h"
#include "faster/core/progress.h"
#include "faster/core/timer.h"
#include "faster/data/loader/image_loader.h"
#include "faster/models/model.h"
#include "faster/models/registry.h"
#include "faster/train/checkpoint.h"
#include "faster/train/data_plan.h"
#include "faster/train/parallel/dist.h"
#include "faster/train/stepper.h"
#include "faster/train/trainer.h"

namespace faster::train {

// The process's place in a job: its device (its local rank's under DDP), its rank, the
// connection to the other ranks (DDP) and DataParallel's GPUs.
struct Job {
  torch::Device device = torch::kCPU;
  WorldInfo world;
  std::unique_ptr<Dist> dist;     // DDP only
  std::vector<torch::Device> dp;  // DataParallel only
  bool is_main() const { return world.is_main(); }
};

// The set-up's milestones on the process clock (TrainReport::setup), and --prewarm's threads.
struct Setup {
  nlohmann::json marks;
  std::future<double> device_warm;      // when CUDA, cuDNN and cuBLAS were ready
  std::future<std::string> model_warm;  // a model copy's first step: "" or what went wrong
};

// The model and what trains it, and what a checkpoint of it holds.
struct Run {
  models::ModelOptions mo;
  models::Model model;
  std::unique_ptr<Stepper> stepper;
  std::vector<CheckpointPart> parts;  // momentum, average, scaler
  nlohmann::json identity;            // what a checkpoint must match to be this run's
  std::string from_weights;           // --weights: what the model started from, as said
};

// The training loader and the validation loader (none without a val split); the image loaders
// among them, for their statistics.
struct Loaders {
  std::unique_ptr<data::Loader> train, val;
  data::ImageLoader* train_images = nullptr;
  data::ImageLoader* val_images = nullptr;
};

// metrics.jsonl (appended) and metrics.svg (rewritten after every epoch) in --log-dir; nothing
// without one.
class MetricsLog {
 public:
  explicit MetricsLog(const std::string& dir);
  void write(const nlohmann::json& j);
  void chart(const std::string& title, const std::vector<EpochStats>& epochs);

 private:
  std::string dir_;
  std::ofstream out_;
};

// The settings that decide the data order and the updates (the run's options JSON).
// clang-format off
inline constexpr const char* kRunKeys[] = {
    "data", "batch", "lr", "lr_per_256", "momentum", "weight_decay", "weight_decay_1d",
    "nesterov", "muon_lr", "muon_momentum", "muon_steps", "warmup_epochs", "warmup_start",
    "lr_decay", "min_lr", "lr_steps", "lr_gamma", "lr_per_epoch", "lr_warmup_method",
    "lr_step_size", "norm_weight_decay", "bias_weight_decay", "clip_grad_norm", "auto_augment",
    "ra_magnitude", "augmix_severity", "ra_reps", "random_erase",
    "mixup_alpha", "cutmix_alpha", "label_smoothing", "ema", "ema_every", "ema_warmup", "res", "res_end", "res_ramp", "res_step", "crop_scale_min",
    "translate", "flip", "alternate_flips", "seed", "last_batch", "precision", "recipe",
    "world_size", "norm", "whiten", "train_limit", "sync_bn"};
// clang-format on

// The job of `o`: its device (a DDP rank's own GPU), the ranks' connection, the CPU's threads.
Job join(const TrainOptions& o);
// Whether every rank says `mine` (a collective: all ranks call it).
bool every_rank(Dist& dist, bool mine, torch::Device device);
// Ranks started with other settings (two command lines, ranks started by hand) would train out of
// step: they compare `options` (the run's JSON) and the class count with rank 0's first.
void check_ranks_agree(Dist& dist, const nlohmann::json& options, int classes,
                       torch::Device device);

// --resume: copies the checkpoint into the run (weights, momentum, average, scaler), its history
// into the report's earlier epochs; checks its classes and settings against this run's (`speak`:
// this rank warns).  Returns the epochs it had done (0 without --resume).
int restore(const TrainOptions& o, const TrainingData& d, Run& run, TrainReport& report,
            bool speak);
// --checkpoint, --save, --json: an existing file is replaced only where it is this run's own (the
// checkpoint resumed, the weights or report of the same settings) or with o.overwrite; else
// faster::Error says what the file holds and how to go on.  `now`: this run's options (JSON).
void check_outputs(const TrainOptions& o, const nlohmann::json& now);

// The settings of kRunKeys whose values in `now` (a run's options) differ from `saved`'s, as
// "key new (was old), ..."; empty for the same run (its data however named, its epochs aside).
std::string changed_settings(const nlohmann::json& saved, const nlohmann::json& now);
// A checkpoint of a run on image folders (or LMDB) records its class names: resumed or scored on
// folders named or ordered otherwise, its labels would mean other classes.  Throws naming `where`.
void check_class_names(const nlohmann::json& meta, const TrainingData& d, const std::string& where);
// The momentum and the weights' average are saved flat, in the parameters' memory order of the
// run that saved them (`saved`: its options): a checkpoint of the other format (channels-last or
// not) is reordered into this run's, in place.
void reorder_saved_flats(const FlatSgd& sgd, bool channels_last, const nlohmann::json& saved,
                         const std::vector<torch::Tensor>& flats);

// What a checkpoint and saved weights record of their run: its identity (model, classes,
// channels), its class names (image folders), the side of a small dataset as stored, its options.
nlohmann::json run_meta(const TrainOptions& o, const TrainingData& d, const Run& run,
                        const TrainReport& report);

// A state_dict as torchvision users load it: names unwrapped of DataParallel's, DDP's and
// torch.compile's prefixes, BatchNorm's step counters filled in where an old file has none.
c10::Dict<std::string, torch::Tensor> as_plain_state_dict(
    const c10::Dict<std::string, torch::Tensor>& dict);
// Saved weights as a model takes them: the state_dict made plain (as_plain_state_dict), the prefix
// of the model's entries ("model." in a faster checkpoint), and the model they make (ResNets,
// from their shapes).  Errors name `file`.
struct SavedModel {
  c10::Dict<std::string, torch::Tensor> dict;
  std::string prefix;
  models::ModelOptions mo;
  nlohmann::json args;  // a torchvision checkpoint dict's "args" (train.py's), else null
};
SavedModel read_saved_model(const std::string& file);

// The network `mo` names, on `device`, its 4-d parameters channels-last when asked.
models::Model build_model(const models::ModelOptions& mo, torch::Device device, bool channels_last);

// Initialises the layers of `model` that start from the data (SpeedNet's whitened stem) from the
// first 2,000 training images as the model sees them (float, normalized); returns their
// parameters.  Training and eval (of a checkpoint whose stem stayed so) must start alike.
std::vector<torch::Tensor> init_from_training_images(models::Model& model,
                                                     const data::ArrayDataset& a,
                                                     const std::string& name, torch::Device device);

// The epochs of a run: each trains, tests where due, is checked, recorded, logged and saved
// (rank 0 writes the checkpoint); Ctrl-C stops a single process between steps, saying what was
// saved.
class EpochLoop {
 public:
  EpochLoop(const TrainOptions& o, const TrainingData& d, Job& job, Run& run, Loaders& loaders,
            TrainReport& report, MetricsLog& log);
  // Epoch `epoch` (0-based): its record goes to the report's epochs.
  void run_epoch(int epoch);
  // Training images over training time, over this process's epochs (the report's rate).
  double train_images_per_second() const;

 private:
  // What an epoch's training pass did: samples this rank trained, seconds, the last rate, its
  // resolution.
  struct Trained {
    int64_t seen = 0;
    double seconds = 0, lr = 0;
    int res = 0;
  };
  // The training pass, timed from the epoch's start (`timer`).
  void train_pass(int epoch, std::optional<Progress>& bar, const Timer& timer, Trained& t);
  // The test pass: the weights themselves, then (where the run keeps one) their average, whose
  // scores are the epoch's (the weights' own are kept apart, own_eval_); an interrupt saves the
  // trained epoch before it stops.
  void test_pass(int epoch, std::optional<Progress>& bar, const Trained& t);
  // One pass over the test loader, on the weights in the model now (`average`: the average,
  // swapped in).
  void evaluate(int epoch, std::optional<Progress>& bar, const Trained& t, bool average);
  // The epoch's record from the job's sums (one read of the device), its seconds by `timer`
  // once they are read; stops a diverged run.
  EpochStats record(int epoch, bool evaluated, const Trained& t, const Timer& timer);
  // Rank 0's checkpoint of a finished epoch.
  void save(int epoch);
  void stop_if_interrupted(int epoch, const char* where);

  const TrainOptions& o_;
  const TrainingData& d_;
  Job& job_;
  Run& run_;
  Loaders& loaders_;
  TrainReport& report_;
  MetricsLog& log_;
  // The schedule's position: a checkpoint ends an epoch, and a run resumed with another --batch
  // (or world size) has other steps per epoch than the checkpoint's "step" counted.
  int64_t steps_per_epoch_ = 0, step_ = 0;
  int epochs_saved_ = 0;
  int64_t train_images_ = 0;
  torch::Tensor own_eval_;  // the weights' own test sums where the average was tested
  double train_seconds_ = 0;
  data::LoaderStats before_;  // the training loader's, as the epoch started
  // Ctrl-C or SIGTERM stops a single process between steps and says where it stopped (the ranks
  // of a job are stopped by their launcher).
  std::optional<InterruptScope> interrupt_;
};

}  // namespace faster::train

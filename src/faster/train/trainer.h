// The trainer: any registered model on a small array dataset or on JPEG folders / LMDB, single
// device, DataParallel or DDP; a learning-rate and resolution schedule, evaluation (top-1/top-5)
// every few epochs, checkpoints every epoch, resume, metrics as JSON lines and an SVG chart.
// `evaluate` runs saved weights over a validation split.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "faster/train/options.h"

namespace faster::train {

struct EpochStats {
  int epoch = 0;
  double train_loss = 0;
  bool evaluated = false;  // test_* hold this epoch's evaluation
  // test_* score what the run tests, saves and reports: the average of the weights where it keeps
  // one (--ema, --model-ema); then own_test_* score the weights themselves (averaged: true), as
  // torchvision's train.py tests both.
  double test_loss = 0, test_accuracy = 0, test_top5 = 0;
  bool averaged = false;
  double own_test_loss = 0, own_test_accuracy = 0, own_test_top5 = 0;
  double seconds = 0;              // the whole epoch, evaluation included
  double train_seconds = 0;        // its training part
  double loader_wait_seconds = 0;  // of which the step waited for the training loader
  // The training loader's work in the epoch (JPEG data; 0 otherwise), summed over its threads:
  // its worker threads' read + decode + augment, and its nvJPEG stage threads' batches, with the
  // images each did.  Per image, against `faster load` alone, they say which side slows down.
  double loader_cpu_seconds = 0, loader_gpu_seconds = 0;
  // Of loader_gpu_seconds: checking headers, in nvJPEG's calls, waiting for the GPU.
  double loader_gpu_parse_seconds = 0, loader_gpu_call_seconds = 0, loader_gpu_wait_seconds = 0;
  int64_t loader_images = 0, loader_gpu_images = 0;
  // Bad images the job's loaders skipped in the epoch (training and test, all ranks): each
  // replaced by the next image in training, left out of the test scores.
  int64_t skipped_images = 0;
  int64_t train_images = 0;
  double lr = 0;               // at the epoch's last step
  int res = 0;                 // training resolution (0: as stored)
  double process_seconds = 0;  // since the process started, at the end of the epoch (test included)

  nlohmann::json to_json() const;
  // Reads to_json's record back (a checkpoint's history); fields it lacks stay 0.
  static EpochStats from_json(const nlohmann::json& j);
};

struct TrainReport {
  std::vector<EpochStats> epochs;  // this process's
  // A resumed run's epochs before start_epoch, as its checkpoint recorded them (none in a
  // checkpoint from before they were recorded).  The JSON's "epochs" and the chart are the whole
  // run: these, then `epochs`.
  std::vector<EpochStats> earlier_epochs;
  // The whole run's epochs: earlier_epochs, then this process's.
  std::vector<EpochStats> run_epochs() const;
  double total_seconds = 0;  // model on the device -> end of the last test epoch (as the peer)
  double train_images_per_second = 0;  // training images over training time (evaluation left out)
  // Since the process started (process_clock.h), at the end of the last test pass: what a stopwatch
  // around the command shows, less the exit.  `setup`: the process clock at each set-up milestone
  // (start_s, device_ready_s, data_read_s, loaders_ready_s, steps_ready_s).
  double process_seconds = 0;
  nlohmann::json setup;
  // The CUDA environment the run set or met that shapes its speed: CUDA_DEVICE_MAX_CONNECTIONS
  // (JPEG data asks for 32 hardware work queues, core/early_context.h), where set.
  nlohmann::json cuda_env = nlohmann::json::object();
  std::string device, model, data;
  int classes = 0;
  int start_epoch = 0;  // > 0 when resumed
  bool is_main = true;  // rank 0 (or the only process): the one that reports for the job
  nlohmann::json options;

  // Bad images this process's epochs skipped (by every rank of a DDP job).
  int64_t skipped_images() const;
  // The last test pass's top-1 (%); none when nothing was tested (the data has no val split).
  std::optional<double> final_test_accuracy() const;
  // final_test_accuracy is left out of the JSON when there is none.
  nlohmann::json to_json() const;
};

struct TrainCallbacks {
  std::function<void(const std::string&)> on_start;  // one line: model, data, device
  std::function<void(const EpochStats&)> on_epoch;
};

// The files a run reads and writes, checked before it starts (a launcher checks them once, before
// its ranks start): --save, --checkpoint, --log-dir writable; --resume and --data there.
void check_run_files(const TrainOptions& o);
// Throws faster::Error unless `path` (--resume's) is a file.
void check_resume_file(const std::string& path);
// --weights: the file of torchvision's weights by name (torch's cache, torchvision_weights.h) or
// the file given (a state_dict or a faster checkpoint); errors where it is not there.
std::string weights_file(const std::string& weights);
// The model of `weights` (a name's, or the one the file's shapes make: the ResNet family).
std::string weights_model(const std::string& weights);

// Runs the whole training; callbacks (optional) see the run's description and each epoch's stats.
TrainReport train(const TrainOptions& o, const TrainCallbacks& callbacks = {});

struct EvalOptions {
  std::string weights;  // a state_dict (faster's or torchvision's) or a faster checkpoint
  std::string data;     // a root with val/, a split folder, an LMDB, or a small dataset
  std::string model;    // empty: inferred from the weights (ResNets)
  // torchvision's weights by name whose evaluation transforms (resize, crop) apply where val_res
  // is not given: empty, `weights` where they are a name (train.py --test-only with --resume and
  // --weights scores the one at the other's transforms).
  std::string transforms;
  std::string device = "auto";
  int64_t batch = 256;
  int workers = 0;                  // 0: all cores (4 for a small dataset)
  int val_res = 0, val_resize = 0;  // 0: 224 (JPEG) or as stored (arrays); resize = res*256/224
  Decode decode = Decode::kAuto;
  Precision precision = Precision::kFloat32;
  bool channels_last = false;
  // Test-time augmentation (train's --tta, --tta-shifts): unset follows a checkpoint's own run (so
  // eval reproduces the accuracy the run reported), else off.
  std::optional<bool> tta, tta_shifts;
  // A checkpoint's average of weights (its run's --ema) instead of its weights: unset follows the
  // run (it tested the average).
  std::optional<bool> ema;
};

struct EvalReport {
  std::string model, data, device;
  int classes = 0, res = 0;
  bool tta = false, tta_shifts = false, ema = false;
  int64_t images = 0;   // evaluated: the split's images less the bad ones skipped
  int64_t skipped = 0;  // bad images left out
  double loss = 0, top1 = 0, top5 = 0, seconds = 0;
  nlohmann::json to_json() const;
};

EvalReport evaluate(const EvalOptions& o);

}  // namespace faster::train

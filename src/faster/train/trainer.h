// The trainer: ThinNet on a small in-memory dataset, SGD, cross-entropy, train + test every epoch.
// One process drives one device here; train/parallel adds DataParallel and DDP on top.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "faster/train/options.h"

namespace faster::train {

struct EpochStats {
  int epoch = 0;
  double train_loss = 0, test_loss = 0, test_accuracy = 0, seconds = 0;
  int64_t train_images = 0;
};

struct TrainReport {
  std::vector<EpochStats> epochs;
  double total_seconds = 0;  // model on the device -> end of the last test epoch (as the peer)
  double train_images_per_second = 0;
  std::string device;
  nlohmann::json options;

  nlohmann::json to_json() const;
};

// Runs the whole training; `on_epoch` (optional) sees each epoch's stats as they come.
TrainReport train(const TrainOptions& o, const std::function<void(const EpochStats&)>& on_epoch = {});

}  // namespace faster::train

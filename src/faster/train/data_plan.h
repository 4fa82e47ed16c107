// The one loader plan: what `faster train`, `faster eval` and the Python module's ImageLoader ask
// the loaders for, decided from the data options (data_options.h), the data and the device.  It
// settles what the data decides (flips, the crop side of JPEG data, a batch no larger than a
// rank's share), picks the decoder (--decode auto), the layout, the channels and the validation
// sizes, and builds the loaders' options from it.
#pragma once

#include <torch/types.h>

#include <memory>

#include "faster/data/loader/loader.h"
#include "faster/train/data_options.h"
#include "faster/train/parallel/world.h"
#include "faster/train/training_data.h"

namespace faster::train {

struct DataPlan {
  // The options as the data settles them: --flip auto decided, JPEG data's crop side (224 unless
  // given), the batch at most the rank's share of the training split.  A run records these.
  DataOptions options;
  int channels = 0;  // of the loaders' images; 0: the data's
  data::Layout layout = data::Layout::kNCHW;
  data::DecodeOn decode = data::DecodeOn::kCpu;
  int val_res = 0, val_resize = 0;  // 0: a small dataset as stored
  // Small datasets as stored on the device (the device loader shifts and flips them); crops
  // (JPEG data, or --res) flip and resize.
  bool as_stored_on_device = false;
  bool crops = false;
};

// Whether `o` keeps `d` (a small dataset) as stored on the device (the speedrun recipes need it).
bool as_stored_on_device(const DataOptions& o, const TrainingData& d);

// The plan for `d` (its training split may be absent: evaluation) on `device`, for the rank `w`
// (rank 0 says what it settled).  `model_channels`: what the model takes (0: the data's).
// Throws a UsageError for options the data cannot honour (--translate, --flip on, --loader device
// where they do not apply).
DataPlan plan_data(const DataOptions& o, const TrainingData& d, int model_channels,
                   torch::Device device, const WorldInfo& w);

// The loaders' options for the training split (`train`) or the validation split of `d`, for rank
// `w`: uint8 batches on `device`, normalized there (the caller changes the output and the last
// batch's rule where it wants otherwise).
data::LoaderOptions loader_options(const DataPlan& plan, const TrainingData& d,
                                   torch::Device device, const WorldInfo& w, bool train);

// The loader `lo` asks for on the training or validation split of `d`: the synthetic loader
// (training, LoaderKind::kSynthetic), the device-resident one (a small dataset as stored on the
// device), else the image loader.
std::unique_ptr<data::Loader> make_loader(const DataPlan& plan, const TrainingData& d,
                                          const data::LoaderOptions& lo, bool train);

}  // namespace faster::train

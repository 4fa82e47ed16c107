// `faster synth`: an ImageNet-like tree of JPEGs generated from a seed (train/ and val/, one folder
// per class), so tests and benchmarks have realistic data without shipping ImageNet.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "faster/data/image.h"

namespace faster::tools {

struct SynthOptions {
  std::filesystem::path out;
  int classes = 10;
  int images = 100;  // per class, in train/
  int val = 0;       // per class, in val/ (no val/ when 0)
  uint64_t seed = 0;
  int quality = 90;
  int workers = 0;  // 0: all cores
  bool progress = true;
};

struct SynthSummary {
  int64_t files = 0;
  int64_t bytes = 0;
  double seconds = 0;
  int64_t pixels = 0;
  int64_t width_sum = 0, height_sum = 0;  // for the mean size in the summary
};

// Writes the tree; every file goes to a temporary name first and is renamed when complete.
SynthSummary synth_dataset(const SynthOptions& options);

// The size of image `index` (0-based over the whole tree): like ImageNet, mostly 500 pixels on the
// long side at 4:3 or 3:2, some square, about one in five portrait; mean about 470x390.
void synth_size(uint64_t seed, int64_t index, int& width, int& height);

// Renders one image: class-dependent colours, orientation and shapes (so a classifier can learn
// the labels), per-image placement, and multi-octave noise so that it compresses like a photo.
void render_synth_image(uint64_t seed, int label, int64_t index, int width, int height,
                        data::ImageBuffer& out);

// Folder and file names used in the tree, shared with tests.
std::string synth_class_name(int label);
std::string synth_file_name(int label, int64_t index);

}  // namespace faster::tools

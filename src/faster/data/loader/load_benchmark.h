// `faster load`'s engine: runs the image loader over a dataset after a warm-up, warm or cold, and
// reports images/s, compressed MB/s, per-stage throughput and the bottleneck, plus the decode
// floor.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "faster/data/decode/decode_floor.h"
#include "faster/data/loader/image_loader.h"

namespace faster::data {

struct LoadBenchOptions {
  std::filesystem::path path;
  LoaderOptions loader;
  int64_t epochs = 1;
  int64_t batches = 0;  // > 0: stop after this many measured batches (epochs repeat as needed)
  int64_t warmup = -1;  // batches before timing starts; -1: min(5, a fifth of an epoch)
  bool cold = false;
  bool decode_only = false;  // only the decode floor
  bool auto_decode = false;  // loader.decode as --decode auto picks it for the data (auto_decode)
  int floor_samples = 200;   // images for the decode floor (0: skip it)
  bool progress = true;
};

struct LoadReport {
  std::string source, split_note, device, cache, transform;
  int workers = 0, batch = 0, gpu_stages = 0;
  CpuShare cpu_share;  // nvJPEG: the share the CPU threads decode; with auto, where it ended
  int64_t batches = 0, images = 0, bytes = 0, skipped = 0;
  double seconds = 0;
  LoaderStats stats;
  DecodeFloor floor;
  int cores = 0;
  std::string bottleneck;

  double images_per_s() const { return seconds > 0 ? images / seconds : 0; }
  double mb_per_s() const { return seconds > 0 ? bytes / seconds / 1e6 : 0; }
  struct StageRow {
    const char* name;
    double ms_per_image;  // per image the stage handled
    double rate;          // img/s the stage sustains with its threads (0: no time measured)
    const char* note = "";
  };
  // read, decode, augment (the workers), copy (the consumer), then gpu (the stage threads, only
  // when it decoded any): the report's table and the bottleneck both come from these.
  std::vector<StageRow> stage_rows() const;
};

LoadReport run_load_benchmark(const LoadBenchOptions& options);
// What `loader` has done since it was made (or its counters were reset): its stages' times and
// rates, the bottleneck, the images and bytes it loaded, the skipped ones (no timing of its own:
// `seconds` stays 0).  The Python module's stats().
LoadReport loader_report(const ImageLoader& loader);
void print_load_report(const LoadReport& report, bool decode_only);
nlohmann::json to_json(const LoadReport& report);

}  // namespace faster::data

// `faster resize`: a downscaled mirror of a JPEG tree, safe to interrupt and re-run.  Images whose
// smaller edge is above max_size are re-encoded with it at max_size; the others are copied byte for
// byte; corrupt ones are reported and skipped (or copied).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "faster/data/sources/image_tree.h"

namespace faster::tools {

struct ResizeOptions {
  std::filesystem::path src, dst;
  int max_size = 0;
  int quality = 90;
  int workers = 0;               // 0: every core
  bool copy_bad = false;         // copy corrupt images unchanged instead of skipping them
  std::filesystem::path report;  // empty: DST/.faster-resize-report.tsv
  bool progress = true;
};

struct BadImage {
  std::string path;  // relative to the source root
  std::string reason;
  bool copied = false;  // copied unchanged into the destination (--copy-bad, now or by a past run)
};

struct ResizeSummary {
  int64_t files = 0;  // JPEG names in the source tree: downscaled + copied + up_to_date + bad
  int64_t downscaled = 0, copied = 0, up_to_date = 0;
  int64_t bad = 0;  // unreadable, corrupt or not a file (a FIFO...): skipped, or copied if asked
  int64_t ignored = 0;  // other entries, directories reached twice or leading into DST
  int64_t removed = 0;  // outputs of sources gone since an earlier run (deleted, renamed): deleted
  int64_t bytes_in = 0, bytes_out = 0;  // of the images processed in this run
  double seconds = 0;
  std::vector<BadImage> bad_images;  // sorted by path
  std::filesystem::path report;
};

// Runs the whole job.  Throws faster::Error for anything that stops it: bad options, nested trees,
// a destination made with other options, another run on the same destination, a write error.
ResizeSummary resize_tree(const ResizeOptions& options);

// The summary for people: counts, bytes, time, rate, and where the report is.
std::string format_summary(const ResizeSummary& summary, bool copy_bad);

// Where resize keeps its options, to refuse a re-run with different ones into the same folder.
constexpr const char* kResizeManifest = data::kTreeManifests[0];  // readers check it
constexpr const char* kResizeReport = ".faster-resize-report.tsv";
// What each output was made from (tools/resize_state.h), to redo exactly the changed ones.
constexpr const char* kResizeState = ".faster-resize-state.tsv";

}  // namespace faster::tools

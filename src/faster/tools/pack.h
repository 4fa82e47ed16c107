// `faster pack`: an ImageNet-style folder into one LMDB database in the layout the loader reads
// (docs/lmdb_layout.md), optionally downscaled on the way in; and `--verify`, which re-reads one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "faster/tools/resize.h"

namespace faster::tools {

struct PackOptions {
  std::filesystem::path src, out;
  int max_size = 0;             // 0: store the images as they are (still checked to decode)
  int quality = 90;             // for downscaled images
  int workers = 0;              // 0: every core
  size_t initial_map_size = 0;  // 0: 1 GiB; doubled whenever it fills
  bool progress = true;
};

struct PackSummary {
  int64_t files = 0, packed = 0, downscaled = 0, bad = 0, classes = 0;
  int64_t bytes_in = 0, bytes_out = 0;  // source files read, image bytes stored
  int map_growths = 0;                  // times the map was full and was enlarged
  double seconds = 0;
  std::vector<BadImage> bad_images;   // also in the metadata record ("skipped")
  std::vector<int64_t> class_counts;  // records packed per class (the metadata's class_counts)
};

// Packs the samples of data::FolderSource(src) (the loader's view: classes sorted, labels by class
// index).  Builds the database beside `out` under a temporary name and renames it into place when
// it is complete and synced; `out` must not exist.  Unreadable or corrupt images are left out and
// listed.  Throws faster::Error when it cannot finish (no database is left under `out` then).
PackSummary pack_folder(const PackOptions& options);
std::string format_summary(const PackSummary& summary, const std::filesystem::path& out);

struct VerifyReport {
  int64_t records = 0, expected = 0, classes = 0, image_bytes = 0;
  int64_t damaged = 0;                // records that fail a check
  std::vector<std::string> problems;  // one line each, the first kMaxProblems
  std::string damaged_pages;          // LMDB's own pages are damaged: nothing else was read
  bool ok() const { return problems.empty() && damaged == 0 && damaged_pages.empty(); }
};

// Checks LMDB's pages (data::LmdbEnv::open_read_only), the metadata, that the keys are exactly
// records 0..count-1, and that every record's checksum matches, its label names a class and its
// image decodes; and the labels in record order: the metadata's class_counts fix each record's
// (older databases: labels never decrease, records being in class order).  Throws faster::Error
// only when `db` is not an LMDB database at all, or a truncated one; damage is reported, not
// thrown.
VerifyReport verify_database(const std::filesystem::path& db, int workers, bool progress);
std::string format_report(const VerifyReport& report, const std::filesystem::path& db);

}  // namespace faster::tools

// `faster resize` implementation: list the source tree, prepare the destination (folders, lock,
// options manifest, leftovers of an interrupted run), then process images in parallel, each one
// written atomically, skipping those made from their source as it is now (resize_state.h).
#include "faster/tools/resize.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "faster/core/error.h"
#include "faster/core/log.h"
#include "faster/core/parallel.h"
#include "faster/core/progress.h"
#include "faster/core/timer.h"
#include "faster/data/sources/image_tree.h"
#include "faster/tools/downscale.h"
#include "faster/tools/file_io.h"
#include "faster/tools/image_loop.h"
#include "faster/tools/resize_state.h"
#include "faster/tools/tree.h"

namespace faster::tools {
namespace fs = std::filesystem;

namespace {

constexpr int kBadImagesLogged = 10;  // the rest are only in the report

// An output recorded as made from its source as it is now must still be whole: a byte-for-byte
// copy has the source's size, and a re-encoded image ends with the JPEG end-of-image marker.
// Outputs only ever appear whole under their final name, so this catches later damage (or a
// crash before data reached the disk), not our own half-writes.
bool output_up_to_date(const ResizeState& state, size_t i, const fs::path& src,
                       const fs::path& dst) {
  struct stat s, d;
  if (::stat(dst.c_str(), &d) != 0 || ::stat(src.c_str(), &s) != 0) return false;
  if (!S_ISREG(d.st_mode) || d.st_size < 2 || !state.up_to_date(i, s, d)) return false;
  return d.st_size == s.st_size || ends_with_jpeg_eoi(dst, d.st_size);
}

// Refuses to mix two option sets or two sources in one destination (images already done would keep
// the old size; two trees would merge into one, their classes too), and a destination holding
// files this tool did not write.
nlohmann::json check_and_write_manifest(const ResizeOptions& o) {
  const fs::path path = o.dst / kResizeManifest;
  const nlohmann::json now = {
      {"max_size", o.max_size}, {"quality", o.quality}, {"copy_bad", o.copy_bad}};
  std::error_code ec;
  const std::string source = resolved(o.src).string();  // one name however it is given
  if (fs::exists(path, ec)) {
    const nlohmann::json before = read_json_file(path);
    if (!before.is_object() || before.value("tool", "") != "faster resize")
      FASTER_THROW(o.dst.string(), ": ", kResizeManifest, " is not a faster resize manifest");
    nlohmann::json options = before.value("options", nlohmann::json());
    if (options.is_object() && !options.contains("copy_bad"))
      options["copy_bad"] = false;  // a manifest of a faster that did not record it
    if (options != now)
      throw Error(detail::concat(o.dst.string(), " was made with options ",
                                 before["options"].dump(), ", this run asks for ", now.dump()),
                  "use another --dst, or delete this one to start over");
    const std::string made_from = before.value("source", "");
    if (!made_from.empty() && resolved(made_from).string() != source)
      throw Error(o.dst.string() + " was made from " + made_from + ", this run reads " + source,
                  "use another --dst, or delete this one to start over");
  } else {
    // Its own files (the state, the report, their temporaries left by a kill) are not foreign.
    const auto own = [](const std::string& name) {
      for (const char* file : {kResizeManifest, kResizeState, kResizeReport})
        if (name == file || name == temp_path_for(file).string()) return true;
      return false;
    };
    for (const auto& e : fs::directory_iterator(o.dst, ec))
      if (!own(e.path().filename().string()))
        throw Error(o.dst.string() + " holds files faster resize did not write (" +
                        e.path().filename().string() + ", and no " + kResizeManifest + ")",
                    "use a new or empty --dst");
  }
  const nlohmann::json manifest = {{"tool", "faster resize"}, {"source", source}, {"options", now}};
  write_manifest(path, manifest, /*complete=*/false);
  return manifest;
}

// Creates the mirrored folders (parents first) and removes temporaries of an interrupted run.
void prepare_destination(const ResizeOptions& o, const data::ImageTree& tree) {
  std::vector<fs::path> dirs{o.dst};
  for (const auto& d : tree.dirs) dirs.push_back(o.dst / d);
  for (const auto& dir : dirs) prepare_output_directory(dir);
}

void write_report(const fs::path& path, const std::vector<BadImage>& bad) {
  std::string text = "path\treason\taction\n";
  for (const auto& b : bad)
    text += tsv_field(b.path) + "\t" + tsv_field(b.reason) + "\t" +
            (b.copied ? "copied\n" : "skipped\n");
  write_file_atomic(path, text);
}

// The bad images an earlier run copied unchanged, from its report (path -> reason): a destination
// whose journal predates the reasons it now keeps (ResizeState::bad_copy) has them only there.
// Their copies look up to date (same bytes as the source), so without this a re-run would drop
// them from the report and the count.
std::unordered_map<std::string, std::string> copied_bad_images(const fs::path& report) {
  std::unordered_map<std::string, std::string> copied;
  std::ifstream in(report);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find('\t'), b = line.rfind('\t');
    if (a == std::string::npos || b == a || line.compare(b + 1, std::string::npos, "copied") != 0)
      continue;
    copied.emplace(tsv_unfield(line.substr(0, a)), tsv_unfield(line.substr(a + 1, b - a - 1)));
  }
  return copied;
}

// Per-thread state: each worker owns its codec objects and buffers, reused image after image.
struct Worker {
  Downscaler downscaler;
  std::vector<uint8_t> in, out;
};

struct Tally {
  std::atomic<int64_t> downscaled{0}, copied{0}, up_to_date{0}, bytes_in{0}, bytes_out{0};
  std::mutex bad_mutex;
  std::vector<BadImage> bad;

  std::unordered_map<std::string, std::string> copied_earlier;  // read before the workers start

  void add_bad(const std::string& path, const std::string& reason, bool copied) {
    std::lock_guard<std::mutex> lock(bad_mutex);
    if (bad.size() < kBadImagesLogged) log::warn("bad image ", path, ": ", reason);
    bad.push_back({path, reason, copied});
  }
};

void resize_one(const ResizeOptions& o, const std::string& rel, size_t index, ResizeState& state,
                Worker& w, Tally& t) {
  const fs::path src = o.src / rel, dst = o.dst / rel;
  if (output_up_to_date(state, index, src, dst)) {
    // Still the bad image an earlier run copied: reported again, not redone.
    const auto earlier = t.copied_earlier.find(rel);
    if (!state.bad_copy(index).empty())
      t.add_bad(rel, state.bad_copy(index), /*copied=*/true);
    else if (earlier != t.copied_earlier.end())
      t.add_bad(rel, earlier->second, /*copied=*/true);
    else
      ++t.up_to_date;
    return;
  }
  struct stat source;  // as read: what the output is made from
  try {
    data::read_regular_file(src, w.in, &source);
  } catch (const Error& e) {  // unreadable: nothing to copy either
    t.add_bad(rel, e.what(), /*copied=*/false);
    state.remove_output(index, dst);  // an earlier version's output mirrors it no more
    return;
  }
  DownscaleResult result = DownscaleResult::kKeep;
  std::string bad;  // why the image is bad, copied unchanged
  try {
    data::JpegEncodeOptions encode;
    encode.quality = o.quality;
    result = w.downscaler.run(w.in.data(), w.in.size(), o.max_size, encode, w.out);
  } catch (const Error& e) {
    t.add_bad(rel, e.what(), o.copy_bad);
    if (!o.copy_bad) {
      state.remove_output(index, dst);  // an earlier version's output mirrors it no more
      return;
    }
    bad = e.what();  // copied unchanged, counted as bad only
  }
  const std::vector<uint8_t>& bytes = result == DownscaleResult::kKeep ? w.in : w.out;
  // Errors here stop the run.  The journal names the output before it appears (resize_state.h).
  write_file_atomic(dst, bytes.data(), bytes.size(),
                    [&](const struct stat& output) { state.record(index, source, output, bad); });
  if (bad.empty()) ++(result == DownscaleResult::kKeep ? t.copied : t.downscaled);
  t.bytes_in += static_cast<int64_t>(w.in.size());
  t.bytes_out += static_cast<int64_t>(bytes.size());
}

// A folder of the source that is a link into the destination (or above it) would mirror the
// outputs into themselves, one level deeper every run: it and everything under it are left out.
void leave_out_links_into(data::ImageTree& tree, const fs::path& src, const fs::path& dst) {
  std::vector<std::string> into;
  for (const auto& dir : tree.dirs)
    if (is_inside(dst, src / dir) || is_inside(src / dir, dst)) into.push_back(dir + "/");
  if (into.empty()) return;
  const auto under = [&](const std::string& rel) {
    return std::any_of(into.begin(), into.end(),
                       [&](const std::string& d) { return rel.rfind(d, 0) == 0; });
  };
  const auto images = tree.images.size(), dirs = tree.dirs.size();
  tree.images.erase(std::remove_if(tree.images.begin(), tree.images.end(), under),
                    tree.images.end());
  tree.dirs.erase(std::remove_if(tree.dirs.begin(), tree.dirs.end(),
                                 [&](const std::string& d) { return under(d + "/"); }),
                  tree.dirs.end());
  tree.ignored += static_cast<int64_t>(images - tree.images.size() + dirs - tree.dirs.size());
}

void validate(const ResizeOptions& o) {
  check_range("--max-size", o.max_size, 1, kMaxJpegSide);
  check_range("--quality", o.quality, 1, 100);
  check_workers(o.workers);
  std::error_code ec;
  if (!fs::is_directory(o.src, ec)) FASTER_THROW("--src is not a directory: ", o.src.string());
  check_separate_trees(o.src, o.dst);
  if (!o.report.empty() && is_inside(o.report, o.src))
    FASTER_THROW("--report ", o.report.string(), " is inside --src: resize never writes there");
  // --report is checked now, not after the work; inside --dst (made later) it must not take the
  // place of a mirrored image or folder.
  if (!o.report.empty() && !is_inside(o.report, o.dst)) {
    check_output_file(o.report, "--report");
  } else if (!o.report.empty() &&
             (fs::is_directory(o.report, ec) ||
              data::has_image_extension(o.report.filename().string()) ||
              fs::exists(o.src / resolved(o.report).lexically_relative(resolved(o.dst)), ec))) {
    FASTER_THROW("--report ", o.report.string(),
                 " would take the place of a mirrored image or folder: give it another name");
  }
}

}  // namespace

ResizeSummary resize_tree(const ResizeOptions& o) {
  validate(o);
  Timer timer;
  data::ImageTree tree = data::list_image_tree(o.src);
  data::refuse_unread_images(o.src, tree.unread);
  leave_out_links_into(tree, o.src, o.dst);
  std::error_code ec;
  fs::create_directories(o.dst, ec);
  if (!fs::is_directory(o.dst))
    FASTER_THROW("cannot create --dst ", o.dst.string(), ": ", ec.message());
  DirectoryLock lock(o.dst, "'faster resize'");
  const nlohmann::json manifest = check_and_write_manifest(o);
  prepare_destination(o, tree);

  Tally tally;
  const fs::path report = o.report.empty() ? o.dst / kResizeReport : o.report;
  tally.copied_earlier = copied_bad_images(report);
  for (const auto& entry : tree.not_files)  // never opened: reading a FIFO would wait forever
    tally.add_bad(entry.path, "not a regular file (" + entry.kind + ")", /*copied=*/false);
  const int64_t n = static_cast<int64_t>(tree.images.size());
  ResizeState state(o.dst / kResizeState, tree.images);
  std::vector<Worker> workers(static_cast<size_t>(worker_count(o.workers, n)));
  for_each_image("resize", static_cast<int>(workers.size()), n, o.progress,
                 [&](int worker, int64_t i) {
                   const auto index = static_cast<size_t>(i);
                   resize_one(o, tree.images[index], index, state,
                              workers[static_cast<size_t>(worker)], tally);
                 });
  const int64_t removed = state.remove_stale(o.dst, tree.dirs);
  state.compact();

  ResizeSummary s;
  s.files = n + static_cast<int64_t>(tree.not_files.size());
  s.downscaled = tally.downscaled, s.copied = tally.copied, s.up_to_date = tally.up_to_date;
  s.bad = static_cast<int64_t>(tally.bad.size());
  s.ignored = tree.ignored;
  s.removed = removed;
  s.bytes_in = tally.bytes_in, s.bytes_out = tally.bytes_out;
  s.bad_images = std::move(tally.bad);
  std::sort(s.bad_images.begin(), s.bad_images.end(),
            [](const BadImage& a, const BadImage& b) { return a.path < b.path; });
  s.report = report;
  write_report(s.report, s.bad_images);
  write_manifest(o.dst / kResizeManifest, manifest, /*complete=*/true);
  s.seconds = timer.seconds();
  return s;
}

std::string format_summary(const ResizeSummary& s, bool copy_bad) {
  char line[512];
  std::snprintf(line, sizeof line,
                "resize: %lld images in %s (%s img/s): %lld downscaled, %lld copied, "
                "%lld up to date, %lld bad (%s)\n"
                "        %.1f MB in, %.1f MB out; %lld other entries ignored\n",
                static_cast<long long>(s.files), format_duration(s.seconds).c_str(),
                format_count(s.seconds > 0 ? s.files / s.seconds : 0).c_str(),
                static_cast<long long>(s.downscaled), static_cast<long long>(s.copied),
                static_cast<long long>(s.up_to_date), static_cast<long long>(s.bad),
                copy_bad ? "copied unchanged" : "skipped", s.bytes_in / 1e6, s.bytes_out / 1e6,
                static_cast<long long>(s.ignored));
  std::string out = line;
  if (s.removed > 0)
    out += "        " + std::to_string(s.removed) +
           " output(s) of sources gone since the last run removed\n";
  if (s.bad > 0) out += "report: " + s.report.string() + "\n";
  return out;
}

}  // namespace faster::tools

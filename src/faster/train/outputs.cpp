// What a run writes, checked before it trains: a file at --checkpoint, --save or --json is
// replaced only where it is this run's own (a checkpoint being resumed, the weights or report of
// the same settings), or with --overwrite.  Anything else there (another run's files, a finished
// run's checkpoint, a file of the data or of anything else) is refused, saying what it is.
#include <filesystem>
#include <fstream>

#include "faster/core/error.h"
#include "faster/tools/file_io.h"
#include "faster/train/run.h"

namespace faster::train {
namespace fs = std::filesystem;
namespace {

// The options of the run a faster file records (a checkpoint's, saved weights', a --json
// report's), or null, with what the file is in a few words.
struct Found {
  nlohmann::json options;
  std::string what;
  nlohmann::json checkpoint;  // a checkpoint's record (meta.json), null for anything else
};

std::string first_bytes(const fs::path& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

Found identify(const fs::path& path) {
  const std::string head = first_bytes(path, 8);
  if (head.rfind("PK\x03\x04", 0) == 0) {
    try {
      const auto meta = checkpoint_meta(read_state_dict(path), path.string());
      const int done = meta.value("epochs_done", 0);
      const auto options = meta.value("options", nlohmann::json::object());
      return {options,
              "a faster checkpoint of " + meta.value("model", std::string("?")) + " (" +
                  std::to_string(done) + " of " + std::to_string(options.value("epochs", done)) +
                  " epochs)",
              meta};
    } catch (const Error&) {
    }
    if (const auto meta = read_weights_meta(path); meta.is_object())
      return {meta.value("options", nlohmann::json::object()),
              "weights faster saved for " + meta.value("model", std::string("?"))};
    return {nullptr, "a PyTorch archive faster did not write"};
  }
  if (head.rfind("\xFF\xD8\xFF", 0) == 0) return {nullptr, "a JPEG image"};
  if (head.rfind("\x89PNG", 0) == 0) return {nullptr, "a PNG image"};
  if (!head.empty() && head[0] == '{') {
    const auto report = tools::read_json_file(path);
    if (report.is_object() && report.contains("options") && report.contains("epochs"))
      return {report["options"],
              "a faster train report of " + report.value("model", std::string("?"))};
  }
  return {nullptr, "a file faster did not write"};
}

// What makes another run of `saved` than `now`: its model and the settings that decide its data
// order and updates (its epochs may grow: the same run, trained on).  Empty for the same run.
std::string differences(const nlohmann::json& saved, const nlohmann::json& now) {
  std::string d = changed_settings(saved, now);
  const std::string was = saved.value("model", ""), is = now.value("model", "");
  if (was != is) d = "model " + is + " (was " + was + ")" + (d.empty() ? "" : ", " + d);
  return d;
}

bool same_run(const nlohmann::json& saved, const nlohmann::json& now) {
  return saved.is_object() && differences(saved, now).empty();
}

[[noreturn]] void refuse(const char* flag, const fs::path& path, const std::string& what,
                         const std::string& hint) {
  throw Error(std::string(flag) + " " + path.string() + " holds " + what + ": it would be replaced",
              hint + (hint.empty() ? "" : "; ") + "--overwrite replaces it, or name another file");
}

void check_checkpoint(const TrainOptions& o, const nlohmann::json& now) {
  const fs::path path = o.checkpoint;
  std::error_code ec;
  if (o.checkpoint.empty() || !fs::exists(path, ec)) return;
  if (!o.resume.empty() && fs::equivalent(path, o.resume, ec)) return;  // the run goes on in it
  const Found found = identify(path);
  if (!found.options.is_object()) refuse("--checkpoint", path, found.what, "");
  const std::string resume = "--resume " + path.string();
  if (!same_run(found.options, now))
    refuse("--checkpoint", path,
           found.what + " of another run (" + differences(found.options, now) + ")",
           resume + " goes on with that run");
  if (found.checkpoint.value("epochs_done", 0) >= found.options.value("epochs", 0))
    refuse("--checkpoint", path, "this run, finished: " + found.what,
           resume + " --epochs N trains it on, 'faster eval --weights " + path.string() +
               "' scores it");
  refuse("--checkpoint", path, "this run's saved epochs: " + found.what,
         resume + " goes on from there");
}

// --save and --json: this run's own file is written again; any other is refused.
void check_file(const char* flag, const std::string& file, const nlohmann::json& now) {
  const fs::path path = file;
  std::error_code ec;
  if (file.empty() || !fs::exists(path, ec) || fs::is_directory(path, ec)) return;
  const Found found = identify(path);
  if (same_run(found.options, now)) return;
  refuse(flag, path,
         found.options.is_object()
             ? found.what + " of another run (" + differences(found.options, now) + ")"
             : found.what,
         "");
}

}  // namespace

void check_outputs(const TrainOptions& o, const nlohmann::json& now) {
  if (o.overwrite) return;
  std::error_code ec;
  if (!o.profile.empty() && fs::exists(o.profile, ec)) refuse("--profile", o.profile, "a file", "");
  // A bare resume writes its checkpoint's run's outputs: restore() refuses other settings there.
  if (o.outputs_from_checkpoint) return;
  check_checkpoint(o, now);
  check_file("--save", o.save, now);
  check_file("--json", o.json, now);
  // --output-dir: torchvision's checkpoint.pth of another run (torchvision's own, or faster's) is
  // not replaced by a new run; a resumed one writes on in it.
  const auto torchvision = fs::path(o.output_dir) / "checkpoint.pth";
  if (!o.output_dir.empty() && o.resume.empty() && fs::exists(torchvision, ec))
    refuse("--output-dir", o.output_dir, "a run's checkpoint.pth and model_N.pth", "");
}

}  // namespace faster::train

// Atomic writing for the dataset tools: writes go to a hidden temporary name beside the target and
// are renamed into place, so a crash, Ctrl-C or full disk never leaves a half-written file under a
// final name.  (Source images are read with data::read_regular_file.)
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

namespace faster::tools {

// The temporary name a write to `final_path` goes through: ".<name>.faster-tmp", same directory.
std::filesystem::path temp_path_for(const std::filesystem::path& final_path);
// Whether a directory entry is a temporary left by an interrupted write.
bool is_temp_name(const std::string& file_name);

// Writes `size` bytes to `final_path` atomically (temp + rename).  On failure the temporary is
// removed, whatever was under final_path before is untouched, and faster::Error names the path
// and the system's reason (for example "No space left on device").  `before_rename`, if given,
// sees the complete temporary's stat just before the rename (an exception from it cancels).
// `durable`: the data reaches the disk before the rename, and the rename after it (fsync of the
// file, then of its folder), so a power loss leaves the old file or the new one, not an empty one
// under the new name; for checkpoints, not for the many small files of the dataset tools.
void write_file_atomic(const std::filesystem::path& final_path, const uint8_t* data, size_t size,
                       const std::function<void(const struct stat&)>& before_rename = {},
                       bool durable = false);
inline void write_file_atomic(const std::filesystem::path& final_path, const std::string& text) {
  write_file_atomic(final_path, reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

// Checks, before long work starts, that `path` can become a file: not a folder, in a folder that
// exists and may be written.  Throws faster::Error naming `flag` and the path.
void check_output_file(const std::filesystem::path& path, const std::string& flag);
// The same for a folder that is created with its parents when missing: the nearest of it and its
// parents that exists is a folder that may be written.
void check_output_dir(const std::filesystem::path& dir, const std::string& flag);
// An output file whose folder is made with its parents where missing (as an output folder is):
// check_output_path checks, before any work, that the path is no folder and that its folder can
// be made (check_output_dir's rule); make_parent_folders makes it, once the work may write;
// prepare_output_file does both.  Train's, eval's and load's outputs.
void check_output_path(const std::filesystem::path& path, const std::string& flag);
void make_parent_folders(const std::filesystem::path& path, const std::string& flag);
void prepare_output_file(const std::filesystem::path& path, const std::string& flag);

// Writes a tool's manifest (data::kTreeManifests) atomically with "complete": `complete`: false
// before the run works on its tree, true once it has finished, so that a tree a run stopped in is
// not read as whole (data::check_tree_finished).
void write_manifest(const std::filesystem::path& path, nlohmann::json manifest, bool complete);

// The JSON in `path` (a tool's manifest); null when the file cannot be read, a discarded value when
// it is not JSON: either way not an object, which is what the callers check.
nlohmann::json read_json_file(const std::filesystem::path& path);

// A tool that re-runs into its own tree (export, synth) refuses `out` when anything in it, at any
// depth, is neither in `own` (paths relative to `out`) nor one of the tools' temporaries: loaders
// would read a stray file as data.  faster::Error "--out OUT holds REL, which `not_ours`", with a
// hint that `tool` never mixes its files with others.
void refuse_foreign_entries(const std::filesystem::path& out,
                            const std::unordered_set<std::string>& own, const std::string& not_ours,
                            const std::string& tool);

// Creates `dir` (its parent must exist) unless it is already a directory, and removes the
// temporaries an interrupted run left in it.  Throws faster::Error naming the directory when a
// file of that name is in the way or it cannot be created.
void prepare_output_directory(const std::filesystem::path& dir);

// Whether the file at `path`, `size` bytes long, ends with the JPEG end-of-image marker: a cheap
// test that an output written earlier was not cut short or emptied since.
bool ends_with_jpeg_eoi(const std::filesystem::path& path, int64_t size);

// Removes a file or a whole directory tree (symbolic links are removed, never followed); errors
// are ignored (clean-up paths).  Not std::filesystem::remove_all: LibTorch 2.x's libtorch.so
// exports its own copy of that symbol, and a call bound to it crashed (a jump to address 0, seen
// with LibTorch 2.11 on the GPU machine).
void remove_tree(const std::filesystem::path& path) noexcept;

// fsyncs a directory, so that renames in it survive a power loss.
void sync_directory(const std::filesystem::path& dir);

// An exclusive advisory lock on a directory, held while the object lives: two runs writing into
// the same destination would race on the same temporary names.
class DirectoryLock {
 public:
  // Throws faster::Error if another process holds it; `what` names the holder in the message.
  DirectoryLock(const std::filesystem::path& dir, const std::string& what);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

// The system's message for errno `code` ("No space left on device").
std::string errno_text(int code);

}  // namespace faster::tools

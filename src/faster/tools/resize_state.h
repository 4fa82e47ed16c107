// What each output of `faster resize` was made from, so a re-run redoes exactly the outputs whose
// source changed.  "Newer than its source" is not enough: a source replaced by another image with
// an older time (`cp -p`, `rsync -t`) would keep its stale output.  Like rsync's quick check, a
// source counts as unchanged when its size and modification time (to the nanosecond) are those it
// had when its output was made.
//
// The record is a journal in the destination, one line appended per output just before the output
// is renamed into place: source size and mtime, the output's own inode and mtime, and for the
// copy of a bad image (--copy-bad) why the image is bad, so that every later run reports it again
// however the run that made it ended.  The output's
// identity ties the line to the file it describes, so a run killed between the two steps (line
// written, output not renamed) leaves an old output that does not match its line and is redone,
// and a killed run never loses an output that was renamed.  After a run the journal is rewritten
// with one line per output.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "faster/core/fd.h"

namespace faster::tools {

class ResizeState {
 public:
  // Reads the journal at `path` (if any) for `images`, the sorted source paths of this run, and
  // opens it for appending.  Lines for other paths are outputs of sources gone (deleted, renamed):
  // remove_stale() deletes them.  A damaged line only costs a redo.
  ResizeState(const std::filesystem::path& path, const std::vector<std::string>& images);

  // Whether the output of images[i], stat'ed as `out`, was made from its source as `in` is now.
  bool up_to_date(size_t i, const struct stat& in, const struct stat& out) const;
  // Records that the complete temporary stat'ed as `out` is made from images[i] as stat'ed in
  // `in` (a copy of it unchanged where `bad` says why it is a bad image); call before renaming it
  // into place.  Thread-safe.  Throws faster::Error if the journal cannot be written.
  void record(size_t i, const struct stat& in, const struct stat& out, const std::string& bad = "");
  // Why images[i]'s recorded output is a bad image's copy; empty for an image made well.
  const std::string& bad_copy(size_t i) const { return stamps_[i].bad; }
  // Deletes the output of images[i] at `output` if it is the file recorded for it (made by a run
  // from an earlier version of the source, which is now bad), and forgets it.  Thread-safe for
  // distinct i.
  void remove_output(size_t i, const std::filesystem::path& output);
  // Deletes the recorded outputs, under `dst`, of sources this run no longer has, where each is
  // still the file recorded (a file put there since is left alone), then the folders that leaves
  // empty and `keep` (the mirrored folders, relative) does not name.  Returns the files deleted.
  int64_t remove_stale(const std::filesystem::path& dst, const std::vector<std::string>& keep);
  // Rewrites the journal with one line per recorded output (atomically).
  void compact();

 private:
  struct Stamp {
    int64_t src_size = -1, src_mtime = 0, out_inode = 0, out_mtime = 0;
    std::string bad;  // why the source is bad, for a copy of it
  };
  static std::string line(const Stamp& s, const std::string& path);

  std::filesystem::path path_;
  const std::vector<std::string>& images_;
  std::vector<Stamp> stamps_;          // by image index; src_size -1: none
  std::map<std::string, Stamp> gone_;  // the last line of each source this run does not have
  std::mutex mutex_;
  Fd journal_;
};

// A path or message as one field of a tab-separated line: backslash, tab, newline and carriage
// return written as \\, \t, \n, \r (so a file name holding them keeps its line); and back.
std::string tsv_field(const std::string& text);
std::string tsv_unfield(const std::string& field);

}  // namespace faster::tools

// Where the dataset tools may write: source and destination trees kept apart.  (Trees are read
// through data::list_image_tree, the walker the loader uses too.)
#pragma once

#include <filesystem>
#include <string>

#include "faster/core/file.h"  // resolved()

namespace faster::tools {

// Refuses source and destination trees that are the same or nested in either direction: a
// destination inside the source would be read back as input, and a source inside the destination
// could have its own files overwritten by mirrored outputs.  Symlinks are resolved first.
// dst_flag and src_flag name the trees in messages ("--dst", "--out"; "--src", "--data").
void check_separate_trees(const std::filesystem::path& src, const std::filesystem::path& dst,
                          const std::string& dst_flag = "--dst",
                          const std::string& src_flag = "--src");
// Whether `path` is `dir` or below it, symlinks resolved.
bool is_inside(const std::filesystem::path& path, const std::filesystem::path& dir);

}  // namespace faster::tools

// Dataset path resolution.
#include "faster/data/sources/open_source.h"

#include "faster/core/error.h"
#include "faster/data/sources/folder_source.h"
#include "faster/data/sources/lmdb_source.h"

namespace faster::data {
namespace fs = std::filesystem;

bool is_lmdb_path(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path / "data.mdb", ec) ||
         (fs::is_regular_file(path, ec) && path.extension() == ".mdb");
}

std::shared_ptr<const Source> open_source(const fs::path& path, bool val, std::string* note) {
  std::error_code ec;
  if (!fs::exists(path, ec)) FASTER_NOT_FOUND("dataset ", path.string(), " does not exist");
  if (is_lmdb_path(path)) return std::make_shared<LmdbSource>(path);
  // A root's split: a folder of class folders, or an LMDB ("a root may hold LMDBs").
  const fs::path split = path / (val ? "val" : "train");
  if (fs::is_directory(split, ec) && (!val || fs::is_directory(path / "train", ec))) {
    if (note) *note = "using " + split.string();
    if (is_lmdb_path(split)) return std::make_shared<LmdbSource>(split);
    return std::make_shared<FolderSource>(split);
  }
  return std::make_shared<FolderSource>(path);
}

}  // namespace faster::data

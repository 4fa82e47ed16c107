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
  if (!fs::exists(path, ec)) FASTER_THROW("dataset ", path.string(), " does not exist");
  if (is_lmdb_path(path)) return std::make_shared<LmdbSource>(path);
  const fs::path split = path / (val ? "val" : "train");
  if (fs::is_directory(split, ec) && fs::is_directory(path / (val ? "train" : "val"), ec)) {
    if (note) *note = "using " + split.string();
    return std::make_shared<FolderSource>(split);
  }
  if (fs::is_directory(split, ec) && !val) {
    if (note) *note = "using " + split.string();
    return std::make_shared<FolderSource>(split);
  }
  return std::make_shared<FolderSource>(path);
}

}  // namespace faster::data

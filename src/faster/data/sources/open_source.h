// Opens what the user named as a dataset: an LMDB database written by `faster pack` (a data.mdb
// file or its folder) or an ImageFolder tree; a root holding train/ and val/ opens the split asked
// for.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "faster/data/sources/source.h"

namespace faster::data {

// `note` (optional) receives what was chosen when it is not `path` itself ("using ROOT/train").
std::shared_ptr<const Source> open_source(const std::filesystem::path& path, bool val,
                                          std::string* note = nullptr);

bool is_lmdb_path(const std::filesystem::path& path);

}  // namespace faster::data

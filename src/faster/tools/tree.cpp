// Source/destination separation, symlinks resolved.
#include "faster/tools/tree.h"

#include "faster/core/error.h"

namespace faster::tools {
namespace fs = std::filesystem;

namespace {
bool inside(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

}  // namespace

bool is_inside(const fs::path& path, const fs::path& dir) {
  return inside(resolved(path), resolved(dir));
}

void check_separate_trees(const fs::path& src, const fs::path& dst, const std::string& dst_flag,
                          const std::string& src_flag) {
  const fs::path s = resolved(src), d = resolved(dst);
  if (s == d) FASTER_THROW(dst_flag, " is the same folder as ", src_flag, ": ", d.string());
  if (inside(d, s))
    throw Error(detail::concat(dst_flag, " ", d.string(), " is inside ", src_flag, " ", s.string()),
                "choose a destination outside the source tree");
  if (inside(s, d))
    throw Error(detail::concat(src_flag, " ", s.string(), " is inside ", dst_flag, " ", d.string(),
                               ": outputs could overwrite source files"),
                "choose a destination outside the source tree");
}

}  // namespace faster::tools

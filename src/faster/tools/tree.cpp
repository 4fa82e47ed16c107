// Dataset tree walking.
#include "faster/tools/tree.h"

#include <algorithm>
#include <cctype>

#include "faster/core/error.h"

namespace faster::tools {
namespace fs = std::filesystem;

bool has_jpeg_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg";
}

TreeListing list_jpeg_tree(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) FASTER_THROW("not a directory: ", root.string());
  TreeListing out;
  fs::recursive_directory_iterator it(root, ec), end;
  if (ec) FASTER_THROW("cannot list ", root.string(), ": ", ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) FASTER_THROW("cannot list ", it->path().string(), ": ", ec.message());
    const fs::path& p = it->path();
    const std::string rel = p.lexically_relative(root).string();
    if (p.filename().string()[0] == '.') {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      out.dirs.push_back(rel);
    } else if (it->is_regular_file(ec) && has_jpeg_extension(p)) {
      out.files.push_back(rel);
    } else {
      ++out.ignored;
    }
  }
  if (ec) FASTER_THROW("cannot list ", root.string(), ": ", ec.message());
  // Sorted paths put every directory after its parent, so creating them in order works.
  std::sort(out.dirs.begin(), out.dirs.end());
  std::sort(out.files.begin(), out.files.end());
  return out;
}

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

void check_separate_trees(const fs::path& src, const fs::path& dst) {
  std::error_code ec;
  const fs::path s = fs::weakly_canonical(fs::absolute(src), ec);
  const fs::path d = fs::weakly_canonical(fs::absolute(dst), ec);
  if (s == d) FASTER_THROW("--dst is the same folder as --src: ", d.string());
  if (inside(d, s))
    throw Error(detail::concat("--dst ", d.string(), " is inside --src ", s.string()),
                "choose a destination outside the source tree");
  if (inside(s, d))
    throw Error(detail::concat("--src ", s.string(), " is inside --dst ", d.string(),
                               ": mirrored outputs could overwrite source files"),
                "choose a destination outside the source tree");
}

}  // namespace faster::tools

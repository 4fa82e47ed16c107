// Dataset tree walking.
#include "faster/tools/tree.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

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
  // Directories entered so far, by identity: a symlink cycle (or a second link to the same
  // folder) is entered once instead of forever.
  std::set<std::pair<dev_t, ino_t>> entered;
  const auto first_visit = [&entered](const fs::path& dir) {
    struct stat st;
    return ::stat(dir.c_str(), &st) == 0 && entered.insert({st.st_dev, st.st_ino}).second;
  };
  first_visit(root);
  fs::recursive_directory_iterator it(root, fs::directory_options::follow_directory_symlink, ec);
  for (const fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const bool dir = it->is_directory(ec);
    if (p.filename().string()[0] == '.' || (dir && !first_visit(p))) {
      if (dir) it.disable_recursion_pending();
      if (p.filename().string()[0] != '.') ++out.ignored;
      continue;
    }
    if (dir) {
      out.dirs.push_back(p.lexically_relative(root).string());
    } else if (it->is_regular_file(ec) && has_jpeg_extension(p)) {
      out.files.push_back(p.lexically_relative(root).string());
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

fs::path resolved(const fs::path& p) {
  std::error_code ec;
  return fs::weakly_canonical(fs::absolute(p), ec);
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

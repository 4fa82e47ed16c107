// Opening and checking the training data.
#include "faster/train/training_data.h"

#include <algorithm>
#include <filesystem>

#include "faster/core/error.h"
#include "faster/core/file.h"
#include "faster/data/sources/array_source.h"
#include "faster/data/sources/folder_source.h"
#include "faster/data/sources/lmdb_source.h"
#include "faster/data/sources/open_source.h"

namespace faster::train {
namespace fs = std::filesystem;
namespace {

std::string join(const std::vector<std::string>& names, size_t max = 5) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < max; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s;
}

// Every training class must have images: a class never seen cannot be learned, and an empty
// folder is more often a mistake than a choice (torchvision refuses it too).
void check_no_empty_class(const data::Source& train, const std::string& where,
                          const std::string& hint) {
  std::vector<int64_t> count(train.classes().size(), 0);
  for (int64_t i = 0; i < train.size(); ++i) {
    // A damaged LMDB record may hold a label outside the classes: reading it reports it as a bad
    // image (the loader skips it); it counts for no class here.
    const int label = train.label(i);
    if (label >= 0 && label < static_cast<int>(count.size())) ++count[label];
  }
  std::vector<std::string> empty;
  for (size_t c = 0; c < count.size(); ++c)
    if (count[c] == 0) empty.push_back(train.classes()[c]);
  if (!empty.empty())
    throw NotFoundError(where + ": class " + join(empty) + " has no training images", hint);
}

// val's labels must mean train's classes: the same names in the same order.
void check_same_classes(const data::Source& train, const data::Source& val,
                        const std::string& train_where, const std::string& val_where) {
  const auto& t = train.classes();
  const auto& v = val.classes();
  if (t == v) return;
  std::vector<std::string> extra, missing;
  for (const auto& c : v)
    if (std::find(t.begin(), t.end(), c) == t.end()) extra.push_back(c);
  for (const auto& c : t)
    if (std::find(v.begin(), v.end(), c) == v.end()) missing.push_back(c);
  if (!extra.empty())
    FASTER_THROW(val_where, " has classes that ", train_where, " lacks: ", join(extra));
  throw Error(val_where + " lacks classes of " + train_where + ": " + join(missing),
              "a label is the class's position in the sorted list, so both splits need every "
              "class (an empty folder will do for val)");
}

std::vector<std::string> subfolders(const fs::path& dir) {
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A folder of folders that is neither kind is most likely one split of an image dataset (class
// folders) or a root whose splits are named otherwise: say which layout faster reads.
[[noreturn]] void refuse_folder_of_folders(const fs::path& given,
                                           const std::vector<std::string>& folders) {
  const fs::path whole = fs::absolute(given).lexically_normal();  // "train", "a/train/"
  const fs::path dir = whole.has_filename() ? whole : whole.parent_path();
  const std::string name = dir.filename().string();
  std::error_code ec;
  const bool a_split =
      (name == "train" || name == "val") && fs::is_directory(dir.parent_path() / "train", ec);
  throw Error(given.string() +
                  ": no train/ folder, and no small dataset (Fashion-MNIST/MNIST idx files, "
                  "CIFAR-10 batches); it holds folders " +
                  join(folders),
              a_split ? "this is one split: pass the folder above it, " +
                            dir.parent_path().string() + ", which holds train/ (and val/)"
                      : "an image dataset is ROOT/train/<class>/* with ROOT/val/<class>/*: if "
                        "these folders are the classes, move them into a train/ folder");
}

}  // namespace

std::shared_ptr<const data::Source> open_split(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) FASTER_NOT_FOUND("dataset ", path, " does not exist");
  if (data::is_lmdb_path(path)) return std::make_shared<data::LmdbSource>(path);
  return std::make_shared<data::FolderSource>(path, /*warn_empty=*/false);
}

TrainingData open_one_split(const std::string& path, bool train, std::string* note) {
  TrainingData d;
  std::error_code ec;
  if (!fs::exists(path, ec)) FASTER_NOT_FOUND("dataset ", path, " does not exist");
  auto source = data::open_source(path, !train, note);
  d.classes = source->classes();
  if (train) {
    check_no_empty_class(*source, path, "remove the empty class folder, or add its images");
    d.train = std::move(source);
  } else {
    d.val = std::move(source);
  }
  return d;
}

TrainingData open_training_data(const std::string& data, const std::string& val_data,
                                int64_t train_limit, int64_t val_limit) {
  TrainingData d;
  std::error_code ec;
  const fs::path root(data);
  // One split of class folders with --val-data beside it (torchvision's ImageFolder(train) and
  // ImageFolder(val)) is the training split itself.
  // (A class named "train" holds images, not class folders as a root's train/ does, nor is it an
  // LMDB; a root's own val/ is not beside it.)
  const bool split_with_val =
      !val_data.empty() && fs::is_directory(root, ec) && !data::is_lmdb_path(root) &&
      !data::is_small_dataset(root) && !subfolders(root).empty() &&
      (!fs::is_directory(root / "train", ec) ||
       (subfolders(root / "train").empty() && !data::is_lmdb_path(root / "train"))) &&
      !fs::equivalent(resolved(val_data).parent_path(), root, ec);
  const bool images =
      data::is_lmdb_path(root) || fs::is_directory(root / "train", ec) || split_with_val;
  if (!images) {
    if (fs::is_directory(root, ec) && !data::is_small_dataset(root))
      if (const auto folders = subfolders(root); !folders.empty())
        refuse_folder_of_folders(root, folders);
    if (!val_data.empty())
      FASTER_THROW("--val-data applies to JPEG datasets (", data, " is a small array dataset)");
    auto tt = data::load_small_dataset(root);
    tt.train.truncate(train_limit);
    tt.test.truncate(val_limit);
    d.train_arrays = std::make_shared<const data::ArrayDataset>(std::move(tt.train));
    d.val_arrays = std::make_shared<const data::ArrayDataset>(std::move(tt.test));
    d.train = std::make_shared<data::ArraySource>(d.train_arrays);
    d.val = std::make_shared<data::ArraySource>(d.val_arrays);
    d.classes = d.train->classes();
    check_no_empty_class(*d.train, data,
                         train_limit > 0 ? "--train-limit " + std::to_string(train_limit) +
                                               " keeps the first images only: raise it so that "
                                               "every class has some"
                                         : "every class needs training images");
    return d;
  }
  if (train_limit > 0 || val_limit > 0)
    FASTER_THROW("--train-limit and --test-limit apply to the small array datasets, not to ", data);
  const std::string train_path =
      data::is_lmdb_path(root) || split_with_val ? root.string() : (root / "train").string();
  d.train = open_split(train_path);
  std::string val_path = val_data;
  if (val_path.empty() && !data::is_lmdb_path(root) && fs::exists(root / "val", ec))
    val_path = (root / "val").string();
  if (!val_path.empty()) d.val = open_split(val_path);
  d.classes = d.train->classes();
  if (d.classes.size() < 2)
    FASTER_THROW(train_path, ": ", d.classes.size(), " class(es); training needs at least 2");
  check_no_empty_class(*d.train, train_path, "remove the empty class folder, or add its images");
  if (d.val) check_same_classes(*d.train, *d.val, train_path, val_path);
  return d;
}

}  // namespace faster::train

// `faster export` implementation: check the options and the destination, read the dataset whole,
// record what the tree holds in a manifest, then encode and write images in parallel, each one
// atomically, skipping those an earlier run finished.
#include "faster/tools/export.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <optional>
#include <string>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "faster/core/error.h"
#include "faster/core/parallel.h"
#include "faster/core/progress.h"
#include "faster/core/timer.h"
#include "faster/data/decode/jpeg_encoder.h"
#include "faster/tools/file_io.h"
#include "faster/tools/image_loop.h"
#include "faster/tools/tree.h"

namespace faster::tools {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kFashionMnistClasses = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
const std::vector<std::string> kCifar10Classes = {
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};

int digits(int64_t value) {
  return static_cast<int>(std::to_string(std::max<int64_t>(value, 0)).size());
}

// One split of the tree: where it goes and what it holds.
struct Split {
  const data::ArrayDataset* images;
  fs::path dir;        // OUT/train or OUT/val
  int64_t full_count;  // before --limit: file names are as wide as for the whole split
};

// What identifies the dataset a tree was made from, wherever its files are: format, sizes, and a
// CRC-32 of every pixel and label (before --limit).
nlohmann::json dataset_identity(const data::TrainTest& tt) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (const data::ArrayDataset* ds : {&tt.train, &tt.test}) {
    crc = crc32_z(crc, ds->images.data(), ds->images.size());
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(ds->labels.data()),
                  ds->labels.size() * sizeof(ds->labels[0]));
  }
  char hex[16];
  std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(crc));
  return {{"format", tt.format},
          {"train", tt.train.n},
          {"test", tt.test.n},
          {"shape", {tt.train.channels, tt.train.height, tt.train.width}},
          {"crc32", hex}};
}

// An OUT that exists must be a folder that is empty or holds an export (checked in full later).
void check_destination_kind(const fs::path& out) {
  std::error_code ec;
  const fs::file_status st = fs::status(out, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_directory(st))
    throw Error(detail::concat("--out ", out.string(), " is a file, not a folder"),
                "choose a new folder, or an earlier export of the same dataset to resume it");
  if (fs::exists(out / kExportManifest, ec)) return;
  const bool empty = fs::is_empty(out, ec);
  if (ec) FASTER_THROW("cannot list --out ", out.string(), ": ", ec.message());
  if (!empty)
    throw Error(
        detail::concat("--out ", out.string(), " is not empty and holds no faster export (no ",
                       kExportManifest, ")"),
        "choose a new or empty folder: export never mixes its files with others");
}

// Refuses to add to a tree made from another dataset or with other options (its finished files
// would be kept as they are); returns this run's manifest.
nlohmann::json checked_manifest(const ExportOptions& o, const nlohmann::json& identity,
                                const std::vector<std::string>& folders, int64_t largest_split) {
  const fs::path path = o.out / kExportManifest;
  const nlohmann::json options = {{"quality", o.quality}, {"limit", o.limit}};
  std::error_code ec;
  if (fs::exists(path, ec)) {
    const nlohmann::json before = read_json_file(path);
    const auto field = [&before](const char* key) {
      return before.is_object() ? before.value(key, nlohmann::json()) : nlohmann::json();
    };
    if (field("tool") != "faster export")
      FASTER_THROW("--out ", o.out.string(), ": ", kExportManifest,
                   " is not a faster export manifest");
    if (field("dataset") != identity || field("classes") != nlohmann::json(folders))
      throw Error(detail::concat("--out ", o.out.string(), " holds an export of another dataset (",
                                 field("dataset").dump(), " from ", field("source").dump(), ")"),
                  "use another --out, or delete this one to start over");
    nlohmann::json before_options = field("options");
    // An earlier run's --limit that kept every image was no limit (recorded as given then).
    if (before_options.is_object() && before_options.value("limit", int64_t{0}) >= largest_split)
      before_options["limit"] = 0;
    if (before_options != options)
      throw Error(detail::concat("--out ", o.out.string(), " was made with options ",
                                 field("options").dump(), ", this run asks for ", options.dump()),
                  "use another --out, or delete this one to start over");
  }
  const nlohmann::json manifest = {{"tool", "faster export"},
                                   {"source", fs::absolute(o.data).lexically_normal().string()},
                                   {"dataset", identity},
                                   {"classes", folders},
                                   {"options", options}};
  return manifest;
}

// A re-run adds to its own tree only: anything in OUT this export would not write (a stray file, a
// class folder of another dataset) is refused, since loaders would read it as data.  Its own
// temporaries (left by a kill; removed before writing) are allowed.
void check_only_export_files(const fs::path& out, const Split (&splits)[2],
                             const std::vector<std::string>& folders) {
  std::unordered_set<std::string> expected = {kExportManifest};
  for (const Split& split : splits) {
    const std::string name = split.dir.filename().string();
    expected.insert(name);
    for (const auto& folder : folders) expected.insert(name + "/" + folder);
    const data::ArrayDataset& ds = *split.images;
    for (int64_t i = 0; i < ds.n; ++i)
      expected.insert(name + "/" + folders[static_cast<size_t>(ds.labels[static_cast<size_t>(i)])] +
                      "/" + export_file_name(i, split.full_count));
  }
  refuse_foreign_entries(out, expected, "this export does not write", "export");
}

// A file written by an earlier run is finished: it only ever appears whole under its name, and
// it still ends with the JPEG end-of-image marker (not emptied or cut short since).
bool finished(const fs::path& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ends_with_jpeg_eoi(path, st.st_size);
}

// Image i of ds as an interleaved view: grey images are used in place, CIFAR's planar RGB is
// interleaved into `hwc`.
data::ImageView image_view(const data::ArrayDataset& ds, int64_t i, data::ImageBuffer& hwc) {
  const uint8_t* planes = ds.images.data() + i * ds.image_bytes();
  if (ds.channels == 1) return {planes, ds.width, ds.height, 1, static_cast<size_t>(ds.width)};
  hwc.reshape(ds.width, ds.height, ds.channels);
  const int64_t plane = int64_t{ds.width} * ds.height;
  uint8_t* px = hwc.data();
  for (int64_t p = 0; p < plane; ++p)
    for (int c = 0; c < ds.channels; ++c) *px++ = planes[c * plane + p];
  return hwc.view();
}

// Per-thread state: each worker owns its encoder and buffers, reused image after image.
struct Worker {
  data::JpegEncoder encoder;
  data::ImageBuffer hwc;
  std::vector<uint8_t> jpeg;
};

struct Tally {
  std::atomic<int64_t> written{0}, up_to_date{0}, bytes{0};
};

void export_one(const Split& split, const std::vector<std::string>& folders, int64_t i,
                const data::JpegEncodeOptions& encode, Worker& w, Tally& t) {
  const data::ArrayDataset& ds = *split.images;
  const fs::path path = split.dir /
                        folders[static_cast<size_t>(ds.labels[static_cast<size_t>(i)])] /
                        export_file_name(i, split.full_count);
  if (finished(path)) {
    ++t.up_to_date;
    return;
  }
  w.encoder.encode(image_view(ds, i, w.hwc), encode, w.jpeg);
  write_file_atomic(path, w.jpeg.data(), w.jpeg.size());  // errors here stop the run
  ++t.written;
  t.bytes += static_cast<int64_t>(w.jpeg.size());
}

void validate(const ExportOptions& o) {
  check_range("--quality", o.quality, 1, 100);
  check_at_least("--limit", o.limit, 0);  // 0: all
  check_workers(o.workers);
  if (o.out.empty()) FASTER_USAGE_ERROR("faster export needs --out DIR");
  std::error_code ec;
  if (!fs::is_directory(o.data, ec))
    throw Error(detail::concat("--data is not a directory: ", o.data.string()),
                "point --data at a folder of Fashion-MNIST/MNIST idx files or CIFAR-10 batches "
                "(Debian: apt install dataset-fashion-mnist)");
  check_separate_trees(o.data, o.out, "--out", "--data");
  check_destination_kind(o.out);
}

}  // namespace

std::vector<std::string> class_names(const fs::path& data_dir, const data::TrainTest& tt) {
  const int classes = tt.train.classes;
  if (tt.format == "cifar10" && classes == static_cast<int>(kCifar10Classes.size()))
    return kCifar10Classes;
  if (tt.train.fashion_mnist && classes == static_cast<int>(kFashionMnistClasses.size()))
    return kFashionMnistClasses;
  std::vector<std::string> numbers;
  for (int label = 0; label < classes; ++label) numbers.push_back(std::to_string(label));
  return numbers;
}

std::vector<std::string> class_folder_names(const std::vector<std::string>& names) {
  const int width = digits(static_cast<int64_t>(names.size()) - 1);
  std::vector<std::string> folders;
  for (size_t label = 0; label < names.size(); ++label) {
    std::string number = std::to_string(label);
    number.insert(0, static_cast<size_t>(width) - number.size(), '0');
    if (names[label] == std::to_string(label)) {
      folders.push_back(number);
      continue;
    }
    std::string name = names[label];
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
    folders.push_back(number + "_" + name);
  }
  return folders;
}

std::string export_file_name(int64_t index, int64_t count) {
  char name[48];
  std::snprintf(name, sizeof name, "%0*lld.jpg", std::max(5, digits(count - 1)),
                static_cast<long long>(index));
  return name;
}

ExportSummary export_dataset(const ExportOptions& options) {
  validate(options);
  Timer timer;
  data::TrainTest tt = data::load_small_dataset(options.data);
  // A --limit that keeps every image is no limit: recorded as 0, so a re-run without it resumes.
  ExportOptions o = options;
  const int64_t largest_split = std::max(tt.train.n, tt.test.n);
  if (o.limit >= largest_split) o.limit = 0;
  const nlohmann::json identity = dataset_identity(tt);
  const std::vector<std::string> folders = class_folder_names(class_names(o.data, tt));
  const Split splits[2] = {{&tt.train, o.out / "train", tt.train.n},
                           {&tt.test, o.out / "val", tt.test.n}};
  tt.train.truncate(o.limit);
  tt.test.truncate(o.limit);

  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (!fs::is_directory(o.out))
    FASTER_THROW("cannot create --out ", o.out.string(), ": ", ec.message());
  DirectoryLock lock(o.out, "'faster export'");
  const bool again = fs::exists(o.out / kExportManifest, ec);
  const nlohmann::json manifest = checked_manifest(o, identity, folders, largest_split);
  if (again) check_only_export_files(o.out, splits, folders);
  // Every check passed: from here the tree is being written, unfinished until the end.
  write_manifest(o.out / kExportManifest, manifest, /*complete=*/false);
  for (const Split& split : splits) {
    prepare_output_directory(split.dir);
    // Every class gets its folder, even one that --limit leaves empty: labels stay the same.
    for (const auto& folder : folders) prepare_output_directory(split.dir / folder);
  }

  data::JpegEncodeOptions encode;
  encode.quality = o.quality;
  encode.subsampling = data::ChromaSubsampling::k444;  // 32x32 CIFAR images keep their colour edges
  Tally tally;
  const int64_t n = tt.train.n + tt.test.n;
  std::vector<Worker> workers(static_cast<size_t>(worker_count(o.workers, n)));
  for_each_image("export", static_cast<int>(workers.size()), n, o.progress,
                 [&](int worker, int64_t i) {
                   const bool train = i < tt.train.n;
                   export_one(splits[train ? 0 : 1], folders, train ? i : i - tt.train.n, encode,
                              workers[static_cast<size_t>(worker)], tally);
                 });

  ExportSummary s;
  s.dataset = tt.train.name.substr(0, tt.train.name.rfind('/'));
  s.train = tt.train.n, s.val = tt.test.n;
  s.classes = static_cast<int>(folders.size());
  s.written = tally.written, s.up_to_date = tally.up_to_date, s.bytes_written = tally.bytes;
  write_manifest(o.out / kExportManifest, manifest, /*complete=*/true);
  s.seconds = timer.seconds();
  return s;
}

std::string format_summary(const ExportSummary& s, const fs::path& out) {
  char line[512];
  std::snprintf(line, sizeof line,
                "export: %lld images of %s (%lld train, %lld val, %d classes) in %s (%s img/s): "
                "%lld written, %lld up to date, %.1f MB -> %s\n",
                static_cast<long long>(s.train + s.val), s.dataset.c_str(),
                static_cast<long long>(s.train), static_cast<long long>(s.val), s.classes,
                format_duration(s.seconds).c_str(),
                format_count(s.seconds > 0 ? s.written / s.seconds : 0).c_str(),
                static_cast<long long>(s.written), static_cast<long long>(s.up_to_date),
                s.bytes_written / 1e6, out.c_str());
  return line;
}

}  // namespace faster::tools

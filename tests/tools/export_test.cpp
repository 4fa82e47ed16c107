// `faster export`: real Fashion-MNIST and generated CIFAR-10 / MNIST-format fixtures written as
// ImageFolder trees, read back through the loader's FolderSource and compared with the source
// pixels and labels; class folder order; resume; refusals and their one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "faster/core/error.h"
#include "faster/data/decode/jpeg_decoder.h"
#include "faster/data/sources/array_dataset.h"
#include "faster/data/sources/folder_source.h"
#include "faster/tools/export.h"
#include "faster/tools/file_io.h"
#include "tools/tool_fixtures.h"

namespace faster::test {
namespace {
namespace fs = std::filesystem;

// Random bytes from a seeded generator (fixtures differ by seed, are the same on every run).
std::string random_bytes(std::mt19937& rng, size_t n, int bound = 256) {
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() % static_cast<unsigned>(bound));
  return out;
}

// CIFAR-10 binary batches in `dir`: five training batches of `per_batch` records and a test
// batch of `test` records; each record a random label byte and 3072 random pixel bytes (CHW).
void write_cifar10(const fs::path& dir, int per_batch, int test, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto batch = [&rng](int records) {
    std::string bytes;
    for (int r = 0; r < records; ++r) bytes += random_bytes(rng, 1, 10) + random_bytes(rng, 3072);
    return bytes;
  };
  fs::create_directories(dir);
  for (int b = 1; b <= 5; ++b)
    write_file(dir / ("data_batch_" + std::to_string(b) + ".bin"), batch(per_batch));
  write_file(dir / "test_batch.bin", batch(test));
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// Raw (not gzipped) MNIST-format idx files in `dir`: `rows` x `cols` random images.
void write_idx(const fs::path& dir, int train, int test, int rows, int cols, uint32_t seed) {
  std::mt19937 rng(seed);
  fs::create_directories(dir);
  const std::pair<std::string, int> splits[] = {{"train", train}, {"t10k", test}};
  for (const auto& [prefix, n] : splits) {
    write_file(dir / (prefix + "-images-idx3-ubyte"),
               std::string("\0\0\x08\x03", 4) + be32(n) + be32(rows) + be32(cols) +
                   random_bytes(rng, static_cast<size_t>(n) * rows * cols));
    write_file(dir / (prefix + "-labels-idx1-ubyte"),
               std::string("\0\0\x08\x01", 4) + be32(n) + random_bytes(rng, n, 10));
  }
}

tools::ExportSummary run_export(const fs::path& data, const fs::path& out, int64_t limit = 0,
                                int quality = tools::kExportQuality) {
  tools::ExportOptions o;
  o.data = data;
  o.out = out;
  o.limit = limit;
  o.quality = quality;
  o.workers = 2;
  o.progress = false;
  return tools::export_dataset(o);
}

std::vector<std::string> subfolders(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Checks one split of an exported tree against its source: the class folders in label order,
// each holding exactly the files of that label's images, then every image as the loader reads
// it (FolderSource: label, bytes) decoded to the source's size and channels.  Returns the mean
// PSNR and mean absolute error over the images; fills the worst PSNR.
struct PixelError {
  double mean_psnr = 0, min_psnr = INFINITY, mean_abs = 0;
};
PixelError check_split(const fs::path& split_dir, const data::ArrayDataset& ds, int64_t full_count,
                       const std::vector<std::string>& folders) {
  EXPECT_EQ(subfolders(split_dir), folders) << split_dir;
  for (size_t label = 0; label < folders.size(); ++label) {
    std::vector<std::string> want;
    for (int64_t i = 0; i < ds.n; ++i)
      if (ds.labels[static_cast<size_t>(i)] == static_cast<int64_t>(label))
        want.push_back(tools::export_file_name(i, full_count));
    EXPECT_EQ(all_files(split_dir / folders[label]), want) << folders[label];
  }
  const data::FolderSource source(split_dir, /*warn=*/false);
  EXPECT_EQ(source.classes(), folders);
  EXPECT_EQ(source.size(), ds.n);
  PixelError e;
  data::Sample sample;
  data::JpegDecoder decoder;
  data::ImageBuffer image;
  for (int64_t i = 0; i < source.size(); ++i) {
    const int64_t index = std::stoll(fs::path(source.name(i)).stem().string());
    source.get(i, sample);
    EXPECT_EQ(sample.label, ds.labels[static_cast<size_t>(index)]) << source.name(i);
    decoder.decode_all(sample.bytes.data(), sample.bytes.size(), image);
    const data::JpegInfo& info = decoder.info();
    EXPECT_EQ(info.components, ds.channels) << source.name(i);
    EXPECT_EQ(info.color, ds.channels == 1 ? data::JpegColor::kGray : data::JpegColor::kYCbCr);
    EXPECT_EQ(info.width, ds.width);
    EXPECT_EQ(info.height, ds.height);
    // The decoder gives RGB (grey replicated); the source is planar (CHW).
    const uint8_t* src = ds.images.data() + index * ds.image_bytes();
    const int64_t plane = int64_t{ds.width} * ds.height;
    double se = 0, ae = 0;
    for (int64_t p = 0; p < plane; ++p)
      for (int c = 0; c < 3; ++c) {
        const double d =
            double(image.data()[3 * p + c]) - src[(ds.channels == 1 ? 0 : c) * plane + p];
        se += d * d, ae += std::fabs(d);
      }
    const double psnr = 10 * std::log10(255.0 * 255.0 * 3 * plane / std::max(se, 1e-9));
    e.mean_psnr += psnr / ds.n;
    e.min_psnr = std::min(e.min_psnr, psnr);
    e.mean_abs += ae / (3 * plane) / ds.n;
  }
  return e;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// A refusal: exit code 1 and one error line naming `path` (a HINT line may follow it).
void expect_refused(const RunResult& r, const std::string& what, const fs::path& path) {
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::vector<std::string> out = lines(r.output);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out[0].rfind("faster: error: ", 0), 0u) << r.output;
  EXPECT_NE(out[0].find(what), std::string::npos) << r.output;
  EXPECT_NE(out[0].find(path.string()), std::string::npos) << r.output;
  for (size_t i = 1; i < out.size(); ++i) EXPECT_EQ(out[i].rfind("HINT: ", 0), 0u) << r.output;
}

TEST(Export, FashionMnistSubsetMatchesTheSourceImagesAndLabels) {
  REQUIRE_FASHION_MNIST();
  TempDir tmp;
  constexpr int64_t kLimit = 300;
  const tools::ExportSummary s = run_export(fashion_mnist_dir(), tmp / "out", kLimit);
  EXPECT_EQ(s.written, 2 * kLimit);
  EXPECT_EQ(s.train, kLimit);
  EXPECT_EQ(s.val, kLimit);
  EXPECT_EQ(s.classes, 10);
  data::TrainTest tt = data::load_small_dataset(fashion_mnist_dir());
  const int64_t full_train = tt.train.n, full_test = tt.test.n;
  tt.train.truncate(kLimit);
  tt.test.truncate(kLimit);
  const std::vector<std::string> folders = {
      "0_T-shirt_top", "1_Trouser", "2_Pullover", "3_Dress", "4_Coat",
      "5_Sandal",      "6_Shirt",   "7_Sneaker",  "8_Bag",   "9_Ankle_boot"};
  EXPECT_EQ(subfolders(tmp / "out"), (std::vector<std::string>{"train", "val"}));
  // Measured at the default quality 95 over all 70,000 images: mean PSNR 44.7 dB, worst image
  // 42.0 dB, mean absolute error 0.92 grey levels; the bounds leave about 1 dB of margin.
  for (const auto& [dir, ds, full] :
       {std::tuple{"train", &tt.train, full_train}, std::tuple{"val", &tt.test, full_test}}) {
    const PixelError e = check_split(tmp / "out" / dir, *ds, full, folders);
    EXPECT_GE(e.mean_psnr, 43.5) << dir;
    EXPECT_GE(e.min_psnr, 41.0) << dir;
    EXPECT_LE(e.mean_abs, 1.1) << dir;
  }
}

TEST(Export, Cifar10BatchesBecomeColourJpegsInNamedClassFolders) {
  TempDir tmp;
  write_cifar10(tmp / "cifar", 6, 9, 1);
  const tools::ExportSummary s = run_export(tmp / "cifar", tmp / "out");
  EXPECT_EQ(s.train, 30);
  EXPECT_EQ(s.val, 9);
  EXPECT_EQ(s.written, 39);
  EXPECT_EQ(s.dataset, "cifar10");
  const data::TrainTest tt = data::load_small_dataset(tmp / "cifar");
  const std::vector<std::string> folders = {"0_airplane", "1_automobile", "2_bird", "3_cat",
                                            "4_deer",     "5_dog",        "6_frog", "7_horse",
                                            "8_ship",     "9_truck"};
  // Uniform random pixels are the hardest content for JPEG: this fixture measured 35.8 dB mean
  // PSNR and 3.2 levels mean error at quality 95, 4:4:4 (independent random channels, as a
  // planar/interleaved or channel mix-up would compare, are at 7.8 dB).
  for (const auto& [dir, ds] : {std::pair{"train", &tt.train}, std::pair{"val", &tt.test}}) {
    const PixelError e = check_split(tmp / "out" / dir, *ds, ds->n, folders);
    EXPECT_GE(e.mean_psnr, 34.5) << dir;
    EXPECT_LE(e.mean_abs, 3.6) << dir;
  }
}

TEST(Export, MnistFormatIdxGetsNumberedFoldersAndKeepsEmptyClasses) {
  TempDir tmp;
  // 7 rows by 5 columns, so a transposed image would not even have the right size.
  write_idx(tmp / "mnist", 12, 5, 7, 5, 2);
  const tools::ExportSummary s = run_export(tmp / "mnist", tmp / "out");
  EXPECT_EQ(s.written, 17);
  const data::TrainTest tt = data::load_small_dataset(tmp / "mnist");
  const std::vector<std::string> folders = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
  // 5 test images leave at least 5 classes empty: their folders are still there.
  for (const auto& [dir, ds] : {std::pair{"train", &tt.train}, std::pair{"val", &tt.test}}) {
    const PixelError e = check_split(tmp / "out" / dir, *ds, ds->n, folders);
    // Random grey pixels, measured: 42.1 dB mean PSNR, 1.6 levels mean error.
    EXPECT_GE(e.mean_psnr, 41.0) << dir;
    EXPECT_LE(e.mean_abs, 1.9) << dir;
  }
}

TEST(Export, ClassFolderNamesSortInLabelOrder) {
  EXPECT_EQ(tools::class_folder_names({"T-shirt/top", "Ankle boot", "2"}),
            (std::vector<std::string>{"0_T-shirt_top", "1_Ankle_boot", "2"}));
  for (int classes : {2, 10, 11, 12, 100, 101, 1000}) {
    std::vector<std::string> names, numbers;
    for (int label = 0; label < classes; ++label) {
      names.push_back(std::string(1, static_cast<char>('z' - label % 26)) + " class");
      numbers.push_back(std::to_string(label));
    }
    for (const auto& given : {names, numbers}) {
      const std::vector<std::string> folders = tools::class_folder_names(given);
      std::vector<std::string> sorted = folders;
      std::sort(sorted.begin(), sorted.end());  // FolderSource's order, and Python's sorted()
      EXPECT_EQ(sorted, folders) << classes << " classes";
      EXPECT_EQ(folders.back().rfind(std::to_string(classes - 1), 0), 0u) << folders.back();
    }
  }
  EXPECT_EQ(tools::export_file_name(42, 60000), "00042.jpg");
  EXPECT_EQ(tools::export_file_name(42, 100001), "000042.jpg");
}

TEST(Export, ReRunSkipsFinishedFilesAndRemakesMissingOrDamagedOnes) {
  TempDir tmp;
  write_cifar10(tmp / "cifar", 4, 6, 3);
  ASSERT_EQ(run_export(tmp / "cifar", tmp / "out").written, 26);
  const fs::path out = tmp / "out";
  std::vector<std::string> files;
  for (const auto& f : all_files(out))
    if (f[0] != '.') files.push_back(f);
  ASSERT_EQ(files.size(), 26u);
  std::vector<int64_t> before;
  for (const auto& f : files) before.push_back(mtime_ns(out / f));
  // What an interrupted or disturbed run leaves: a missing file, one cut short, a temporary.
  fs::remove(out / files[3]);
  fs::resize_file(out / files[20], 100);
  write_file(tools::temp_path_for(out / files[7]), "half-written");

  const RunResult r =
      run_faster("export --data " + quoted(tmp / "cifar") + " --out " + quoted(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("26 images of cifar10 (20 train, 6 val, 10 classes)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("2 written, 24 up to date"), std::string::npos) << r.output;
  for (size_t i = 0; i < files.size(); ++i) {
    if (i != 3 && i != 20) EXPECT_EQ(mtime_ns(out / files[i]), before[i]) << files[i] << " redone";
    EXPECT_EQ(decoded_size(out / files[i]).width, 32) << files[i];
  }
  for (const auto& f : all_files(out))
    EXPECT_EQ(f.find(".faster-tmp"), std::string::npos) << f << " left behind";
  const tools::ExportSummary again = run_export(tmp / "cifar", out);
  EXPECT_EQ(again.written, 0);
  EXPECT_EQ(again.up_to_date, 26);
  // Files export does not write are refused by name (a re-run took them in, and loaders then saw
  // an eleventh class and a bad image); without them the re-run goes on.
  for (const std::string stray : {"train/zz_extra/1.jpg", "notes.txt", "val/0_airplane/x.jpg"}) {
    fs::create_directories((out / stray).parent_path());
    write_file(out / stray, "not export's");
    const RunResult refused =
        run_faster("export --data " + quoted(tmp / "cifar") + " --out " + quoted(out));
    EXPECT_EQ(refused.exit_code, 1) << refused.output;
    const std::string named = stray == "train/zz_extra/1.jpg" ? "train/zz_extra" : stray;
    EXPECT_NE(refused.output.find("holds " + named + ", which this export does not write"),
              std::string::npos)
        << refused.output;
    // A refused run changed nothing: the tree is still a finished one.
    EXPECT_EQ(tools::read_json_file(out / tools::kExportManifest).value("complete", false), true);
    fs::remove_all(out / fs::path(named));
  }
  EXPECT_EQ(run_export(tmp / "cifar", out).up_to_date, 26);
  // A --limit above the split sizes is no limit: the same export (it was refused as other options).
  const RunResult limited = run_faster("export --data " + quoted(tmp / "cifar") + " --out " +
                                       quoted(out) + " --limit 99999999999");
  EXPECT_EQ(limited.exit_code, 0) << limited.output;
  EXPECT_NE(limited.output.find("0 written, 26 up to date"), std::string::npos) << limited.output;
  // So is such a --limit that an earlier faster recorded as given.
  auto manifest = nlohmann::json::parse(read_file(out / tools::kExportManifest));
  manifest["options"]["limit"] = 99999999999;
  write_file(out / tools::kExportManifest, manifest.dump());
  EXPECT_EQ(run_export(tmp / "cifar", out).up_to_date, 26);
}

// Ctrl-C: the message counts the images on disk exactly (it once said "after 575 of 2200" with
// 576 written: the threads finishing their image after the count was taken).
TEST(Export, AnInterruptCountsTheFilesWritten) {
  REQUIRE_FASHION_MNIST();
  TempDir t;
  const auto out = t / "fm";
  const std::string cmd = std::string(FASTER_BIN) + " export" + fashion_mnist_flag() + " --out " +
                          out.string() + " --limit 3000 --workers 2";
  const auto jpegs = [&] {
    int64_t n = 0;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(out, ec); it != fs::end(it); it.increment(ec))
      n += it->path().extension() == ".jpg";
    return n;
  };
  const int code = signal_when(
      cmd, t / "log", [&](pid_t) { return jpegs() >= 200; }, SIGINT);
  const std::string log = read_file(t / "log");
  ASSERT_EQ(code, 130) << log;
  const auto at = log.find("interrupted (SIGINT) after ");
  ASSERT_NE(at, std::string::npos) << log;
  const int64_t said = std::stoll(log.substr(at + 27));
  EXPECT_EQ(said, jpegs()) << log;
  EXPECT_NE(log.find(" of 6000 images"), std::string::npos) << log;
}

TEST(Export, RefusesBadInputWithAOneLineErrorNamingThePath) {
  TempDir tmp;
  write_cifar10(tmp / "cifar", 2, 2, 4);
  const auto run = [](const fs::path& data, const fs::path& out) {
    return run_faster("export --data " + quoted(data) + " --out " + quoted(out));
  };
  expect_refused(run(tmp / "missing", tmp / "out"), "--data is not a directory", tmp / "missing");
  EXPECT_FALSE(fs::exists(tmp / "out"));
  expect_refused(run(tmp / "cifar", tmp / "cifar/out"), "is inside --data", tmp / "cifar/out");
  expect_refused(run(tmp / "cifar", tmp.path()), "is inside --out", tmp / "cifar");
  write_file(tmp / "file", "not a folder");
  expect_refused(run(tmp / "cifar", tmp / "file"), "is a file", tmp / "file");
  fs::create_directories(tmp / "photos");
  write_file(tmp / "photos/holiday.jpg", "someone else's");
  expect_refused(run(tmp / "cifar", tmp / "photos"), "holds no faster export", tmp / "photos");
  EXPECT_EQ(all_files(tmp / "photos"), std::vector<std::string>{"holiday.jpg"});
  EXPECT_EQ(all_files(tmp / "cifar").size(), 6u) << "nothing written into the source";

  // An export of one dataset is not resumed with another, or with other options.
  run_export(tmp / "cifar", tmp / "out");
  write_cifar10(tmp / "other", 2, 2, 5);
  expect_refused(run(tmp / "other", tmp / "out"), "holds an export of another dataset",
                 tmp / "out");
  try {
    run_export(tmp / "cifar", tmp / "out", 0, 90);
    ADD_FAILURE() << "another --quality was accepted into the same --out";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("was made with options"), std::string::npos) << e.what();
  }
  // A dataset that cannot be read: the error names the file.
  fs::resize_file(tmp / "other/data_batch_2.bin", 100);
  try {
    run_export(tmp / "other", tmp / "out2");
    ADD_FAILURE() << "a truncated batch was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((tmp / "other/data_batch_2.bin").string()),
              std::string::npos)
        << e.what();
  }
}

TEST(Export, HelpExplainsTheFlagsAndTheTree) {
  const RunResult r = run_faster("export --help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* text :
       {"--data", "--out", "--quality", "--limit", "--workers", "OUT/train/<class>/<index>.jpg",
        "OUT/val/<class>/<index>.jpg", "0_T-shirt_top", "Exit codes: 0"})
    EXPECT_NE(r.output.find(text), std::string::npos) << text << " missing from\n" << r.output;
}

}  // namespace
}  // namespace faster::test

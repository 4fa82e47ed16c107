// `faster synth`: deterministic, ImageNet-like sizes and file sizes, learnable labels, atomic tree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "faster/core/error.h"
#include "faster/data/decode/jpeg_decoder.h"
#include "faster/data/decode/jpeg_encoder.h"
#include "faster/tools/file_io.h"
#include "faster/tools/synth.h"
#include "support/test_support.h"

namespace faster::tools {
namespace {
namespace fs = std::filesystem;

// ImageNet train: mean about 470x390 (the figure), roughly one image in five portrait.
// 4000 draws: the means are within +-15 px of that.
TEST(Synth, SizesAreImageNetLike) {
  double w = 0, h = 0, portrait = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    int a, b;
    synth_size(0, i, a, b);
    ASSERT_TRUE(a >= 32 && b >= 32 && a <= 800 && b <= 800) << a << "x" << b;
    w += a, h += b, portrait += b > a;
  }
  EXPECT_NEAR(w / n, 470, 15);
  EXPECT_NEAR(h / n, 390, 15);
  EXPECT_NEAR(portrait / n, 0.2, 0.05);
}

// At quality 90 the files weigh about 80-120 KiB on average, like ImageNet's.
TEST(Synth, FilesCompressLikePhotos) {
  data::ImageBuffer img;
  data::JpegEncoder encoder;
  std::vector<uint8_t> bytes;
  double total = 0;
  const int n = 12;
  for (int i = 0; i < n; ++i) {
    int w, h;
    synth_size(1, i, w, h);
    render_synth_image(1, i % 4, i, w, h, img);
    encoder.encode(img.view(), {}, bytes);
    total += bytes.size() * 470.0 * 390.0 / (double(w) * h);  // normalised to the mean size
  }
  EXPECT_GT(total / n / 1024, 80);
  EXPECT_LT(total / n / 1024, 120);
}

// A model can learn the labels: even a nearest-class-mean classifier on mean colours of a 4x4 grid
// gets most held-out images right (10 classes, chance 10%).
TEST(Synth, LabelsAreLearnable) {
  const int classes = 10, train = 6, test = 4, g = 4;
  auto features = [&](int label, int index) {
    data::ImageBuffer img;
    render_synth_image(2, label, index, 96, 80, img);
    std::vector<double> f(g * g * 3, 0);
    for (int y = 0; y < 80; ++y)
      for (int x = 0; x < 96; ++x)
        for (int c = 0; c < 3; ++c)
          f[((y * g / 80) * g + x * g / 96) * 3 + c] += img.row(y)[x * 3 + c];
    return f;
  };
  std::vector<std::vector<double>> mean(classes, std::vector<double>(g * g * 3, 0));
  for (int c = 0; c < classes; ++c)
    for (int i = 0; i < train; ++i) {
      const auto f = features(c, c * 100 + i);
      for (size_t k = 0; k < f.size(); ++k) mean[c][k] += f[k] / train;
    }
  int correct = 0;
  for (int c = 0; c < classes; ++c)
    for (int i = 0; i < test; ++i) {
      const auto f = features(c, c * 100 + 50 + i);
      int best = -1;
      double best_d = 1e300;
      for (int k = 0; k < classes; ++k) {
        double d = 0;
        for (size_t j = 0; j < f.size(); ++j) d += (f[j] - mean[k][j]) * (f[j] - mean[k][j]);
        if (d < best_d) best_d = d, best = k;
      }
      correct += best == c;
    }
  EXPECT_GE(correct, classes * test * 6 / 10) << correct << " of " << classes * test;
}

TEST(Synth, TreeIsDeterministicAndComplete) {
  test::TempDir a, b;
  SynthOptions o;
  o.classes = 3, o.images = 2, o.val = 1, o.seed = 7, o.workers = 2, o.progress = false;
  o.out = a.path();
  const SynthSummary s = synth_dataset(o);
  EXPECT_EQ(s.files, 9);
  o.out = b.path();
  synth_dataset(o);
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(a.path())) {
    if (!e.is_regular_file() || e.path().filename() == ".faster-synth.json") continue;
    ++files;
    const std::string name = e.path().filename().string();
    EXPECT_NE(name[0], '.') << "temporary file left: " << e.path();
    EXPECT_EQ(test::read_file(e.path()),
              test::read_file(b.path() / fs::relative(e.path(), a.path())));
  }
  EXPECT_EQ(files, 9);
  EXPECT_TRUE(fs::is_directory(a.path() / "train" / synth_class_name(2)));
  EXPECT_TRUE(fs::is_directory(a.path() / "val" / synth_class_name(0)));
  // every file decodes
  data::JpegDecoder decoder;
  data::ImageBuffer img;
  const std::string bytes =
      test::read_file(a.path() / "val" / synth_class_name(1) / synth_file_name(1, 7));
  decoder.decode_all(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), img);
  EXPECT_GT(img.width(), 0);
  // another seed, other images
  o.seed = 8;
  synth_dataset(o);
  EXPECT_NE(test::read_file(a.path() / "train" / synth_class_name(0) / synth_file_name(0, 0)),
            test::read_file(b.path() / "train" / synth_class_name(0) / synth_file_name(0, 0)));
}

// A re-run replaces an earlier synth tree, files the new one does not make included (a smaller
// tree once kept the bigger one's extra classes and val/); a folder holding anything else is
// refused.
TEST(Synth, ReplacesAnEarlierTreeAndRefusesOthers) {
  test::TempDir t;
  SynthOptions o;
  o.classes = 3, o.images = 2, o.val = 1, o.workers = 2, o.progress = false;
  o.out = t / "s";
  EXPECT_EQ(synth_dataset(o).files, 9);
  o.classes = 2, o.images = 1, o.val = 0, o.seed = 5;
  EXPECT_EQ(synth_dataset(o).files, 2);
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(o.out))
    files.push_back(fs::relative(e.path(), o.out).string());
  std::sort(files.begin(), files.end());
  const std::vector<std::string> want = {
      ".faster-synth.json",           "train",
      "train/" + synth_class_name(0), "train/" + synth_class_name(0) + "/" + synth_file_name(0, 0),
      "train/" + synth_class_name(1), "train/" + synth_class_name(1) + "/" + synth_file_name(1, 1)};
  EXPECT_EQ(files, want);
  // A user's folder added to a synth tree: refused before anything is deleted.
  fs::create_directories(o.out / "train" / "extra");
  test::write_file(o.out / "train" / "extra" / "x.jpg", "mine");
  o.classes = 1;
  try {
    synth_dataset(o);
    ADD_FAILURE() << "a synth tree holding a user's folder was taken in";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds train/extra, which synth did not write"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::exists(o.out / "train" / synth_class_name(1) / synth_file_name(1, 1)));
  fs::create_directories(t / "other");
  test::write_file(t / "other/notes.txt", "mine");
  const auto r = test::run_faster("synth --classes 2 --images 1 --out " + (t / "other").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("is not empty and holds no faster synth tree"), std::string::npos)
      << r.output;
  EXPECT_EQ(test::read_file(t / "other/notes.txt"), "mine");
  // A second synth into a tree one is writing: refused, the first one's files untouched.
  fs::remove_all(o.out / "train" / "extra");
  const DirectoryLock writing(o.out, "'faster synth'");
  const auto second = test::run_faster("synth --classes 2 --images 1 --out " + o.out.string());
  EXPECT_EQ(second.exit_code, 1) << second.output;
  EXPECT_NE(second.output.find("another 'faster synth' is writing into"), std::string::npos)
      << second.output;
  EXPECT_TRUE(fs::exists(o.out / "train" / synth_class_name(1) / synth_file_name(1, 1)));
}

TEST(Synth, CliErrorsAreOneLine) {
  auto r = test::run_faster("synth --classes 2");
  EXPECT_EQ(r.exit_code, 2);  // a usage error (docs/exit_codes.md)
  EXPECT_NE(r.output.find("--out is required"), std::string::npos) << r.output;
  test::TempDir t;
  r = test::run_faster("synth --out " + t.path().string() + " --classes 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "faster: error: --classes must be between 1 and 100000 (got 0)\n");
  r = test::run_faster("synth --out " + t.path().string() + " --classes 2 --images 1 --quality 80");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("synth: 2 files"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace faster::tools

// Trees that hung, looped or blew up `faster load`, `pack` and `resize` (issue 16), through the
// program with a time limit: directory links back up the tree and into another class, and a FIFO,
// a socket (and a device node where the tests may make one) named like images; each command must
// finish, see each of the five images once, and name what it left out.  And files whose headers
// claim 9999x9999 pixels over tens of KB, which must cost `load` no memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "data/odd_entries.h"
#include "faster/data/sources/lmdb_source.h"
#include "faster/tools/resize.h"
#include "tools/tool_fixtures.h"

namespace faster::test {
namespace {
namespace fs = std::filesystem;

// A hang is a failure, not a stuck test run.
constexpr const char* kLimit = "timeout 60 ";

struct OddTree {
  TempDir tmp;
  fs::path src = tmp / "src";
  OddEntries odd;
  OddTree() {
    for (const char* rel : {"a/1.jpg", "a/2.jpg", "a/sub/3.jpg", "b/4.jpg", "b/5.jpg"})
      write_jpeg(src, rel, 64, 48);
    fs::create_directory_symlink("..", src / "a/up");
    fs::create_directory_symlink(".", src / "a/self");
    fs::create_directory_symlink("../a", src / "b/to_a");
    odd = make_odd_entries(src / "a");
  }
  std::vector<std::string> odd_names() const {
    std::vector<std::string> names = {"a/fifo.JPEG", "a/socket.jpg"};
    if (odd.device) names.push_back("a/device.jpeg");
    return names;
  }
  RunResult run(const std::string& args) const {
    return run_shell(std::string(kLimit) + "env FASTER_PROGRESS=plain " + FASTER_BIN + " " + args);
  }
};

TEST(OddTrees, LoadFinishesWarmAndColdWithEachImageOnce) {
  OddTree t;
  for (const char* cache : {"", "--cold"}) {
    const RunResult r = t.run("load " + quoted(t.src) +
                              " --batches 3 --batch 2 --workers 2 --warmup 0 --floor-images 0 "
                              "--size 32 " +
                              cache);
    ASSERT_EQ(r.exit_code, 0) << cache << "\n" << r.output;
    EXPECT_NE(r.output.find("(2 classes, 5 images)"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("5 images in 3 batches"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("bad images skipped: 0"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("left out " + std::to_string(t.odd.named_like_images) + " entries"),
              std::string::npos)
        << r.output;
    for (const auto& name : t.odd_names())
      EXPECT_NE(r.output.find(name), std::string::npos) << name << "\n" << r.output;
  }
}

// --batches that ends inside an epoch counts the images its batches delivered, not the threads'
// read-ahead (it said 8 images for one batch of 4, and varied run to run).
TEST(OddTrees, LoadOfSomeBatchesCountsTheirImages) {
  OddTree t;
  const RunResult r = t.run("load " + quoted(t.src) +
                            " --batches 1 --batch 2 --workers 2 --warmup 0 --floor-images 0 "
                            "--size 32");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(" 2 images in 1 batches"), std::string::npos) << r.output;
}

TEST(OddTrees, PackStoresEachImageOnceAndListsWhatIsNotAFile) {
  OddTree t;
  const RunResult r = t.run("pack --src " + quoted(t.src) + " --out " + quoted(t.tmp / "db"));
  ASSERT_EQ(r.exit_code, 3) << r.output;
  const int odd = t.odd.named_like_images;
  EXPECT_NE(r.output.find(std::to_string(5 + odd) + " images, 2 classes"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("5 packed (0 downscaled), " + std::to_string(odd) + " bad"),
            std::string::npos)
      << r.output;
  const data::LmdbSource db(t.tmp / "db");
  ASSERT_EQ(db.size(), 5);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(db.label(i), i < 3 ? 0 : 1) << i;
  std::vector<std::string> skipped;
  for (const auto& s : db.metadata().skipped) skipped.push_back(s["path"]);
  std::sort(skipped.begin(), skipped.end());
  auto expected = t.odd_names();
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(skipped, expected);
  EXPECT_EQ(db.metadata().skipped[0]["reason"].get<std::string>().rfind("not a regular file (", 0),
            0u);
}

TEST(OddTrees, ResizeMirrorsEachImageOnceAndReportsWhatIsNotAFile) {
  OddTree t;
  const RunResult r =
      t.run("resize --src " + quoted(t.src) + " --dst " + quoted(t.tmp / "dst") + " --max-size 32");
  ASSERT_EQ(r.exit_code, 3) << r.output;
  const int odd = t.odd.named_like_images;
  EXPECT_NE(r.output.find(std::to_string(5 + odd) + " images"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("5 downscaled, 0 copied, 0 up to date, " + std::to_string(odd) + " bad"),
            std::string::npos)
      << r.output;
  std::vector<std::string> images;
  for (const auto& f : all_files(t.tmp / "dst"))
    if (f[0] != '.') images.push_back(f);
  EXPECT_EQ(images,
            (std::vector<std::string>{"a/1.jpg", "a/2.jpg", "a/sub/3.jpg", "b/4.jpg", "b/5.jpg"}));
  const std::string report = read_file(t.tmp / "dst" / tools::kResizeReport);
  EXPECT_NE(report.find("a/fifo.JPEG\tnot a regular file (a FIFO)\tskipped"), std::string::npos)
      << report;
  EXPECT_NE(report.find("a/socket.jpg\tnot a regular file (a socket)\tskipped"), std::string::npos)
      << report;
}

// Eight headers claiming 9999x9999 pixels over tens of KB of data (under the 100 MP cap) cost
// `load` 2.9 s and 449 MB before they failed, and the loader kept some as images.  Now each is a
// bad image refused before anything is allocated: counted exactly, with the memory of a run
// without them.
TEST(OddTrees, LoadRefusesForgedHugeHeadersWithoutTheirMemory) {
  TempDir tmp;
  data::JpegEncodeOptions q98;
  q98.quality = 98;
  const auto good = make_jpeg(200, 150);
  for (const char* tree : {"forged", "control"})
    for (int i = 0; i < 8; ++i) {
      const std::string name = std::to_string(i) + ".jpg";
      fs::create_directories(tmp / tree / "a");
      fs::create_directories(tmp / tree / "b");
      if (i < 4) write_file(tmp / tree / "b" / name, to_string(good));
      auto bytes = std::string(tree) == "forged" ? make_jpeg(480, 360, 3, q98) : good;
      if (std::string(tree) == "forged") patch_dimensions(bytes, 9999, 9999);
      write_file(tmp / tree / "a" / name, to_string(bytes));
    }
  const auto load = [&](const char* tree) {
    return run_measured(std::string(kLimit) + FASTER_BIN + " load " + quoted(tmp / tree) +
                            " --epochs 1 --batch 2 --workers 2 --warmup 0 --size 64",
                        tmp / "log");
  };
  const Measured control = load("control"), forged = load("forged");
  ASSERT_EQ(control.exit_code, 0) << control.output;
  ASSERT_EQ(forged.exit_code, 3) << forged.output;  // done, but bad images skipped
  EXPECT_NE(control.output.find("bad images skipped: 0"), std::string::npos) << control.output;
  EXPECT_NE(forged.output.find("bad images skipped: 8"), std::string::npos) << forged.output;
  EXPECT_LT(forged.max_rss_kb - control.max_rss_kb, 32 * 1024)
      << forged.max_rss_kb << " KB against " << control.max_rss_kb << " KB without them";
  // Time is bounded by the 60 s limit only: how quickly each file is refused is the decoder's
  // test (JpegDecoder.RefusesHeadersClaimingMoreBlocksThanTheDataHolds), free of machine load.
}

}  // namespace
}  // namespace faster::test

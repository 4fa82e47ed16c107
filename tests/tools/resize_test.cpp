// `faster resize` end to end through the program: sizes and aspect, byte-identical copies, resume,
// refusals, bad images and exit codes, and write errors that leave no partial file behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "faster/core/error.h"
#include "faster/data/decode/png_codec.h"
#include "faster/data/sources/image_tree.h"
#include "faster/tools/downscale.h"
#include "faster/tools/file_io.h"
#include "faster/tools/resize.h"
#include "faster/tools/resize_state.h"
#include "tools/tool_fixtures.h"

namespace faster::test {
namespace {
namespace fs = std::filesystem;

// A source tree at several depths: large images (downscaled), small ones (copied), one non-JPEG.
struct ResizeTree {
  TempDir tmp;
  fs::path src = tmp / "src", dst = tmp / "dst";
  std::vector<std::pair<std::string, JpegSize>> images = {
      {"train/cat/a.JPEG", {400, 300}}, {"train/cat/b.jpg", {96, 200}},
      {"train/dog/c.JPEG", {300, 450}}, {"val/deep/er/d.jpeg", {256, 200}},
      {"val/deep/er/e.JPEG", {64, 64}}, {"val/f.JPEG", {97, 161}},
  };
  ResizeTree() {
    for (const auto& [rel, size] : images) write_jpeg(src, rel, size.width, size.height);
    write_file(src / "train/labels.txt", "not an image");
  }
  // In process (the program's start-up is most of a CLI test's time); same code path.
  tools::ResizeSummary resize(int max_size = 96) const {
    tools::ResizeOptions o;
    o.src = src;
    o.dst = dst;
    o.max_size = max_size;
    o.workers = 2;
    o.progress = false;
    return tools::resize_tree(o);
  }
  RunResult run(const std::string& extra = "") const {
    return run_faster("resize --src " + quoted(src) + " --dst " + quoted(dst) + " --max-size 96 " +
                      extra);
  }
};

TEST(Resize, DownscalesLargeImagesKeepsAspectAndCopiesSmallOnes) {
  ResizeTree t;
  const RunResult r = t.run("--workers 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("6 images"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("4 downscaled, 2 copied, 0 up to date, 0 bad"), std::string::npos)
      << r.output;
  for (const auto& [rel, size] : t.images) {
    const JpegSize out = decoded_size(t.dst / rel);
    const tools::Size want = tools::downscaled_size(size.width, size.height, 96);
    EXPECT_EQ(out.width, want.width) << rel;
    EXPECT_EQ(out.height, want.height) << rel;
    EXPECT_EQ(std::min(out.width, out.height), std::min(96, std::min(size.width, size.height)));
    if (std::min(size.width, size.height) <= 96)
      EXPECT_EQ(read_file(t.dst / rel), read_file(t.src / rel)) << rel << " not copied as is";
  }
  EXPECT_FALSE(fs::exists(t.dst / "train/labels.txt"));
  EXPECT_EQ(read_file(t.dst / tools::kResizeReport), "path\treason\taction\n");
}

// PNG sources are read as JPEG ones are: a large one is downscaled and stays a PNG under its own
// name (re-encoded losslessly, gray staying gray, its pixels the area filter's), a small one is
// copied; `faster pack` of the same tree stores them and its --verify decodes them; a BMP in the
// tree is refused by name.
TEST(Resize, PngImagesStayPngAndPackReadsThem) {
  TempDir t;
  const auto src = t / "src";
  data::PngEncoder encoder;
  std::vector<uint8_t> bytes;
  for (const auto& [rel, w, h, c] :
       {std::tuple{"a/big_rgb.png", 300, 200, 3}, std::tuple{"a/big_gray.PNG", 200, 400, 1},
        std::tuple{"b/small.png", 60, 40, 3}}) {
    data::ImageBuffer img;
    img.reshape(w, h, c);
    for (int i = 0; i < w * h * c; ++i) img.data()[i] = static_cast<uint8_t>((i * 7) % 251);
    encoder.encode(img.view(), bytes);
    fs::create_directories((src / rel).parent_path());
    write_file(src / rel, std::string(bytes.begin(), bytes.end()));
  }
  auto r = run_faster("resize --src " + quoted(src) + " --dst " + quoted(t / "dst") +
                      " --max-size 100 --workers 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 downscaled, 1 copied"), std::string::npos) << r.output;
  data::PngDecoder decoder;
  for (const auto& [rel, w, h, c] :
       {std::tuple{"a/big_rgb.png", 150, 100, 3}, std::tuple{"a/big_gray.PNG", 100, 200, 1},
        std::tuple{"b/small.png", 60, 40, 3}}) {
    const std::string out = read_file(t / "dst" / rel);
    const auto* data = reinterpret_cast<const uint8_t*>(out.data());
    ASSERT_TRUE(data::is_png(data, out.size())) << rel;
    const data::PngInfo info = decoder.info(data, out.size());
    EXPECT_EQ(info.width, w) << rel;
    EXPECT_EQ(info.height, h) << rel;
    EXPECT_EQ(info.color_type, c == 1 ? 0 : 2) << rel;
  }
  EXPECT_EQ(read_file(t / "dst/b/small.png"), read_file(src / "b/small.png"));
  r = run_faster("pack --src " + quoted(src) + " --out " + quoted(t / "db") + " --workers 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_faster("pack --verify " + quoted(t / "db"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3 records"), std::string::npos) << r.output;
  write_file(src / "b/old.bmp", "BM not really");
  r = run_faster("resize --src " + quoted(src) + " --dst " + quoted(t / "dst2") +
                 " --max-size 100");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("b/old.bmp: a BMP image, which faster does not read (JPEG and PNG)"),
            std::string::npos)
      << r.output;
}

TEST(Resize, ReRunRedoesOnlyMissingDamagedOrOutdatedOutputs) {
  ResizeTree t;
  ASSERT_EQ(t.resize().downscaled, 4);
  std::vector<int64_t> before;
  for (const auto& [rel, size] : t.images) before.push_back(mtime_ns(t.dst / rel));
  // What an interrupted or disturbed run leaves: a missing output, a truncated one, a stale
  // temporary, and a source edited after its output was written.
  fs::remove(t.dst / t.images[0].first);
  fs::resize_file(t.dst / t.images[2].first, 100);
  write_file(tools::temp_path_for(t.dst / t.images[3].first), "half-written");
  fs::last_write_time(t.src / t.images[4].first, fs::last_write_time(t.dst / t.images[4].first) +
                                                     std::chrono::milliseconds(1));

  const tools::ResizeSummary s = t.resize();
  EXPECT_EQ(s.downscaled, 2);
  EXPECT_EQ(s.copied, 1);
  EXPECT_EQ(s.up_to_date, 3);
  for (size_t i : {1, 3, 5})
    EXPECT_EQ(mtime_ns(t.dst / t.images[i].first), before[i]) << t.images[i].first << " redone";
  for (const auto& [rel, size] : t.images) EXPECT_GT(decoded_size(t.dst / rel).width, 0);
  for (const auto& f : all_files(t.dst))
    EXPECT_EQ(f.find(".faster-tmp"), std::string::npos) << f << " left behind";
  EXPECT_EQ(t.resize().up_to_date, 6);  // a third run has nothing left to do
}

// A source replaced by another image with an older time, as `cp -p` or `rsync -t` leave it, looks
// older than its output, which must still be made again.  So must the output of one replaced by a
// file of another size with the very same time.  The others stay up to date.
TEST(Resize, ReplacedSourcesAreRedoneWhateverTheirTime) {
  ResizeTree t;
  t.resize();
  const fs::path big = t.src / t.images[0].first, small = t.src / t.images[1].first;
  const auto small_time = fs::last_write_time(small);
  write_jpeg(t.src, t.images[0].first, 300, 600);  // was 400x300
  fs::last_write_time(
      big, fs::last_write_time(t.dst / t.images[0].first) - std::chrono::hours(24 * 365));
  write_jpeg(t.src, t.images[1].first, 64, 80);  // was 96x200, copied as is
  fs::last_write_time(small, small_time);
  const tools::ResizeSummary s = t.resize();
  EXPECT_EQ(s.downscaled, 1);
  EXPECT_EQ(s.copied, 1);
  EXPECT_EQ(s.up_to_date, 4);
  const JpegSize redone = decoded_size(t.dst / t.images[0].first);
  EXPECT_EQ(redone.width, 96);
  EXPECT_EQ(redone.height, 192);
  EXPECT_EQ(read_file(t.dst / t.images[1].first), read_file(small));
  EXPECT_EQ(t.resize().up_to_date, 6);
}

// Sources that no output under a final name holds yet: their bytes, which a run reads.
int64_t bytes_to_do(const fs::path& src, const fs::path& dst) {
  int64_t bytes = 0;
  for (const auto& f : all_files(src))
    if (!fs::exists(dst / f)) bytes += static_cast<int64_t>(fs::file_size(src / f));
  return bytes;
}

// kill -9 (no handler runs: only the write protocol keeps names clean) early, with the destination
// just set up; in the middle, half the sources read; late, all but the last large one read (and a
// Ctrl-C after the first).  Each run resumes the last; a fifth finishes.  After every kill each
// output under its final name decodes whole at its size (a copy has the source's bytes) and bad
// images have none; the last run counts exactly those outputs up to date, makes the rest once, and
// its counts add up to the tree.
TEST(Resize, RunsKilledEarlyMiddleAndLateResumeAndAddUp) {
  TempDir tmp;
  const fs::path src = tmp / "src", dst = tmp / "dst";
  const InterruptTree tree(src);
  const std::string cmd = "env FASTER_PROGRESS=plain " + std::string(FASTER_BIN) +
                          " resize --src " + quoted(src) + " --dst " + quoted(dst) +
                          " --max-size " + std::to_string(InterruptTree::kMaxSize) + " --workers 2";
  const auto complete_outputs = [&](const std::string& after) {
    int complete = 0;
    for (const auto& f : all_files(dst)) {
      if (fs::path(f).filename().string()[0] == '.') continue;  // ours, and temporaries
      SCOPED_TRACE(after + ": " + f);
      EXPECT_FALSE(InterruptTree::is_bad(f));
      if (InterruptTree::is_small(f)) {
        EXPECT_EQ(read_file(dst / f), tree.small);
      } else {
        try {
          const JpegSize size = decoded_size(dst / f);
          EXPECT_EQ(size.width, 800);
          EXPECT_EQ(size.height, 600);
        } catch (const Error& e) {
          ADD_FAILURE() << "an output that does not decode: " << e.what();
        }
      }
      ++complete;
    }
    return complete;
  };
  const auto reading = [](int64_t bytes) {
    return [bytes](pid_t pid) { return bytes_read(pid) >= bytes; };
  };

  ASSERT_TRUE(kill_when(cmd, tmp / "log", [&](pid_t) {
    return fs::exists(dst / tools::kResizeManifest);
  })) << read_file(tmp / "log");
  const int early = complete_outputs("killed early");
  // Ctrl-C stops between images, says how far the run got and how to go on, and exits 130.
  const int code = signal_when(cmd, tmp / "log", reading(bytes_to_do(src, dst) / 4), SIGINT);
  const std::string interrupted = read_file(tmp / "log");
  EXPECT_EQ(code, 130) << interrupted;
  EXPECT_NE(interrupted.find("faster: error: interrupted (SIGINT) after "), std::string::npos)
      << interrupted;
  EXPECT_NE(interrupted.find("run the same 'faster resize' again to finish the tree"),
            std::string::npos)
      << interrupted;
  EXPECT_GE(complete_outputs("stopped by Ctrl-C"), early);
  ASSERT_TRUE(kill_when(cmd, tmp / "log", reading(bytes_to_do(src, dst) / 2)));
  const int middle = complete_outputs("killed in the middle");
  EXPECT_GT(middle, early);
  // A tree a run stopped in is not read as whole (pack, load, train): its manifest says so.
  const RunResult partial =
      run_faster("pack --src " + quoted(dst) + " --out " + quoted(tmp / "db"));
  EXPECT_EQ(partial.exit_code, 1) << partial.output;
  EXPECT_NE(partial.output.find("the 'faster resize' writing " + dst.string() +
                                " has not finished (interrupted, or stopped by an error)"),
            std::string::npos)
      << partial.output;
  EXPECT_NE(partial.output.find("run the same 'faster resize' again"), std::string::npos)
      << partial.output;
  EXPECT_LT(middle, InterruptTree::kLarge + InterruptTree::kSmall);  // it did not finish
  const int64_t last = static_cast<int64_t>(tree.large.size());
  ASSERT_TRUE(kill_when(cmd, tmp / "log", reading(bytes_to_do(src, dst) - last)));
  const int late = complete_outputs("killed late");
  EXPECT_GE(late, middle);

  const RunResult r = run_shell(cmd);
  EXPECT_EQ(r.exit_code, 3) << r.output;  // done, two bad images
  const ResizeCounts c = resize_counts(r.output);
  EXPECT_EQ(c.files, InterruptTree::kImages) << r.output;
  EXPECT_EQ(c.up_to_date, late) << r.output;
  EXPECT_EQ(c.bad, InterruptTree::kBad) << r.output;
  EXPECT_EQ(c.downscaled + c.copied + c.up_to_date + c.bad, c.files) << r.output;
  EXPECT_EQ(complete_outputs("the last run"), InterruptTree::kLarge + InterruptTree::kSmall);
  const std::string state = read_file(dst / tools::kResizeState);  // a header, a line an output
  EXPECT_EQ(std::count(state.begin(), state.end(), '\n'),
            1 + InterruptTree::kLarge + InterruptTree::kSmall)
      << state;
  for (const auto& f : all_files(dst))
    EXPECT_EQ(f.find(".faster-tmp"), std::string::npos) << f << " left behind";
  // Finished: read as a tree, a split of it too (the manifest is in the split's parent), unless
  // the manifest says otherwise.
  const std::string a_class = data::list_image_tree(dst).dirs.at(1);
  EXPECT_NO_THROW(data::list_image_tree(dst / a_class));
  const nlohmann::json manifest = tools::read_json_file(dst / tools::kResizeManifest);
  EXPECT_EQ(manifest.value("complete", false), true) << manifest.dump();
  tools::write_manifest(dst / tools::kResizeManifest, manifest, /*complete=*/false);
  EXPECT_THROW(data::list_image_tree(dst / a_class), Error);
  // However the split is named: a trailing separator, "/.", a link to it.
  EXPECT_THROW(data::list_image_tree((dst / a_class).string() + "/"), Error);
  EXPECT_THROW(data::list_image_tree(dst / a_class / "."), Error);
  fs::create_directory_symlink(dst / a_class, tmp / "link");
  EXPECT_THROW(data::list_image_tree(tmp / "link"), Error);
}

// A bad image's copy is journalled with its reason as it is made (a tab in it escaped), so a run
// that ends any way at all (an error, Ctrl-C, kill -9) leaves the reason for the next run to
// report; compacting keeps it, and an image made well has none.
TEST(Resize, TheJournalKeepsWhyACopyIsOfABadImage) {
  TempDir t;
  write_file(t / "file", "x");
  struct stat st;
  ASSERT_EQ(::stat((t / "file").c_str(), &st), 0);
  const std::vector<std::string> images = {"a/bad.jpg", "b/good.jpg"};
  const fs::path journal = t / "journal.tsv";
  const std::string why = "not a JPEG:\ta PNG image";
  {
    tools::ResizeState state(journal, images);
    state.record(0, st, st, why);
    state.record(1, st, st);
  }  // no compact(): as a run that stopped
  {
    tools::ResizeState state(journal, images);
    EXPECT_EQ(state.bad_copy(0), why);
    EXPECT_EQ(state.bad_copy(1), "");
    EXPECT_TRUE(state.up_to_date(0, st, st));
    state.compact();
  }
  const tools::ResizeState state(journal, images);
  EXPECT_EQ(state.bad_copy(0), why);
  EXPECT_TRUE(state.up_to_date(1, st, st));
}

TEST(Resize, RefusesDestinationInsideSourceAndTheReverse) {
  ResizeTree t;
  const auto files_before = all_files(t.src);
  for (const fs::path& dst : {t.src, t.src / "train/out", t.tmp.path()}) {
    tools::ResizeOptions o;
    o.src = t.src;
    o.dst = dst;
    o.max_size = 96;
    try {
      tools::resize_tree(o);
      ADD_FAILURE() << "accepted --dst " << dst;
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_TRUE(m.find("inside") != m.npos || m.find("same folder") != m.npos) << m;
    }
  }
  EXPECT_EQ(all_files(t.src), files_before);  // nothing written into the source
  const RunResult r = run_faster("resize --src " + quoted(t.src) + " --dst " +
                                 quoted(t.src / "out") + " --max-size 96");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("faster: error: --dst"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("HINT: choose a destination outside"), std::string::npos) << r.output;
  const RunResult missing = run_faster("resize --src " + quoted(t.tmp / "nope") + " --dst " +
                                       quoted(t.dst) + " --max-size 96");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("--src is not a directory"), std::string::npos) << missing.output;
}

TEST(Resize, OtherOptionsIntoTheSameDestinationAreRefused) {
  ResizeTree t;
  t.resize(96);
  try {
    t.resize(80);
    FAIL() << "a second --max-size was accepted into the same --dst";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("was made with options"), std::string::npos) << e.what();
  }
  // A manifest that is not resize's (damaged, or another tool's) is refused, not overwritten.
  write_file(t.dst / tools::kResizeManifest, "{ not json");
  const RunResult damaged = t.run();
  EXPECT_EQ(damaged.exit_code, 1) << damaged.output;
  EXPECT_NE(damaged.output.find("is not a faster resize manifest"), std::string::npos)
      << damaged.output;
  EXPECT_EQ(read_file(t.dst / tools::kResizeManifest), "{ not json");
  // --report is checked before any work: a folder, the name of a mirrored image, or of a folder
  // the run is about to mirror (into a new destination).
  for (const auto& [report, why] :
       {std::pair{t.tmp.path(), "is a folder; give a file name"},
        std::pair{t.dst / "train/cat/b.jpg", "would take the place of a mirrored image"}}) {
    const RunResult r = t.run("--report " + quoted(report));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
  }
  const fs::path fresh = t.tmp / "fresh";
  const RunResult r = run_faster("resize --src " + quoted(t.src) + " --dst " + quoted(fresh) +
                                 " --max-size 96 --report " + quoted(fresh / "train"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("would take the place of a mirrored image"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(fresh));
}

// Two trees into one destination would merge, their classes too; a destination holding files
// resize did not write is not its to fill.  Both refused, naming why; an empty one is fine.
TEST(Resize, AnotherSourceOrForeignFilesInTheDestinationAreRefused) {
  ResizeTree t;
  t.resize(96);
  ResizeTree other;
  tools::ResizeOptions o;
  o.src = other.src;
  o.dst = t.dst;
  o.max_size = 96;
  o.progress = false;
  try {
    tools::resize_tree(o);
    FAIL() << "a second source was accepted into the same --dst";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(t.dst.string() + " was made from " +
                                         fs::weakly_canonical(t.src).string()),
              std::string::npos)
        << e.what();
  }
  o.dst = other.tmp / "foreign";
  fs::create_directories(o.dst);
  write_file(o.dst / "my-faster-notes.txt", "mine");  // only resize's own names are its own
  try {
    tools::resize_tree(o);
    FAIL() << "a destination with foreign files was filled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds files faster resize did not write"),
              std::string::npos)
        << e.what();
  }
  o.dst = other.tmp / "empty";
  fs::create_directories(o.dst);
  EXPECT_EQ(tools::resize_tree(o).files, static_cast<int64_t>(other.images.size()));
}

TEST(Resize, BadImagesAreReportedSkippedOrCopiedAndSetTheExitCode) {
  ResizeTree t;
  auto truncated = read_file(t.src / t.images[0].first);
  truncated.resize(truncated.size() / 2);
  write_file(t.src / "train/cat/truncated.JPEG", truncated);
  write_file(t.src / "train/cat/empty.JPEG", "");
  // A tab in a name: the report's and the journal's fields escape it (a re-run lost the line).
  write_file(t.src / "train/dog/p\tng.JPEG", "\x89PNG\r\n\x1a\nrest of a png file");
  const RunResult r = t.run();
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("3 bad (skipped)"), std::string::npos) << r.output;
  const std::string report = read_file(t.dst / tools::kResizeReport);
  EXPECT_NE(report.find("train/cat/empty.JPEG\tnot a JPEG: an empty file\tskipped"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("train/cat/truncated.JPEG\t"), std::string::npos) << report;
  EXPECT_NE(report.find("train/dog/p\\tng.JPEG\tPNG: header: end of stream"), std::string::npos)
      << report;
  EXPECT_FALSE(fs::exists(t.dst / "train/cat/truncated.JPEG"));

  const RunResult copied =
      run_faster("resize --src " + quoted(t.src) + " --dst " + quoted(t.tmp / "dst2") +
                 " --max-size 96 --copy-bad " + "--report " + quoted(t.tmp / "bad.tsv"));
  EXPECT_EQ(copied.exit_code, 3) << copied.output;
  EXPECT_NE(copied.output.find("4 downscaled, 2 copied, 0 up to date, 3 bad (copied unchanged)"),
            std::string::npos)
      << copied.output;
  EXPECT_EQ(read_file(t.tmp / "dst2/train/cat/truncated.JPEG"), truncated);
  EXPECT_NE(read_file(t.tmp / "bad.tsv").find("\tcopied\n"), std::string::npos);
  // A re-run finds the copies up to date but still reports them (the empty file, whose copy is
  // never up to date, is tried and copied again).
  const RunResult again =
      run_faster("resize --src " + quoted(t.src) + " --dst " + quoted(t.tmp / "dst2") +
                 " --max-size 96 --copy-bad " + "--report " + quoted(t.tmp / "bad.tsv"));
  EXPECT_EQ(again.exit_code, 3) << again.output;
  EXPECT_NE(again.output.find("0 downscaled, 0 copied, 6 up to date, 3 bad"), std::string::npos)
      << again.output;
  const std::string rereport = read_file(t.tmp / "bad.tsv");
  EXPECT_NE(rereport.find("train/cat/truncated.JPEG\t"), std::string::npos) << rereport;
  EXPECT_NE(rereport.find("train/dog/p\\tng.JPEG\tPNG: header: end of stream\tcopied"),
            std::string::npos)
      << rereport;
  // The destination itself remembers its bad copies: without that report (another --report, or
  // none), a re-run still reports them.
  fs::remove(t.tmp / "bad.tsv");
  const RunResult elsewhere = run_faster("resize --src " + quoted(t.src) + " --dst " +
                                         quoted(t.tmp / "dst2") + " --max-size 96 --copy-bad");
  EXPECT_EQ(elsewhere.exit_code, 3) << elsewhere.output;
  EXPECT_NE(elsewhere.output.find("6 up to date, 3 bad (copied unchanged)"), std::string::npos)
      << elsewhere.output;
  EXPECT_NE(read_file(t.tmp / "dst2" / tools::kResizeReport).find("train/cat/truncated.JPEG	"),
            std::string::npos);
  // Without --copy-bad into a destination that holds copies of bad images: refused, as another
  // --max-size is (the copies would stay and the summary say "skipped").
  const RunResult dropped = run_faster("resize --src " + quoted(t.src) + " --dst " +
                                       quoted(t.tmp / "dst2") + " --max-size 96");
  EXPECT_EQ(dropped.exit_code, 1) << dropped.output;
  EXPECT_NE(dropped.output.find("was made with options"), std::string::npos) << dropped.output;
  EXPECT_NE(run_faster("resize --help").output.find("Exit codes: 0"), std::string::npos);
}

// The destination mirrors the source as it is now: a re-run removes the outputs of sources
// deleted or renamed since (a renamed class folder once left both classes behind) and of a source
// that became bad, but no file it did not make or that changed since it made it.  Hidden entries
// are mirrored (load and pack read them, so labels stay the same), and a source folder that links
// into the destination is left out (it mirrored the outputs into themselves, deeper every run).
TEST(Resize, TheDestinationMirrorsTheSourceAsItIsNow) {
  ResizeTree t;
  write_jpeg(t.src, "train/.ipynb_checkpoints/x.jpg", 120, 100);
  fs::create_directory_symlink(t.dst, t.src / "train/cat/mirror");
  ASSERT_EQ(t.resize().bad, 0);
  EXPECT_TRUE(fs::exists(t.dst / "train/.ipynb_checkpoints/x.jpg"));
  EXPECT_FALSE(fs::exists(t.dst / "train/cat/mirror"));

  fs::remove(t.src / t.images[5].first);                          // val/f.JPEG deleted
  fs::rename(t.src / "val/deep/er", t.src / "val/deep/renamed");  // d, e renamed
  write_file(t.src / t.images[0].first, "no longer a JPEG");      // train/cat/a.JPEG gone bad
  write_file(t.dst / "val/deep/er/mine.txt", "a user's file");
  write_file(t.dst / t.images[4].first, "a user's own version");  // not the output made: kept
  const tools::ResizeSummary s = t.resize();
  EXPECT_EQ(s.removed, 2);  // f and d; e's file was replaced by the user
  EXPECT_EQ(s.bad, 1);
  EXPECT_EQ(all_files(t.dst),
            (std::vector<std::string>{".faster-resize-report.tsv", ".faster-resize-state.tsv",
                                      ".faster-resize.json", "train/.ipynb_checkpoints/x.jpg",
                                      "train/cat/b.jpg", "train/dog/c.JPEG", "val/deep/er/e.JPEG",
                                      "val/deep/er/mine.txt", "val/deep/renamed/d.jpeg",
                                      "val/deep/renamed/e.JPEG"}));
  fs::remove(t.dst / t.images[4].first);
  fs::remove(t.dst / "val/deep/er/mine.txt");
  EXPECT_EQ(t.resize().removed, 0);   // nothing left on record to remove
  fs::remove(t.dst / "val/deep/er");  // empty: the user's files kept it
  EXPECT_EQ(t.resize().up_to_date, 5);
}

TEST(Resize, WriteErrorsStopWithAClearErrorAndNoPartialFile) {
  ResizeTree t;
  // A file size limit makes writes fail like a full disk does (root ignores permissions, not
  // this); faster ignores SIGXFSZ itself, so write() returns EFBIG instead of the signal killing
  // the process silently.
  const std::string limited = "bash -c \"ulimit -f 2; FASTER_PROGRESS=plain " +
                              std::string(FASTER_BIN) + " resize --src " + quoted(t.src) +
                              " --dst " + quoted(t.dst) + " --max-size 96 --workers 1\"";
  const RunResult r = run_shell(limited);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("faster: error: cannot write"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("File too large"), std::string::npos) << r.output;
  for (const auto& f : all_files(t.dst)) {
    EXPECT_EQ(f.find(".faster-tmp"), std::string::npos) << f;
    if (data::has_jpeg_extension(f)) EXPECT_GT(decoded_size(t.dst / f).width, 0) << f;
  }
  // A file where a mirrored folder must go (in a destination of this source: one of another
  // making is refused before).
  TempDir other;
  const std::string into_other =
      "resize --src " + quoted(t.src) + " --dst " + quoted(other.path()) + " --max-size 96";
  ASSERT_EQ(run_faster(into_other).exit_code, 0);
  fs::remove_all(other / "train");
  write_file(other / "train", "in the way");
  const RunResult blocked = run_faster(into_other);
  EXPECT_EQ(blocked.exit_code, 1);
  EXPECT_NE(blocked.output.find("cannot create directory"), std::string::npos) << blocked.output;
}

}  // namespace
}  // namespace faster::test

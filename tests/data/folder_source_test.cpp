// FolderSource: torchvision ImageFolder conventions and the errors for malformed trees.
#include <gtest/gtest.h>

#include <filesystem>

#include "data/odd_entries.h"
#include "faster/core/error.h"
#include "faster/data/sources/folder_source.h"
#include "support/test_support.h"

namespace faster::data {
namespace {
namespace fs = std::filesystem;

void touch(const fs::path& p, const std::string& bytes = "x") {
  fs::create_directories(p.parent_path());
  test::write_file(p, bytes);
}

std::string error_of(const fs::path& root) {
  try {
    FolderSource s(root, false);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(FolderSource, ClassesSortedLabelsAndExtensions) {
  test::TempDir t;
  touch(t / "zebra/b.jpg");
  touch(t / "zebra/a.JPEG");
  touch(t / "apple/x.jpeg");
  touch(t / "apple/y.JpG");
  touch(t / "apple/deep/z.jpg");  // nested folders are walked, like torchvision's os.walk
  touch(t / "apple/notes.txt");   // other extensions are ignored
  touch(t / "apple/pic.PNG");     // PNG is read too
  touch(t / "stray.jpg");         // files directly under root are not samples
  FolderSource s(t.path());
  ASSERT_EQ(s.classes(), (std::vector<std::string>{"apple", "zebra"}));
  ASSERT_EQ(s.size(), 6);
  EXPECT_EQ(s.name(0), (t / "apple/deep/z.jpg").string());
  EXPECT_EQ(s.name(1), (t / "apple/pic.PNG").string());
  EXPECT_EQ(s.name(4), (t / "zebra/a.JPEG").string());
  EXPECT_EQ(s.label(3), 0);
  EXPECT_EQ(s.label(5), 1);
  Sample sample;
  test::write_file(t / "zebra/b.jpg", "hello");
  s.get(5, sample);
  EXPECT_EQ(std::string(sample.bytes.begin(), sample.bytes.end()), "hello");
  EXPECT_EQ(sample.label, 1);
  EXPECT_NE(s.describe().find("2 classes, 6 images"), std::string::npos);
  EXPECT_GE(s.evict_page_cache(), 5);
}

// Policy: an empty class folder keeps its label (so train/ and val/ labels agree) and is reported.
TEST(FolderSource, EmptyClassKeepsItsLabel) {
  test::TempDir t;
  touch(t / "a/1.jpg");
  fs::create_directories(t / "b");
  touch(t / "c/1.jpg");
  FolderSource s(t.path(), false);
  EXPECT_EQ(s.classes().size(), 3u);
  EXPECT_EQ(s.empty_classes(), std::vector<std::string>{"b"});
  EXPECT_EQ(s.label(1), 2);
}

TEST(FolderSource, ErrorsNameTheProblem) {
  test::TempDir t;
  EXPECT_EQ(error_of(t / "missing"),
            "dataset folder " + (t / "missing").string() + " does not exist");
  touch(t / "file");
  EXPECT_EQ(error_of(t / "file"), (t / "file").string() + " is not a folder");
  fs::create_directories(t / "noclasses");
  touch(t / "noclasses/img.jpg");
  EXPECT_EQ(error_of(t / "noclasses"), "no class folders in " + (t / "noclasses").string());
  fs::create_directories(t / "empty/a");
  fs::create_directories(t / "empty/b");
  EXPECT_EQ(error_of(t / "empty"),
            "no .jpg/.jpeg/.png images in the 2 class folders of " + (t / "empty").string());
  // Images ImageFolder reads and faster does not: the tree is refused, naming the first and its
  // format (left out, it would be another dataset than torchvision's).
  touch(t / "mixed/a/1.jpg");
  touch(t / "mixed/b/2.webp");
  touch(t / "mixed/b/3.BMP");
  EXPECT_EQ(error_of(t / "mixed"), (t / "mixed/b/2.webp").string() +
                                       ": a WebP image, which faster does not read (JPEG and PNG); "
                                       "2 such file(s) in " +
                                       (t / "mixed").string());
}

// Unreadable files (tests run as root, so chmod cannot make one): a dangling symlink is listed and
// fails when read, naming the path; a folder named like an image is walked, not read.
TEST(FolderSource, UnreadableEntries) {
  test::TempDir t;
  touch(t / "a/good.jpg");
  fs::create_symlink(t / "nowhere.jpg", t / "a/dangling.JPEG");
  fs::create_directories(t / "a/folder.JPEG");
  FolderSource s(t.path());
  ASSERT_EQ(s.size(), 2);
  Sample sample;
  try {
    s.get(0, sample);
    ADD_FAILURE() << "read a dangling symlink";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot open " + (t / "a/dangling.JPEG").string() + ": No such file or directory");
  }
  s.get(1, sample);
  EXPECT_EQ(sample.bytes.size(), 1u);
}

// The walk the loader and pack share (image_tree.h): a link back up the tree, one to the folder
// itself and one from class b into class a give every image once, with its own class; a class
// folder that links to another one stays, empty; a FIFO, a socket (and a device node where the
// tests may make one) named like images are left out and reported, never opened.
TEST(FolderSource, OddTreeGivesEachImageOnceAndLeavesOutWhatIsNotAFile) {
  test::TempDir t;
  for (const char* f : {"a/1.jpg", "a/2.jpg", "a/sub/3.jpg", "b/4.jpg", "stray.jpg"}) touch(t / f);
  fs::create_directory_symlink("..", t / "a/up");
  fs::create_directory_symlink(".", t / "a/self");
  fs::create_directory_symlink("../a", t / "b/to_a");
  fs::create_directory_symlink("a", t / "c");
  const test::OddEntries odd = test::make_odd_entries(t / "a");
  FolderSource s(t.path(), false);
  EXPECT_EQ(s.classes(), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(s.size(), 4);
  std::vector<std::string> names;
  for (int64_t i = 0; i < s.size(); ++i) names.push_back(s.name(i));
  EXPECT_EQ(names,
            (std::vector<std::string>{(t / "a/1.jpg").string(), (t / "a/2.jpg").string(),
                                      (t / "a/sub/3.jpg").string(), (t / "b/4.jpg").string()}));
  EXPECT_EQ(s.label(2), 0);
  EXPECT_EQ(s.label(3), 1);
  EXPECT_EQ(s.empty_classes(), std::vector<std::string>{"c"});
  std::vector<std::string> left_out;
  for (const auto& e : s.not_files()) left_out.push_back(e.path + " " + e.kind);
  std::vector<std::string> expected = {"a/fifo.JPEG a FIFO", "a/socket.jpg a socket"};
  if (odd.device) expected.insert(expected.begin(), "a/device.jpeg a character device");
  EXPECT_EQ(left_out, expected);
}

}  // namespace
}  // namespace faster::data

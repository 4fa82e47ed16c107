// The one image-tree walker (load, pack and resize read trees through it) and its safe read: links
// and cycles enter each directory once, only regular files are images, and a FIFO is never waited
// on.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "data/odd_entries.h"
#include "faster/core/error.h"
#include "faster/data/sources/image_tree.h"
#include "support/test_support.h"

namespace faster::data {
namespace {
namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  test::write_file(p, "x");
}

// Images, a link back up to the root, one to the folder itself, one from a deep folder back to
// the root, one from class b into class a, and one to a folder outside the tree.
struct LinkedTree {
  test::TempDir tmp, outside;
  LinkedTree() {
    for (const char* f : {"a/1.jpg", "a/2.JPEG", "a/deep/3.jpeg", "a/notes.txt", "b/4.jpg",
                          ".hidden/6.jpg", "a/.7.jpg", "top.JPG"})
      touch(tmp / f);
    touch(outside / "5.jpg");
    fs::create_directory_symlink("..", tmp / "a/up");
    fs::create_directory_symlink(".", tmp / "a/self");
    fs::create_directory_symlink("../..", tmp / "a/deep/back");
    fs::create_directory_symlink("../a", tmp / "b/to_a");
    fs::create_directory_symlink(outside.path(), tmp / "linked");
  }
};

TEST(ImageTree, LinksAndCyclesEnterEachDirectoryOnce) {
  LinkedTree t;
  const ImageTree tree = list_image_tree(t.tmp.path());
  // Hidden entries are listed like the others (torchvision's ImageFolder takes them too).
  EXPECT_EQ(tree.images, (Strings{".hidden/6.jpg", "a/.7.jpg", "a/1.jpg", "a/2.JPEG",
                                  "a/deep/3.jpeg", "b/4.jpg", "linked/5.jpg", "top.JPG"}));
  EXPECT_EQ(tree.dirs, (Strings{".hidden", "a", "a/deep", "b", "linked"}));
  EXPECT_EQ(tree.ignored, 5);  // notes.txt and the four links to folders entered already
  EXPECT_TRUE(tree.not_files.empty());
  EXPECT_THROW(list_image_tree(t.tmp / "a/notes.txt"), Error);
  EXPECT_THROW(list_image_tree(t.tmp / "missing"), Error);
}

// A link from near the root into a deep folder does not move that folder's images: the tree's
// own folders are entered at their own paths before any link is followed.
TEST(ImageTree, ImagesStayAtTheirOwnPathWhenALinkIsShorter) {
  test::TempDir tmp;
  touch(tmp / "z/x/y/deep/1.jpg");
  fs::create_directories(tmp / "a");
  fs::create_directory_symlink("../z/x/y/deep", tmp / "a/shortcut");
  const ImageTree tree = list_image_tree(tmp.path());
  EXPECT_EQ(tree.images, Strings{"z/x/y/deep/1.jpg"});
  EXPECT_EQ(tree.ignored, 1);
}

TEST(ImageTree, FifosSocketsAndDevicesAreReportedNotListed) {
  test::TempDir tmp;
  touch(tmp / "a/good.jpg");
  const test::OddEntries odd = test::make_odd_entries(tmp / "a");
  fs::create_symlink(tmp / "missing.jpg", tmp / "a/dangling.jpg");
  const ImageTree tree = list_image_tree(tmp.path());
  EXPECT_EQ(tree.images, (Strings{"a/dangling.jpg", "a/good.jpg"}));
  std::vector<std::pair<std::string, std::string>> found;
  for (const auto& e : tree.not_files) found.emplace_back(e.path, e.kind);
  std::vector<std::pair<std::string, std::string>> expected = {{"a/fifo.JPEG", "a FIFO"},
                                                               {"a/socket.jpg", "a socket"}};
  if (odd.device) expected.insert(expected.begin(), {"a/device.jpeg", "a character device"});
  EXPECT_EQ(found, expected);
  EXPECT_EQ(tree.ignored, 1);  // a FIFO without an image name
}

// Opening a FIFO for reading waits for a writer; read_regular_file must fail at once instead.
TEST(ImageTree, ReadRegularFileRefusesAFifoWithoutWaiting) {
  test::TempDir tmp;
  test::make_odd_entries(tmp.path());
  auto read = std::async(std::launch::async, [&] {
    std::vector<uint8_t> buf;
    try {
      read_regular_file(tmp / "fifo.JPEG", buf);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("read");
  });
  ASSERT_EQ(read.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "reading a FIFO hangs";
  EXPECT_EQ(read.get(), (tmp / "fifo.JPEG").string() + " is not a regular file (a FIFO)");
}

TEST(ImageTree, ReadRegularFileReusesTheBuffer) {
  test::TempDir tmp;
  test::write_file(tmp / "a", std::string(1000, 'a'));
  test::write_file(tmp / "b", "bb");
  std::vector<uint8_t> buf;
  struct stat st;
  read_regular_file(tmp / "a", buf, &st);
  EXPECT_EQ(buf.size(), 1000u);
  EXPECT_EQ(st.st_size, 1000);
  read_regular_file(tmp / "b", buf);
  EXPECT_EQ(std::string(buf.begin(), buf.end()), "bb");
  EXPECT_GE(buf.capacity(), 1000u);
  // A buffer far larger than the file (over twice it, and 256 KiB) is let go: buffers circulate
  // between the loader's workers and its ring, and would each keep the largest file's size.
  test::write_file(tmp / "big", std::string(2 << 20, 'x'));
  test::write_file(tmp / "half", std::string(1 << 20, 'h'));
  read_regular_file(tmp / "big", buf);
  read_regular_file(tmp / "half", buf);
  EXPECT_EQ(buf.size(), size_t{1} << 20);
  EXPECT_GE(buf.capacity(), size_t{2} << 20);  // twice the file and less: kept
  read_regular_file(tmp / "b", buf);
  EXPECT_EQ(std::string(buf.begin(), buf.end()), "bb");
  EXPECT_LT(buf.capacity(), size_t{256} << 10);
  try {
    read_regular_file(tmp / "none", buf);
    ADD_FAILURE() << "read a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot open " + (tmp / "none").string() + ": No such file or directory");
  }
}

TEST(ImageTree, JpegExtensions) {
  EXPECT_TRUE(has_jpeg_extension("a.JPEG"));
  EXPECT_TRUE(has_jpeg_extension("a.b.jpg"));
  EXPECT_FALSE(has_jpeg_extension("jpg"));
  EXPECT_FALSE(has_jpeg_extension("a.jpg.png"));
  EXPECT_FALSE(has_jpeg_extension("a.jfif"));
}

}  // namespace
}  // namespace faster::data

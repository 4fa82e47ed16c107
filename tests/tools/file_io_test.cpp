// The tools' building blocks: atomic writes, tree listing, the nesting check, the parallel loop.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "faster/core/error.h"
#include "faster/tools/file_io.h"
#include "faster/tools/parallel.h"
#include "faster/tools/tree.h"
#include "support/test_support.h"

namespace faster::tools {
namespace {
namespace fs = std::filesystem;
using test::TempDir;

TEST(FileIo, AtomicWriteReplacesAndLeavesNoTemporary) {
  TempDir tmp;
  const fs::path target = tmp / "out.JPEG";
  write_file_atomic(target, std::string("first"));
  write_file_atomic(target, std::string("second"));
  EXPECT_EQ(test::read_file(target), "second");
  EXPECT_EQ(temp_path_for(target), tmp / ".out.JPEG.faster-tmp");
  EXPECT_FALSE(fs::exists(temp_path_for(target)));
  EXPECT_TRUE(is_temp_name(".out.JPEG.faster-tmp"));
  EXPECT_FALSE(is_temp_name("out.JPEG"));
}

TEST(FileIo, FailedWriteKeepsTheOldFileAndNamesThePath) {
  TempDir tmp;
  const fs::path target = tmp / "out.JPEG";
  write_file_atomic(target, std::string("old"));
  // A directory under the temporary's name: the write cannot even start.
  fs::create_directories(temp_path_for(target) / "x");
  try {
    write_file_atomic(target, std::string("new"));
    FAIL() << "write succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(target.string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::read_file(target), "old");
  try {
    write_file_atomic(tmp / "missing" / "dir" / "f.JPEG", std::string("x"));
    FAIL() << "write into a missing folder succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos);
  }
}

TEST(FileIo, ReadWholeFileReusesTheBuffer) {
  TempDir tmp;
  test::write_file(tmp / "a", std::string(1000, 'a'));
  test::write_file(tmp / "b", "bb");
  std::vector<uint8_t> buf;
  read_whole_file(tmp / "a", buf);
  EXPECT_EQ(buf.size(), 1000u);
  read_whole_file(tmp / "b", buf);
  EXPECT_EQ(std::string(buf.begin(), buf.end()), "bb");
  EXPECT_GE(buf.capacity(), 1000u);
  EXPECT_THROW(read_whole_file(tmp / "none", buf), Error);
}

// A nested tree goes, a link inside it is removed without following it, a missing path is fine.
TEST(FileIo, RemoveTreeRemovesEverythingButWhatLinksPointTo) {
  TempDir tmp;
  fs::create_directories(tmp / "keep");
  fs::create_directories(tmp / "t" / "a" / "b");
  test::write_file(tmp / "keep" / "k.txt", "kept");
  test::write_file(tmp / "t" / "a" / "b" / "f.JPEG", "x");
  test::write_file(tmp / "t" / ".hidden", "y");
  fs::create_directory_symlink(tmp / "keep", tmp / "t" / "a" / "link");
  remove_tree(tmp / "t");
  EXPECT_FALSE(fs::exists(tmp / "t"));
  EXPECT_EQ(test::read_file(tmp / "keep" / "k.txt"), "kept");
  remove_tree(tmp / "missing");
  test::write_file(tmp / "file", "z");
  remove_tree(tmp / "file");
  EXPECT_FALSE(fs::exists(tmp / "file"));
}

TEST(Tree, ListsJpegsAtAnyDepthSortedWithoutHiddenEntries) {
  TempDir tmp;
  for (const char* f : {"b/2.jpg", "a/x/y/1.JPEG", "a/0.jpeg", "top.JPG", "a/notes.txt",
                        ".hidden/3.jpg", "a/.4.jpg.faster-tmp"})
    fs::create_directories((tmp / f).parent_path()), test::write_file(tmp / f, "x");
  TempDir other;
  test::write_file(other / "5.jpg", "x");
  fs::create_directory_symlink(other.path(), tmp / "linked");  // followed
  fs::create_directory_symlink(tmp.path(), tmp / "a/x/loop");  // a cycle: entered once
  const TreeListing t = list_jpeg_tree(tmp.path());
  EXPECT_EQ(t.files, (std::vector<std::string>{"a/0.jpeg", "a/x/y/1.JPEG", "b/2.jpg",
                                               "linked/5.jpg", "top.JPG"}));
  EXPECT_EQ(t.dirs, (std::vector<std::string>{"a", "a/x", "a/x/y", "b", "linked"}));
  EXPECT_EQ(t.ignored, 2);  // notes.txt and the loop
  EXPECT_THROW(list_jpeg_tree(tmp / "a/notes.txt"), Error);
}

TEST(Tree, RefusesSameOrNestedTreesEitherWay) {
  TempDir tmp;
  fs::create_directories(tmp / "src/sub");
  fs::create_directories(tmp / "other");
  fs::create_directory_symlink(tmp / "src", tmp / "link");
  EXPECT_THROW(check_separate_trees(tmp / "src", tmp / "src"), Error);
  EXPECT_THROW(check_separate_trees(tmp / "src", tmp / "src/"), Error);
  EXPECT_THROW(check_separate_trees(tmp / "src", tmp / "src/sub/new"), Error);
  EXPECT_THROW(check_separate_trees(tmp / "src", tmp / "link/new"), Error);  // through a symlink
  EXPECT_THROW(check_separate_trees(tmp / "src/sub", tmp / "src"), Error);
  EXPECT_NO_THROW(check_separate_trees(tmp / "src", tmp / "other/out"));
  EXPECT_NO_THROW(check_separate_trees(tmp / "src", tmp / "src2"));  // a prefix, not a parent
  EXPECT_TRUE(is_inside(tmp / "link/sub/report.tsv", tmp / "src"));
  EXPECT_FALSE(is_inside(tmp / "other/report.tsv", tmp / "src"));
  try {
    check_separate_trees(tmp / "src", tmp / "src/db", "--out");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--out "), std::string::npos) << e.what();
  }
}

TEST(Parallel, VisitsEveryIndexOnceAndRethrowsTheFirstError) {
  std::vector<std::atomic<int>> hits(1000);
  parallel_for(4, 1000, [&](int worker, int64_t i) {
    ASSERT_LT(worker, 4);
    ++hits[static_cast<size_t>(i)];
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  std::atomic<int> calls{0};
  EXPECT_THROW(parallel_for(3, 100000,
                            [&](int, int64_t i) {
                              ++calls;
                              if (i == 10) throw std::runtime_error("boom");
                            }),
               std::runtime_error);
  EXPECT_LT(calls.load(), 100000);  // the others stopped taking work
}

}  // namespace
}  // namespace faster::tools

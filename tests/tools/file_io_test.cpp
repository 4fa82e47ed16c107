// The tools' building blocks: atomic writes, the nesting check.
#include <gtest/gtest.h>

#include <string>

#include "faster/core/error.h"
#include "faster/tools/file_io.h"
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
  const std::string third = "third";  // durable (checkpoints): synced, the same result
  write_file_atomic(target, reinterpret_cast<const uint8_t*>(third.data()), third.size(), {}, true);
  EXPECT_EQ(test::read_file(target), "third");
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

// A path whose prefix cannot be examined (here a symlink loop) keeps its own name, made absolute:
// it was an empty path, equal to every other such path, so two outputs compared as one file.
TEST(Tree, ResolvedKeepsPathsItCannotExamineApart) {
  test::TempDir t;
  fs::create_symlink("b", t / "a");
  fs::create_symlink("a", t / "b");
  EXPECT_EQ(resolved(t / "a" / "x"), t.path() / "a" / "x");
  EXPECT_NE(resolved(t / "a" / "x"), resolved(t / "a" / "y"));
  EXPECT_EQ(resolved(t / "a" / "x"), resolved(t / "a" / "." / "x"));
  // A link is followed before "..": L/.. is the parent of L's target (a lexical ".." first made
  // two names of one file differ, and --save and --json then wrote one file).
  fs::create_directories(t / "deep" / "er");
  fs::create_symlink(t / "deep" / "er", t / "link");
  EXPECT_EQ(resolved(t / "link" / ".." / "same"), resolved(t / "deep" / "same"));
}

}  // namespace
}  // namespace faster::tools

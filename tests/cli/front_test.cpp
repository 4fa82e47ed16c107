// The `faster` program itself: linked without LibTorch, it runs the data tools and lists every
// command alone, and hands the commands that need LibTorch to faster-torch beside it unchanged.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "support/test_support.h"

namespace faster {
namespace {
namespace fs = std::filesystem;

const std::string kFaster = FASTER_BIN;
const std::string kTorch = FASTER_TORCH_BIN;

TEST(Front, DoesNotLinkLibTorch) {
  const auto r = test::run_shell("ldd " + kFaster);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("libjpeg"), std::string::npos) << r.output;  // ldd listed the libraries
  for (const char* lib : {"libtorch", "libc10", "libgloo", "libcuda"})
    EXPECT_EQ(r.output.find(lib), std::string::npos) << lib << " in:\n" << r.output;
  EXPECT_NE(test::run_shell("ldd " + kTorch).output.find("libtorch"), std::string::npos);
}

TEST(Front, RunsItsCommandsAndListsAllWithoutFasterTorch) {
  test::TempDir d;
  fs::copy_file(kFaster, d / "faster");  // alone: no faster-torch beside this copy
  const std::string alone = (d / "faster").string();
  const auto help = test::run_shell(alone + " --help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  for (const char* c :
       {"train", "eval", "bench", "load", "synth", "resize", "pack", "export", "env"})
    EXPECT_NE(help.output.find("  " + std::string(c) + " "), std::string::npos) << c << help.output;
  EXPECT_EQ(test::run_shell(alone + " resize --help").exit_code, 0);
  const auto synth = test::run_shell(alone + " synth --out " + (d / "s").string() +
                                     " --classes 1 --images 2 --val 0");
  EXPECT_EQ(synth.exit_code, 0) << synth.output;
  const auto typo = test::run_shell(alone + " trian");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.output.find("unknown command 'trian' (commands: train, eval,"), std::string::npos)
      << typo.output;
  const auto train = test::run_shell(alone + " train --help");
  EXPECT_EQ(train.exit_code, 1);
  EXPECT_NE(train.output.find("faster: error: cannot start " + (d / "faster-torch").string()),
            std::string::npos)
      << train.output;
}

// Every command line of faster-torch's --help, as `faster --help` shows it too.
TEST(Front, ListsFasterTorchsCommandsAsItDoes) {
  const auto front = test::run_faster("--help");
  const auto torch = test::run_shell(kTorch + " --help");
  ASSERT_EQ(torch.exit_code, 0) << torch.output;
  std::istringstream lines(torch.output.substr(torch.output.find("Subcommands:")));
  int commands = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("  ", 0) == 0) {
      EXPECT_NE(front.output.find(line + "\n"), std::string::npos) << line;
      ++commands;
    }
  EXPECT_GE(commands, 5);  // train, eval, bench, load, env
}

TEST(Front, HandsOverArgumentsOutputAndExitCode) {
  for (const char* args : {" train --no-such-flag", " eval --weights", " load"}) {
    const auto direct = test::run_shell(kTorch + args);
    const auto via = test::run_faster(args);
    EXPECT_NE(via.exit_code, 0) << args;
    EXPECT_EQ(via.exit_code, direct.exit_code) << args;
    EXPECT_EQ(via.output, direct.output) << args;
  }
}

// LibTorch's OpenMP threads sleep while they wait, unless the user asks otherwise (main.cpp).
TEST(Front, StartsFasterTorchWithPassiveOpenMpThreads) {
  const auto set = test::run_shell("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT " + kFaster + " env");
  ASSERT_EQ(set.exit_code, 0) << set.output;
  EXPECT_NE(set.output.find("\"omp_wait_policy\": \"PASSIVE\""), std::string::npos) << set.output;
  const auto own = test::run_shell("OMP_WAIT_POLICY=active " + kFaster + " env");
  EXPECT_NE(own.output.find("\"omp_wait_policy\": \"active\""), std::string::npos) << own.output;
  const auto spin =
      test::run_shell("env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=1000 " + kFaster + " env");
  EXPECT_NE(spin.output.find("\"omp_wait_policy\": \"default\""), std::string::npos) << spin.output;
}

}  // namespace
}  // namespace faster

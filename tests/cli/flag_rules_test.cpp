// One rule per flag across commands (core/flag_rules.h): every command that has --workers,
// --epochs, --device or --decode gives the same message and exit code for the same bad value,
// before any work (the paths named do not exist: a command that looked at them first would say
// so).  And a mistyped flag gets a suggestion, in every command.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace faster {
namespace {

constexpr int kExitUsage = 2;

// A command line of each command, otherwise whole, whose paths do not exist.
const std::vector<std::pair<std::string, std::string>> kCommands = {
    {"train", "train --data /nonexistent/data"},
    {"eval", "eval --weights /nonexistent/w.pt --data /nonexistent/data"},
    {"load", "load /nonexistent/data"},
    {"bench", "bench --data /nonexistent/data --out /nonexistent/bench"},
    {"export", "export --out /nonexistent/out"},
    {"resize", "resize --src /nonexistent/a --dst /nonexistent/b --max-size 64"},
    {"pack", "pack --src /nonexistent/a --out /nonexistent/db"},
    {"synth", "synth --out /nonexistent/out"},
};

struct Rule {
  std::vector<std::string> commands;  // those that have the flag
  std::string value;                  // appended to the command line
  std::string message;                // the whole line, after "faster: error: "
};

TEST(FlagRules, EveryCommandSaysTheSameOfTheSameBadValue) {
  const std::vector<Rule> rules = {
      {{"train", "eval", "load", "export", "resize", "pack", "synth"},
       "--workers -1",
       "--workers must be between 0 and 1024 (got -1)"},
      {{"train", "eval", "load", "export", "resize", "pack", "synth"},
       "--workers 5000",
       "--workers must be between 0 and 1024 (got 5000)"},
      {{"train", "eval", "load", "export", "resize", "pack", "synth"},
       "--workers many",
       "--workers must be an integer (got 'many')"},
      {{"train", "load", "bench"}, "--epochs 0", "--epochs must be between 1 and 1000000 (got 0)"},
      {{"train", "load", "bench"},
       "--epochs 99999999999",
       "--epochs must be between 1 and 1000000 (got 99999999999)"},
      {{"train", "eval", "load"},
       "--device tpu",
       "--device 'tpu' is not a device (use auto, cpu, cuda or cuda:N)"},
      {{"train", "eval", "load"},
       "--decode gpu",
       "--decode must be auto, cpu or nvjpeg (got 'gpu')"},
  };
  struct Run {
    std::string line, message;
    std::future<test::RunResult> result;
  };
  std::vector<Run> runs;
  for (const auto& rule : rules)
    for (const auto& name : rule.commands)
      for (const auto& [command, line] : kCommands)
        if (command == name) {
          const std::string args = line + " " + rule.value;
          runs.push_back(
              {args, rule.message, std::async(std::launch::async, test::run_faster, args)});
        }
  for (auto& r : runs) {
    const auto result = r.result.get();
    EXPECT_EQ(result.exit_code, kExitUsage) << r.line << "\n" << result.output;
    EXPECT_EQ(result.output.substr(0, result.output.find('\n')), "faster: error: " + r.message)
        << r.line;
  }
}

// --decode nvjpeg on the CPU: a usage error where --device cpu was typed, in train, eval and load
// alike (load once said it with exit code 1).
TEST(FlagRules, NvjpegOnACpuDeviceIsTheSameUsageErrorEverywhere) {
  REQUIRE_FASHION_MNIST();
  const auto& tree = test::exported_fashion_mnist(200);
  for (const std::string& line : {"train --data " + tree.string() + " --device cpu --decode nvjpeg",
                                  "eval --weights /nonexistent/w.pt --data " + tree.string() +
                                      " --device cpu --decode nvjpeg",
                                  "load " + tree.string() + " --device cpu --decode nvjpeg"}) {
    const auto r = test::run_faster(line);
    EXPECT_EQ(r.exit_code, kExitUsage) << line << "\n" << r.output;
    EXPECT_EQ(r.output.substr(0, r.output.find('\n')),
              "faster: error: --decode nvjpeg needs a CUDA device, and --device cpu was given "
              "(--decode cpu decodes on the CPU)")
        << line;
  }
}

TEST(FlagRules, AMistypedFlagGetsASuggestion) {
  for (const auto& [typo, meant] :
       std::vector<std::pair<std::string, std::string>>{{"train --epoch 3", "--epochs"},
                                                        {"train --translat 2", "--translate"},
                                                        {"load /x --wokers 2", "--workers"},
                                                        {"resize --src a --dst b --max-size 4 "
                                                         "--wrokers 2",
                                                         "--workers"}}) {
    const auto r = test::run_faster(typo);
    EXPECT_EQ(r.exit_code, kExitUsage) << typo << "\n" << r.output;
    EXPECT_NE(r.output.find("(did you mean " + meant + "?)"), std::string::npos) << r.output;
  }
  const auto r = test::run_faster("train --flip-crops");  // nothing near: no guess
  EXPECT_EQ(r.output.find("did you mean"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace faster

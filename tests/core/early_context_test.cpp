// The early CUDA context: its choice of device from a command line and environment, before the
// flags are parsed (it must name the device the command will use, or none: a context on a GPU the
// run does not use costs that GPU memory, a DDP launcher's or the bench's every child's), and its
// library's constructor running before LibTorch's in faster-torch.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "faster/core/early_context.h"
#include "support/test_support.h"

namespace faster {
namespace {

int device_for(std::vector<const char*> args, std::map<std::string, std::string> vars = {},
               bool on_by_default = true) {
  args.insert(args.begin(), "faster-torch");
  const EnvLookup env = [&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  return early_context_device(static_cast<int>(args.size()), args.data(), env, on_by_default);
}

TEST(EarlyContext, TheDeviceTheFlagsName) {
  EXPECT_EQ(device_for({"train"}), 0);  // --device auto
  EXPECT_EQ(device_for({"train", "--device", "auto"}), 0);
  EXPECT_EQ(device_for({"train", "--device", "cuda"}), 0);
  EXPECT_EQ(device_for({"train", "--device", "cuda:3", "--epochs", "2"}), 3);
  EXPECT_EQ(device_for({"eval", "--device=cuda:1", "--weights", "w.pt"}), 1);
  EXPECT_EQ(device_for({"load", "--device", "cuda:0", "--device", "cuda:2"}), 2);  // the last
}

TEST(EarlyContext, NoneWhereTheCommandUsesNoGpuOrTheFlagsAreNotUnderstood) {
  EXPECT_EQ(device_for({"train", "--device", "cpu"}), -1);
  EXPECT_EQ(device_for({"train", "--device=cpu"}), -1);
  EXPECT_EQ(device_for({"train", "--device", "cuda:x"}), -1);
  EXPECT_EQ(device_for({"train", "--device", "cuda:99999"}), -1);
  EXPECT_EQ(device_for({"train", "--device", "tpu"}), -1);
  EXPECT_EQ(device_for({"train", "--help"}), -1);
  EXPECT_EQ(device_for({"train", "--device", "cuda:1", "-h"}), -1);
  // bench trains in child processes; env and load --decode-only make no context.
  for (const char* command : {"bench", "env", "synth", "resize", "pack", "export", "--help", "x"})
    EXPECT_EQ(device_for({command}), -1) << command;
  EXPECT_EQ(device_for({"load", "--decode-only"}), -1);
  // A profiler's library, which the driver would load while LibTorch's constructors run.
  EXPECT_EQ(device_for({"train"}, {{"CUDA_INJECTION64_PATH", "/opt/nsys/libinject.so"}}), -1);
  EXPECT_EQ(device_for({}), -1);
  // Flags after "--" are not faster's.
  EXPECT_EQ(device_for({"train", "--", "--device", "cuda:2"}), 0);
}

TEST(EarlyContext, ADdpRankUsesItsLocalRankAndTheLauncherNone) {
  const std::vector<const char*> ddp = {"train", "--parallel", "ddp", "--nproc", "4"};
  EXPECT_EQ(device_for(ddp), -1);  // the launcher starting the ranks
  // Without --nproc and ranks: a world of one on --device.
  EXPECT_EQ(device_for({"train", "--parallel", "ddp", "--device", "cuda:2"}), 2);
  EXPECT_EQ(device_for(ddp, {{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}}), 1);
  EXPECT_EQ(device_for(ddp, {{"RANK", "2"}, {"WORLD_SIZE", "4"}}), 2);  // torchrun, one node
  EXPECT_EQ(
      device_for({"train", "--parallel=ddp"},
                 {{"SLURM_PROCID", "3"}, {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_LOCALID", "3"}}),
      3);
  // One GPU visible per task: device 0; a batch script's own shell is no step: none.
  EXPECT_EQ(device_for(ddp, {{"SLURM_PROCID", "3"},
                             {"SLURM_STEP_NUM_TASKS", "4"},
                             {"SLURM_LOCALID", "3"},
                             {"CUDA_VISIBLE_DEVICES", "5"}}),
            0);
  EXPECT_EQ(device_for(ddp, {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}}), -1);
  // One visible GPU outside Slurm (torchrun, the launcher): the local rank's, as the trainer.
  EXPECT_EQ(device_for(ddp, {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"CUDA_VISIBLE_DEVICES", "3"}}),
            1);
  EXPECT_EQ(device_for({"train", "--parallel", "ddp", "--device", "cpu"}, {{"RANK", "1"}}), -1);
  EXPECT_EQ(device_for({"train", "--parallel", "ddp"}, {{"RANK", "1"}, {"LOCAL_RANK", "x"}}), -1);
  // Empty variables are unset, as the trainer reads them.
  EXPECT_EQ(device_for(ddp, {{"RANK", ""},
                             {"WORLD_SIZE", ""},
                             {"LOCAL_RANK", "1"},
                             {"SLURM_PROCID", "2"},
                             {"SLURM_STEP_NUM_TASKS", "4"},
                             {"SLURM_LOCALID", "2"}}),
            2);
  // DataParallel runs in one process, from the first device.
  EXPECT_EQ(device_for({"train", "--parallel", "dp"}), 0);
}

TEST(EarlyContext, TheEnvironmentSwitchesIt) {
  EXPECT_EQ(device_for({"train"}, {{"FASTER_EARLY_CONTEXT", "0"}}), -1);
  EXPECT_EQ(device_for({"train"}, {}, false), -1);
  EXPECT_EQ(device_for({"train"}, {{"FASTER_EARLY_CONTEXT", "1"}}, false), 0);
  for (const char* other : {"", "true", "on", "2"})  // only 1 turns it on
    EXPECT_EQ(device_for({"train"}, {{"FASTER_EARLY_CONTEXT", other}}, false), -1) << other;
}

// On by default for the recipes timed from the process's start, and only for them.
TEST(EarlyContext, OnByDefaultForTheSpeedrunRecipes) {
  const auto by_default = [](std::vector<const char*> args) {
    args.insert(args.begin(), "faster");
    return early_context_by_default(static_cast<int>(args.size()), args.data());
  };
  EXPECT_TRUE(by_default({"train", "--recipe", "speedrun"}));
  EXPECT_TRUE(by_default({"train", "--seed", "3", "--recipe=speedrun95", "--epochs", "4"}));
  EXPECT_FALSE(by_default({"train"}));
  EXPECT_FALSE(by_default({"train", "--recipe", "imagenet"}));
  EXPECT_FALSE(by_default({"train", "--recipe"}));  // no value: the flags refuse it
  EXPECT_FALSE(by_default({"eval", "--recipe", "speedrun"}));
  EXPECT_FALSE(by_default({"train", "--", "--recipe", "speedrun"}));
  EXPECT_FALSE(by_default({}));
}

TEST(EarlyContext, FinishingWithoutOneSaysNoneAndRepeats) {
  // This binary's command line names no command: nothing was started.
  EXPECT_LT(finish_early_context(), 0.0);
  EXPECT_LT(finish_early_context(), 0.0);
}

// 32 hardware work queues where the environment does not say how many; the user's own value stays.
TEST(EarlyContext, MoreWorkQueuesUnlessTheEnvironmentSaysHowMany) {
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  EXPECT_TRUE(ask_for_more_work_queues());
  EXPECT_STREQ(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "32");
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4", 1);
  EXPECT_FALSE(ask_for_more_work_queues());
  EXPECT_STREQ(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "4");
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
}

// The point of the .preinit_array entry: in faster-torch the loader calls it before any library's
// constructor, LibTorch's included, whose constructors take most of the time before main().
TEST(EarlyContext, ItStartsBeforeLibTorchsConstructors) {
  const auto r = test::run_shell("LD_DEBUG=libs " + std::string(FASTER_TORCH_BIN) + " --help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> calls;  // "preinit: PROGRAM" and "init: LIBRARY", in the loader's order
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (const auto at = line.find("calling "); at != std::string::npos)
      calls.push_back(line.substr(at + 8));
  const auto position = [&calls](const std::string& text) {
    for (size_t i = 0; i < calls.size(); ++i)
      if (calls[i].find(text) != std::string::npos) return static_cast<int>(i);
    return -1;
  };
  const int preinit = position("preinit: ");
  ASSERT_GE(preinit, 0) << r.output.substr(0, 2000);
  int torch_libraries = 0;  // libc10, libtorch, libtorch_cpu (and _cuda in a CUDA build)
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].rfind("init: ", 0) == 0 && (calls[i].find("/libtorch") != std::string::npos ||
                                             calls[i].find("/libc10") != std::string::npos)) {
      ++torch_libraries;
      EXPECT_LT(preinit, static_cast<int>(i)) << calls[i];
    }
  EXPECT_GE(torch_libraries, 2);
}

}  // namespace
}  // namespace faster

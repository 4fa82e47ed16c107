// The early CUDA context's choice of device from a command line and environment, before the flags
// are parsed: it must name the device the command will use, or none (a context on a GPU the run
// does not use costs that GPU memory, and a DDP launcher's context every rank's).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "faster/core/early_context.h"

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
  for (const char* command : {"bench", "env"}) EXPECT_EQ(device_for({command}), 0);
}

TEST(EarlyContext, NoneWhereTheCommandUsesNoGpuOrTheFlagsAreNotUnderstood) {
  EXPECT_EQ(device_for({"train", "--device", "cpu"}), -1);
  EXPECT_EQ(device_for({"train", "--device=cpu"}), -1);
  EXPECT_EQ(device_for({"train", "--device", "cuda:x"}), -1);
  EXPECT_EQ(device_for({"train", "--device", "cuda:99999"}), -1);
  EXPECT_EQ(device_for({"train", "--device", "tpu"}), -1);
  EXPECT_EQ(device_for({"train", "--help"}), -1);
  EXPECT_EQ(device_for({"train", "--device", "cuda:1", "-h"}), -1);
  for (const char* command : {"synth", "resize", "pack", "export", "--help", "nonsense"})
    EXPECT_EQ(device_for({command}), -1) << command;
  EXPECT_EQ(device_for({}), -1);
  // Flags after "--" are not faster's.
  EXPECT_EQ(device_for({"train", "--", "--device", "cuda:2"}), 0);
}

TEST(EarlyContext, ADdpRankUsesItsLocalRankAndTheLauncherNone) {
  const std::vector<const char*> ddp = {"train", "--parallel", "ddp", "--nproc", "4"};
  EXPECT_EQ(device_for(ddp), -1);  // the launcher starting the ranks
  EXPECT_EQ(device_for(ddp, {{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}}), 1);
  EXPECT_EQ(device_for(ddp, {{"RANK", "2"}, {"WORLD_SIZE", "4"}}), 2);  // torchrun, one node
  EXPECT_EQ(device_for({"train", "--parallel=ddp"},
                       {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "3"}}),
            3);
  EXPECT_EQ(device_for({"train", "--parallel", "ddp", "--device", "cpu"}, {{"RANK", "1"}}), -1);
  EXPECT_EQ(device_for({"train", "--parallel", "ddp"}, {{"RANK", "1"}, {"LOCAL_RANK", "x"}}), -1);
  // DataParallel runs in one process, from the first device.
  EXPECT_EQ(device_for({"train", "--parallel", "dp"}), 0);
}

TEST(EarlyContext, TheEnvironmentSwitchesItAndABuildWithoutCudaNeedsItOn) {
  EXPECT_EQ(device_for({"train"}, {{"FASTER_EARLY_CONTEXT", "0"}}), -1);
  EXPECT_EQ(device_for({"train"}, {}, false), -1);
  EXPECT_EQ(device_for({"train"}, {{"FASTER_EARLY_CONTEXT", "1"}}, false), 0);
}

TEST(EarlyContext, FinishingWithoutOneIsZeroAndRepeatable) {
  // These tests' binary has no preinit entry: nothing was started.
  EXPECT_EQ(finish_early_context(), 0.0);
  EXPECT_EQ(finish_early_context(), 0.0);
}

}  // namespace
}  // namespace faster

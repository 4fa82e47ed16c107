// World settings from the environment: torchrun's, Slurm's, none; and the inconsistent ones.
#include <gtest/gtest.h>

#include <cstdlib>

#include "faster/core/error.h"
#include "faster/train/parallel/launch.h"
#include "faster/train/parallel/world.h"

namespace faster::train {
namespace {

class WorldEnv : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* k : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                          "MASTER_PORT", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
                          "SLURM_NTASKS_PER_NODE", "SLURM_LAUNCH_NODE_IPADDR", "FASTER_LAUNCHER"})
      unsetenv(k);
  }
  static void set(const char* k, const char* v) { setenv(k, v, 1); }
  static std::string error() {
    try {
      world_from_env();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(WorldEnv, NothingSetIsAWorldOfOne) {
  const auto w = world_from_env();
  EXPECT_EQ(w.world, 1);
  EXPECT_EQ(w.rank, 0);
  EXPECT_EQ(w.source, "single");
  EXPECT_GT(w.master_port, 0);
}

TEST_F(WorldEnv, Torchrun) {
  set("RANK", "5");
  set("LOCAL_RANK", "1");
  set("WORLD_SIZE", "8");
  set("LOCAL_WORLD_SIZE", "4");
  set("MASTER_ADDR", "10.1.2.3");
  set("MASTER_PORT", "29511");
  const auto w = world_from_env();
  EXPECT_EQ(w.source, "torchrun");
  EXPECT_EQ(w.rank, 5);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.world, 8);
  EXPECT_EQ(w.local_world, 4);
  EXPECT_EQ(w.master_addr, "10.1.2.3");
  EXPECT_EQ(w.master_port, 29511);
  EXPECT_FALSE(w.is_main());
}

TEST_F(WorldEnv, Slurm) {
  set("SLURM_PROCID", "3");
  set("SLURM_LOCALID", "1");
  set("SLURM_NTASKS", "4");
  set("SLURM_NTASKS_PER_NODE", "2(x2)");
  set("SLURM_LAUNCH_NODE_IPADDR", "192.0.2.7");
  const auto w = world_from_env();
  EXPECT_EQ(w.source, "slurm");
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.world, 4);
  EXPECT_EQ(w.local_world, 2);
  EXPECT_EQ(w.master_addr, "192.0.2.7");
  EXPECT_EQ(w.master_port, 29500);
}

TEST_F(WorldEnv, InconsistentSettingsNameTheProblem) {
  set("RANK", "2");
  set("WORLD_SIZE", "2");
  set("MASTER_ADDR", "127.0.0.1");
  set("MASTER_PORT", "29500");
  EXPECT_NE(error().find("rank 2 is not below the world size 2"), std::string::npos) << error();
  set("RANK", "x");
  EXPECT_NE(error().find("RANK='x'"), std::string::npos) << error();
  set("RANK", "0");
  set("LOCAL_RANK", "3");
  set("LOCAL_WORLD_SIZE", "2");
  EXPECT_NE(error().find("local rank 3"), std::string::npos) << error();
  unsetenv("LOCAL_RANK");
  unsetenv("LOCAL_WORLD_SIZE");
  unsetenv("MASTER_PORT");
  EXPECT_NE(error().find("MASTER_PORT"), std::string::npos) << error();
  set("MASTER_PORT", "70000");
  EXPECT_NE(error().find("not a TCP port"), std::string::npos) << error();
}

TEST(Launch, StripsNproc) {
  const std::vector<std::string> argv = {"train", "--nproc",   "2",       "--parallel",
                                         "ddp",   "--nproc=3", "--batch", "8"};
  const auto args = without_nproc(argv);
  EXPECT_EQ(args, (std::vector<std::string>{"train", "--parallel", "ddp", "--batch", "8"}));
}

}  // namespace
}  // namespace faster::train

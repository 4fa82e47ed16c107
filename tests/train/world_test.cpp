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
    for (const char* k :
         {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
          "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE",
          "SLURM_LAUNCH_NODE_IPADDR", "FASTER_LAUNCHER", "SLURM_STEP_NUM_TASKS",
          "SLURM_STEP_TASKS_PER_NODE", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_JOB_ID"})
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

// A task of an srun step (the variables srun sets): rank 0 on the step's first node, a port from
// the job's id (two jobs on a node must not share one).
TEST_F(WorldEnv, Slurm) {
  set("SLURM_PROCID", "3");
  set("SLURM_LOCALID", "1");
  set("SLURM_NTASKS", "4");
  set("SLURM_STEP_NUM_TASKS", "4");
  set("SLURM_STEP_TASKS_PER_NODE", "2(x2)");
  set("SLURM_STEP_NODELIST", "gpu[07-08]");
  set("SLURM_LAUNCH_NODE_IPADDR", "192.0.2.7");  // srun's host: maybe a login node
  set("SLURM_JOB_ID", "123456");
  const auto w = world_from_env();
  EXPECT_EQ(w.source, "slurm");
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.world, 4);
  EXPECT_EQ(w.local_world, 2);
  EXPECT_EQ(w.master_addr, "gpu07");
  EXPECT_EQ(w.master_port, 15000 + 3456);
  set("MASTER_PORT", "29511");  // the user's own wins
  EXPECT_EQ(world_from_env().master_port, 29511);
  // Without a node list, srun's host; without a job id, torch's default port.
  unsetenv("SLURM_STEP_NODELIST");
  unsetenv("SLURM_JOB_ID");
  unsetenv("MASTER_PORT");
  EXPECT_EQ(world_from_env().master_addr, "192.0.2.7");
  EXPECT_EQ(world_from_env().master_port, 29500);
}

// An sbatch script's own shell (SLURM_PROCID=0, SLURM_NTASKS=4, no step) is one process, not
// rank 0 of four that never come.
TEST_F(WorldEnv, ABatchScriptIsNoStep) {
  set("SLURM_PROCID", "0");
  set("SLURM_NTASKS", "4");
  set("SLURM_JOB_NODELIST", "gnode[10,20,25,37]");
  EXPECT_EQ(world_from_env().source, "single");
  EXPECT_FALSE(in_slurm_step());
}

TEST_F(WorldEnv, SlurmTasksPerNodeAndLargeJobIds) {
  set("SLURM_PROCID", "2");
  set("SLURM_LOCALID", "1");
  set("SLURM_STEP_NUM_TASKS", "4");
  set("SLURM_STEP_TASKS_PER_NODE", "1,3");  // node 1 runs three
  set("SLURM_NODEID", "1");
  set("SLURM_JOB_ID", "40123456");  // ids run past 16 million
  const auto w = world_from_env();
  EXPECT_EQ(w.local_world, 3);
  EXPECT_EQ(w.master_port, 15000 + 3456);
  unsetenv("SLURM_NODEID");
  // A one-task step (srun --pty bash) is one process, --nproc may start ranks there.
  set("SLURM_STEP_NUM_TASKS", "1");
  EXPECT_FALSE(in_slurm_step());
  EXPECT_EQ(world_from_env().source, "single");
}

TEST(SlurmTasks, PerNodeListsExpand) {
  EXPECT_EQ(tasks_on_node("4", 0), 4);
  EXPECT_EQ(tasks_on_node("2(x3),1", 0), 2);
  EXPECT_EQ(tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(tasks_on_node("2(x3),1", 3), 1);
  EXPECT_EQ(tasks_on_node("2(x3),1", 4), -1);  // no such node
  EXPECT_EQ(tasks_on_node("1,3", 1), 3);
  for (const char* bad : {"", "x", "2(x", "2(x0)", "2;3"})
    EXPECT_EQ(tasks_on_node(bad, 0), -1) << bad;
}

TEST(SlurmHosts, FirstHostOfAList) {
  EXPECT_EQ(first_slurm_host("node1"), "node1");
  EXPECT_EQ(first_slurm_host("node1,node2"), "node1");
  EXPECT_EQ(first_slurm_host("gpu[03-05,7],cpu1"), "gpu03");
  EXPECT_EQ(first_slurm_host("gnode[10,20,25,37]"), "gnode10");
  EXPECT_EQ(first_slurm_host("rack[2]-n[01-4]"), "rack2-n01");
  EXPECT_EQ(first_slurm_host("bad[1-2"), "");
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

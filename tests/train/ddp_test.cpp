// DDP on this machine: two Gloo processes (faster train --parallel ddp --nproc 2) against one
// process training on the combined batch, with and without SyncBatchNorm; a killed rank ends the
// job; bad world settings and a busy port give one-line errors.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "faster/models/thinnet.h"
#include "faster/train/checkpoint.h"
#include "support/test_support.h"

namespace faster::train {
namespace {

const std::string kSmall =
    " --device cpu --epochs 1 --blocks 0,0,0 --filters 8,16,32 --train-limit 512 --test-limit 128 "
    "--lr 0.05 --workers 1" +
    test::fashion_mnist_flag();

// Loads two state_dicts into ThinNets and returns the largest parameter/buffer difference.
double max_difference(const std::string& a, const std::string& b, models::Norm norm,
                      std::string* worst_name = nullptr) {
  models::ThinNetOptions o;
  o.blocks = {0, 0, 0};
  o.filters = {8, 16, 32};
  o.norm = norm;
  models::ThinNet ma(o), mb(o);
  load_state_dict(*ma, a);
  load_state_dict(*mb, b);
  double worst = 0;
  const auto consider = [&](const std::string& name, const torch::Tensor& x,
                            const torch::Tensor& y) {
    const double d = (x.to(torch::kDouble) - y.to(torch::kDouble)).abs().max().item<double>();
    if (d > worst && worst_name) *worst_name = name;
    worst = std::max(worst, d);
  };
  auto pb = mb->named_parameters();
  for (const auto& kv : ma->named_parameters()) consider(kv.key(), kv.value(), pb[kv.key()]);
  auto bb = mb->named_buffers();
  for (const auto& kv : ma->named_buffers()) consider(kv.key(), kv.value(), bb[kv.key()]);
  return worst;
}

// 8 steps: two ranks with batch 32 each against one process with batch 64 over the same samples.
void expect_ddp_equals_combined_batch(const std::string& ddp_flags, const std::string& single_flags,
                                      models::Norm norm, double tolerance = 1e-4) {
  test::TempDir d;
  const auto ddp = test::run_faster("train --parallel ddp --nproc 2 --batch 32" + kSmall +
                                    ddp_flags + " --save " + (d / "ddp.pt").string() + " --json " +
                                    (d / "ddp.json").string());
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  EXPECT_NE(ddp.output.find("2 ranks (gloo)"), std::string::npos) << ddp.output;
  // Rank 0 alone reports: one done line, one writer of --json (both ranks once wrote it, and
  // the file sometimes ended in the other's tail).
  const auto first_done = ddp.output.find("done: ");
  ASSERT_NE(first_done, std::string::npos) << ddp.output;
  EXPECT_EQ(ddp.output.find("done: ", first_done + 1), std::string::npos) << ddp.output;
  const auto report = nlohmann::json::parse(test::read_file(d / "ddp.json"));
  EXPECT_EQ(report["options"]["world_size"], 2);
  const auto one = test::run_faster("train --batch 64" + kSmall + single_flags + " --save " +
                                    (d / "one.pt").string());
  ASSERT_EQ(one.exit_code, 0) << one.output;
  // Float sums in another order, over 8 SGD steps: agreement to `tolerance` absolute (weights
  // ~0.3).
  std::string worst;
  EXPECT_LT(max_difference((d / "ddp.pt").string(), (d / "one.pt").string(), norm, &worst),
            tolerance)
      << "largest difference in " << worst;
  // And training moved the weights at all (the comparison is not between two untrained models).
  models::ThinNetOptions o;
  o.blocks = {0, 0, 0};
  o.filters = {8, 16, 32};
  o.norm = norm;
  test::TempDir fresh;
  torch::manual_seed(0);
  models::ThinNet init(o);
  save_state_dict(*init, fresh / "init.pt");
  EXPECT_GT(max_difference((d / "ddp.pt").string(), (fresh / "init.pt").string(), norm), 1e-2);
}

TEST(Ddp, TwoGlooRanksEqualOneProcessOnTheCombinedBatchWithoutBatchNorm) {
  REQUIRE_FASHION_MNIST();
  expect_ddp_equals_combined_batch(" --norm none", " --norm none", models::Norm::kNone);
}

TEST(Ddp, TwoGlooRanksWithSyncBnEqualOneProcessOnTheCombinedBatch) {
  REQUIRE_FASHION_MNIST();
  // Against one rank with the same SyncBatchNorm code on the combined batch: only the split
  // differs. Partial sums are added in another order; BatchNorm amplifies that rounding (about 2e-4
  // on the first conv's weights after 8 steps, measured), far below what training moves (> 1e-2).
  expect_ddp_equals_combined_batch(" --sync-bn", " --parallel ddp --sync-bn", models::Norm::kBatch,
                                   5e-4);
  // Against LibTorch's own BatchNorm2d (the same function, sync_batchnorm_test proves it in double
  // precision): float32 reductions in another order drift by a few 1e-4 over 8 steps.
  expect_ddp_equals_combined_batch(" --sync-bn", "", models::Norm::kBatch, 1e-3);
}

// The image loader under DDP: each rank reads its own shard of every epoch (DistributedSampler
// semantics) from Fashion-MNIST exported as JPEGs, crops drawn per (seed, epoch, image) whatever
// the rank; two Gloo ranks of ResNet-18 with SyncBatchNorm (batch 16 each) against one process with
// batch 32 over the same images, two epochs of one step each (the epochs reshuffle).  More steps
// are not compared: in float32 a 20-layer BatchNorm network on these flat-backgrounded images is
// ill-conditioned (measured with PyTorch on such batches: float32 against float64 gradients differ
// by 0.1-0.4 % at 64-96 px), so sums split over ranks drift apart within a few steps whatever the
// code.  (The ThinNet tests above compare 8 steps through the same loader.)
TEST(Ddp, TwoGlooRanksOnJpegFoldersEqualOneProcessOnTheCombinedBatch) {
  REQUIRE_FASHION_MNIST();
  test::TempDir d;
  const std::string common = " --data " + test::exported_fashion_mnist(32).string() +
                             " --model resnet18 --res 32 --device cpu --epochs 2 --workers 1 "
                             "--lr 0.02 --warmup-epochs 0 --last-batch drop";
  const auto ddp = test::run_faster("train --parallel ddp --nproc 2 --batch 16 --sync-bn" + common +
                                    " --save " + (d / "ddp.pt").string());
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  EXPECT_NE(ddp.output.find("2 ranks (gloo)"), std::string::npos) << ddp.output;
  const auto one =
      test::run_faster("train --batch 32" + common + " --save " + (d / "one.pt").string());
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto init = test::run_faster("train --batch 32" + common + " --lr 1e-12 --save " +
                                     (d / "init.pt").string());
  ASSERT_EQ(init.exit_code, 0) << init.output;
  const auto a = read_state_dict(d / "ddp.pt"), b = read_state_dict(d / "one.pt"),
             c = read_state_dict(d / "init.pt");
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  std::string worst_name;
  for (const auto& kv : a) {
    const auto x = kv.value().to(torch::kDouble), y = b.at(kv.key()).to(torch::kDouble);
    const double diff = (x - y).abs().max().item<double>();
    if (diff > worst) worst = diff, worst_name = kv.key();
  }
  // Measured here: 1.0e-5 (bn1.running_var); the first conv moved 0.08 from its initial weights.
  EXPECT_LT(worst, 1e-4) << "largest difference in " << worst_name;
  const double moved = (b.at("conv1.weight") - c.at("conv1.weight")).abs().max().item<double>();
  EXPECT_GT(moved, 1e-2);
}

TEST(Ddp, SmallBucketsGiveTheSameResult) {
  REQUIRE_FASHION_MNIST();
  // About 40 KB buckets: several all-reduces per step, launched from the backward hooks.
  expect_ddp_equals_combined_batch(" --norm none --bucket-mb 0.04", " --norm none",
                                   models::Norm::kNone);
}

// Without --sync-bn each rank's BatchNorm statistics follow its shard; the test pass must score
// the model that --save holds (rank 0's statistics on every rank), not a mix of the ranks'.  And
// the step warm-up (--prewarm) runs on all ranks or none where the test shards differ in size
// (127 images: 64 and 63 for batch 64), else their all-reduces pair different steps.
TEST(Ddp, TestScoresAreTheSavedModelsAndTheWarmUpAgrees) {
  REQUIRE_FASHION_MNIST();
  test::TempDir d;
  const auto ddp = test::run_faster(
      "train --parallel ddp --nproc 2 --batch 32 --device cpu --epochs 2 --blocks 0,0,0 "
      "--filters 8,16,32 --train-limit 512 --lr 0.05 --workers 1" +
      test::fashion_mnist_flag() + " --save " + (d / "ddp.pt").string() + " --json " +
      (d / "ddp.json").string());
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  const auto report = nlohmann::json::parse(test::read_file(d / "ddp.json"));
  const auto eval = test::run_faster("eval --device cpu --weights " + (d / "ddp.pt").string() +
                                     " --data " + test::fashion_mnist_dir().string() + " --json " +
                                     (d / "eval.json").string());
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  const auto scored = nlohmann::json::parse(test::read_file(d / "eval.json"));
  const auto& last = report["epochs"].back();
  // The same 10,000 images and weights; only the batches differ (float sums in another order).
  // Per image the logits match to float rounding (BatchNorm in eval mode is batch-independent): the
  // mean loss to 2e-5 (the ranks' mixed statistics moved it by 2e-4), top-1/top-5 to 2 images.
  EXPECT_NEAR(last["test_accuracy"].get<double>(), scored["top1"].get<double>(), 0.021);
  EXPECT_NEAR(last["test_top5"].get<double>(), scored["top5"].get<double>(), 0.021);
  EXPECT_NEAR(last["test_loss"].get<double>(), scored["loss"].get<double>(), 2e-5);

  const auto warmed = test::run_faster(
      "train --recipe speedrun --parallel ddp --nproc 2 --batch 64 --device cpu --epochs 1 "
      "--filters 8,16,32 --train-limit 256 --test-limit 127 --workers 1" +
      test::fashion_mnist_flag());
  EXPECT_EQ(warmed.exit_code, 0) << warmed.output;
}

// Kills a background job's whole process group when the test ends, whatever happened.
struct JobGuard {
  std::filesystem::path pid_file;
  ~JobGuard() {
    if (std::filesystem::exists(pid_file))
      test::run_shell("kill -9 -- -" + test::read_file(pid_file) + " 2>/dev/null");
  }
};

// Ctrl-C to a --nproc job stops every rank and names the checkpoint to resume from (a single
// process does the same; the launcher said nothing of it).
TEST(Ddp, InterruptedJobNamesItsCheckpoint) {
  REQUIRE_FASHION_MNIST();
  test::TempDir t;
  const int code = test::signal_when(
      std::string(FASTER_BIN) + " train --parallel ddp --nproc 2 --epochs 100000 --checkpoint " +
          (t / "c.ckpt").string() + kSmall,
      t / "out", [&](pid_t) { return std::filesystem::exists(t / "c.ckpt"); }, SIGINT);
  const std::string out = test::read_file(t / "out");
  EXPECT_EQ(code, 130) << out;
  EXPECT_NE(out.find("--resume " + (t / "c.ckpt").string() + " goes on from there"),
            std::string::npos)
      << out;
}

// A DDP job's checkpoint resumed from a shell without flags goes on as the job ran (it was
// refused: one process, world size 1, would have written over the job's outputs), and says so.
TEST(Ddp, BareResumeLaunchesTheJobsRanks) {
  REQUIRE_FASHION_MNIST();
  test::TempDir t;
  const auto ckpt = (t / "c.ckpt").string();
  auto r = test::run_faster("train --parallel ddp --nproc 2 --checkpoint " + ckpt + kSmall);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_faster("train --resume " + ckpt + " --epochs 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("launching as the resumed run ran: --parallel ddp --nproc 2\n"),
            std::string::npos)
      << r.output;
  const auto meta = train::checkpoint_meta(train::read_state_dict(ckpt), ckpt);
  EXPECT_EQ(meta.value("epochs_done", 0), 2);
  EXPECT_EQ(meta["options"].value("world_size", 0), 2);
  EXPECT_EQ(meta["options"].value("parallel", ""), "ddp");
  // --parallel given decides: one process, which would write over the job's outputs, is refused.
  r = test::run_faster("train --resume " + ckpt + " --epochs 3 --parallel none");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("world_size 1 (was 2)"), std::string::npos) << r.output;
  // A job of one rank a machine (two "machines" here): not launched all on this one.
  const auto two = (t / "two.ckpt").string();
  const std::string env = "FASTER_PROGRESS=plain MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                          std::to_string(29400 + getpid() % 400) +
                          " WORLD_SIZE=2 LOCAL_WORLD_SIZE=1 LOCAL_RANK=0 ";
  const std::string train =
      std::string(FASTER_BIN) + " train --parallel ddp --checkpoint " + two + kSmall;
  r = test::run_shell("(" + env + "RANK=1 " + train + " > /dev/null 2>&1 & " + env + "RANK=0 " +
                      train + "; rc=$?; wait; exit $rc)");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_faster("train --resume " + two + " --epochs 2");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("its run had 2 ranks, 1 a machine\nHINT: launch it as it ran"),
            std::string::npos)
      << r.output;
}

TEST(Ddp, KilledRankEndsTheJobWithinTheBound) {
  REQUIRE_FASHION_MNIST();
  test::TempDir d;
  const std::string log = (d / "job.log").string();
  JobGuard guard{d / "job.pid"};
  // A long job in its own process group, in the background; the group id goes to job.pid.
  test::run_shell("setsid sh -c '(FASTER_PROGRESS=plain " + std::string(FASTER_BIN) +
                  " train --parallel ddp --nproc 2 --device cpu --epochs 1000 --blocks 0,0,0 "
                  "--filters 8,16,32 --train-limit 512 --test-limit 128 --batch 32 --workers 1" +
                  test::fashion_mnist_flag() + " > " + log + " 2>&1; echo $? > " +
                  (d / "job.rc").string() + ")' > /dev/null 2>&1 < /dev/null & echo $! > " +
                  (d / "job.pid").string());
  // Wait until training runs (an epoch line), then kill rank 1.
  const auto start = std::chrono::steady_clock::now();
  std::string rank_pid;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
    if (std::filesystem::exists(log) &&
        test::read_file(log).find("epoch 1/1000") != std::string::npos) {
      rank_pid =
          test::run_shell("pgrep -n -f '[f]aster train --parallel ddp --device cpu --epochs 1000'")
              .output;
      break;
    }
    usleep(200000);
  }
  ASSERT_FALSE(rank_pid.empty()) << test::read_file(log);
  const auto killed_at = std::chrono::steady_clock::now();
  test::run_shell("kill -9 " + rank_pid);
  while (!std::filesystem::exists(d / "job.rc") &&
         std::chrono::steady_clock::now() - killed_at < std::chrono::seconds(60))
    usleep(100000);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  ASSERT_TRUE(std::filesystem::exists(d / "job.rc")) << "job still running 60 s after the kill";
  EXPECT_NE(std::stoi(test::read_file(d / "job.rc")), 0);
  EXPECT_LT(waited, 15.0);  // the launcher stops the survivors at once (10 s grace at most)
  EXPECT_NE(test::read_file(log).find("stopping the other ranks"), std::string::npos)
      << test::read_file(log);
}

TEST(Ddp, BadWorldSettingsAndBusyPort) {
  const auto bad =
      test::run_faster_env("RANK=3 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29555",
                           "train --parallel ddp --device cpu");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("rank 3 is not below the world size 2"), std::string::npos)
      << bad.output;
  const auto half =
      test::run_faster_env("RANK=0 WORLD_SIZE=2", "train --parallel ddp --device cpu");
  EXPECT_NE(half.output.find("MASTER_ADDR or MASTER_PORT"), std::string::npos) << half.output;
  // Occupy a port, then ask rank 0 to serve the store on it.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  const auto busy =
      test::run_faster_env("RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port,
                           "train --parallel ddp --device cpu --dist-timeout 5");
  // A rank whose store connection gets no answer (that port's program is no store) waited for
  // ever; it now ends a little after --dist-timeout.
  const auto silent = test::run_faster_env(
      "RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port,
      "train --parallel ddp --device cpu --dist-timeout 2");
  close(fd);
  EXPECT_NE(busy.exit_code, 0);
  EXPECT_NE(busy.output.find("port is busy"), std::string::npos) << busy.output;
  EXPECT_NE(busy.output.find("HINT"), std::string::npos) << busy.output;
  EXPECT_EQ(silent.exit_code, 1) << silent.output;
  EXPECT_NE(silent.output.find("rank 1: faster: error: could not join the job at 127.0.0.1:" +
                               port + " within 2 s: no answer from the store there"),
            std::string::npos)
      << silent.output;
  // Rank 0 without its peer ends at --dist-timeout, saying how many joined (it waited twice as
  // long and said "Socket Timeout").
  const auto started = std::chrono::steady_clock::now();
  const auto alone =
      test::run_faster_env("RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port,
                           "train --parallel ddp --device cpu --dist-timeout 4");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(alone.exit_code, 1) << alone.output;
  EXPECT_NE(alone.output.find("rank 0: faster: error: 1 of 2 ranks joined the job at 127.0.0.1:" +
                              port + " within 4 s"),
            std::string::npos)
      << alone.output;
  EXPECT_LT(seconds, 8.0) << alone.output;
  // torchrun (or srun -n 2) without --parallel ddp: two lone runs writing the same files before.
  const auto lone = test::run_faster_env(
      "RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port, "train --device cpu");
  EXPECT_EQ(lone.exit_code, 2) << lone.output;
  EXPECT_NE(lone.output.find("one rank of a launched job (WORLD_SIZE=2) but --parallel ddp is not "
                             "given"),
            std::string::npos)
      << lone.output;
  // Files a launched job would read or write are checked once, before any rank starts (each
  // rank said the same error before).
  const auto files = test::run_faster("train --nproc 2 --parallel ddp --device cpu --resume " +
                                      std::string("/nonexistent/c.ckpt") + kSmall);
  EXPECT_EQ(files.exit_code, 1) << files.output;
  EXPECT_EQ(std::count(files.output.begin(), files.output.end(), '\n'), 1) << files.output;
  EXPECT_NE(files.output.find("/nonexistent/c.ckpt"), std::string::npos) << files.output;
  const auto log_dir = test::run_faster("train --nproc 2 --parallel ddp --device cpu --log-dir " +
                                        std::string("/proc/version/logs") + kSmall);
  EXPECT_EQ(log_dir.exit_code, 1) << log_dir.output;
  EXPECT_EQ(std::count(log_dir.output.begin(), log_dir.output.end(), '\n'), 1) << log_dir.output;
  const auto nproc = test::run_faster("train --nproc 2 --device cpu");
  EXPECT_NE(nproc.output.find("--nproc needs --parallel ddp"), std::string::npos) << nproc.output;
  const auto port0 = test::run_faster_env("MASTER_PORT=70000",
                                          "train --nproc 2 --parallel ddp "
                                          "--device cpu");
  EXPECT_EQ(port0.exit_code, 1) << port0.output;
  EXPECT_NE(port0.output.find("MASTER_PORT 70000 is not a TCP port"), std::string::npos)
      << port0.output;
  // A rank reads it by the same rule (it once read "123abc" as 123 where the launcher refused it).
  const auto rank_port =
      test::run_faster_env("RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=123abc",
                           "train --parallel ddp --device cpu");
  EXPECT_EQ(rank_port.exit_code, 1) << rank_port.output;
  EXPECT_NE(rank_port.output.find("MASTER_PORT 123abc is not a TCP port"), std::string::npos)
      << rank_port.output;
  const auto iface = test::run_faster_env("GLOO_SOCKET_IFNAME=lo,nosuch0",
                                          "train --nproc 2 --parallel ddp --device cpu" + kSmall);
  EXPECT_NE(iface.exit_code, 0);
  EXPECT_NE(iface.output.find("GLOO_SOCKET_IFNAME: cannot use network interface nosuch0"),
            std::string::npos)
      << iface.output;
  // A launcher started with SIGCHLD ignored (some job runners do) still reports a failed rank:
  // the kernel reaped the ranks and the job ended with 0 before.
  const auto ignored =
      test::run_shell("perl -e '$SIG{CHLD}=\"IGNORE\"; exec @ARGV' " + std::string(FASTER_BIN) +
                      " train --nproc 2 --parallel ddp --device cpu --resume /nonexistent/c.ckpt");
  EXPECT_NE(ignored.exit_code, 0) << ignored.output;
}

// Ranks started by hand with other settings (here --batch) would train out of step until a
// collective timed out; both now stop at once, each saying what it found.
TEST(Ddp, RanksStartedWithOtherSettingsStopAtOnce) {
  REQUIRE_FASHION_MNIST();
  test::TempDir t;
  const std::string env = "FASTER_PROGRESS=plain MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                          std::to_string(29000 + getpid() % 400) + " WORLD_SIZE=2 ";
  const std::string train = std::string(FASTER_BIN) + " train --parallel ddp" + kSmall;
  const auto r = test::run_shell("(" + env + "RANK=1 " + train + " --batch 64 > " +
                                 (t / "r1.txt").string() + " 2>&1 & " + env + "RANK=0 " + train +
                                 " --batch 128 --dist-timeout 60; rc=$?; wait; exit $rc)");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(
                "rank 0: faster: error: other ranks were started with other settings than rank 0"),
            std::string::npos)
      << r.output;
  const std::string r1 = test::read_file(t / "r1.txt");
  EXPECT_NE(r1.find("rank 1: faster: error: this rank was started with other settings than rank 0"),
            std::string::npos)
      << r1;
}

// torchrun's agent serves the store on MASTER_PORT itself (TORCHELASTIC_USE_AGENT_STORE=True):
// the ranks join it as clients, their keys under the restart's prefix, instead of rank 0 failing
// to listen on a busy port.  This test is the agent (Debian's torchrun cannot start one here).
TEST(Ddp, RanksJoinTorchrunsAgentStore) {
  REQUIRE_FASHION_MNIST();
  c10d::TCPStoreOptions agent;
  agent.port = 0;  // any free port
  agent.isServer = true;
  agent.waitWorkers = false;
  agent.timeout = std::chrono::seconds(60);
  const auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", agent);
  const std::string env =
      "FASTER_PROGRESS=plain TORCHELASTIC_USE_AGENT_STORE=True "
      "TORCHELASTIC_RESTART_COUNT=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
      std::to_string(store->getPort()) + " WORLD_SIZE=2 ";
  const std::string train = std::string(FASTER_BIN) + " train --parallel ddp" + kSmall;
  test::TempDir t;
  const auto r =
      test::run_shell("(" + env + "RANK=1 LOCAL_RANK=1 " + train + " > " + (t / "r1.txt").string() +
                      " 2>&1 & " + env + "RANK=0 " + train + "; rc=$?; wait; exit $rc)");
  EXPECT_EQ(r.exit_code, 0) << r.output << test::read_file(t / "r1.txt");
  EXPECT_NE(r.output.find("2 ranks (gloo)"), std::string::npos) << r.output;
  EXPECT_EQ(store->add("/worker/attempt_0/faster/joined", 0), 2);
}

TEST(Ddp, RunsUnderTorchrunWhenAvailable) {
  REQUIRE_FASHION_MNIST();
  // Debian 12's torchrun (PyTorch 1.13 on Python 3.11) fails before starting any process; such a
  // torchrun cannot launch anything, so the check is left to machines with a working one.
  if (test::run_shell("torchrun --no_python --nproc_per_node 1 true").exit_code != 0)
    GTEST_SKIP() << "no working torchrun here";
  // Underscore spellings: LibTorch 1.13's torchrun knows only these (2.x takes both).
  const auto r = test::run_shell(
      "FASTER_PROGRESS=plain torchrun --no_python --nproc_per_node 2 "
      "--master_port " +
      std::to_string(29400 + getpid() % 500) + " " + std::string(FASTER_BIN) +
      " train --parallel ddp --batch 32" + kSmall);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 ranks (gloo)"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace faster::train

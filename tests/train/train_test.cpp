// End-to-end training on real Fashion-MNIST (CPU): it learns, both loaders feed identical batches,
// and --save writes a state_dict that loads back here and in Python's torch.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <sstream>

#include "faster/models/thinnet.h"
#include "faster/train/checkpoint.h"
#include "faster/train/trainer.h"
#include "support/test_support.h"

namespace faster::train {
namespace {

TrainOptions small_run() {
  TrainOptions o;
  o.data = test::fashion_mnist_dir().string();
  o.device = "cpu";
  o.epochs = 1;
  o.batch = 128;
  o.blocks = {0, 0, 0};
  o.filters = {8, 16, 32};  // a small ThinNet: CPU tests stay quick
  o.train_limit = 1024;
  o.test_limit = 512;
  o.workers = 2;
  return o;
}

TEST(Train, LearnsFashionMnistOnCpu) {
  REQUIRE_FASHION_MNIST();
  auto o = small_run();
  o.epochs = 2;
  o.train_limit = 8192;
  o.test_limit = 2000;
  o.batch = 64;
  o.sgd.lr = 0.05;
  const auto r = train(o);
  ASSERT_EQ(r.epochs.size(), 2u);
  // Two epochs on 8k images with a 3-conv ThinNet (8/16/32 filters): far above chance (10 %);
  // measured 78 % here (2 cores, LibTorch 1.13).
  EXPECT_GE(r.epochs[1].test_accuracy, 72.0);
  EXPECT_LT(r.epochs[1].train_loss, r.epochs[0].train_loss);
  EXPECT_EQ(r.epochs[1].train_images, 8192);
}

TEST(Train, HostAndDeviceLoadersGiveTheSameRun) {
  REQUIRE_FASHION_MNIST();
  auto host = small_run();
  host.epochs = 2;
  host.train_limit = 600;  // 4 full batches and a short one of 88
  auto device = host;
  device.loader = LoaderKind::kDevice;
  const auto a = train(host), b = train(device);
  for (int e = 0; e < 2; ++e) {
    EXPECT_NEAR(a.epochs[e].train_loss, b.epochs[e].train_loss, 1e-5);
    EXPECT_NEAR(a.epochs[e].test_accuracy, b.epochs[e].test_accuracy, 1e-9);
  }
  auto drop = host;
  drop.last_batch = data::LastBatch::kDrop;
  drop.epochs = 1;
  EXPECT_EQ(train(drop).epochs[0].train_images, 512);
}

// --ema gives a good model from its first epoch: the CPU recipe's ThinNet with --ema 0.99 for 2
// epochs on 12,000 images once ended at 21 % (the average's BatchNorm variances still held their
// initial 1.0); the average now scores within 3 points of the raw model (measured on 20,000
// images: 83.44 % against 83.56 % on the test split).  The accuracy the run reports, the
// checkpoint's and the --save file's in faster eval are the same number.  The weights themselves
// are tested too, as torchvision's train.py tests the model beside its EMA: the same run without
// the average trains the same weights (the average takes nothing from the training), so their
// scores are that run's, every epoch, and the epoch line shows both.
TEST(Train, EmaIsAGoodModelAndEveryReadingOfItAgrees) {
  REQUIRE_FASHION_MNIST();
  test::TempDir dir;
  const std::string run =
      "train --device cpu --recipe cpu --epochs 2 --train-limit 12000" + test::fashion_mnist_flag();
  auto r = test::run_faster(run + " --json " + (dir / "raw.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_faster(run + " --ema 0.99 --json " + (dir / "ema.json").string() +
                       " --checkpoint " + (dir / "c.ckpt").string() + " --save " +
                       (dir / "w.pt").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto json = [&](const char* name) {
    return nlohmann::json::parse(test::read_file(dir / name));
  };
  const double raw = json("raw.json")["final_test_accuracy"];
  const double averaged = json("ema.json")["final_test_accuracy"];
  EXPECT_GT(averaged, raw - 3.0) << "raw " << raw << " %, average " << averaged << " %";
  EXPECT_NE(r.output.find("(average; own weights: loss "), std::string::npos) << r.output;
  const auto raw_epochs = json("raw.json")["epochs"], ema_epochs = json("ema.json")["epochs"];
  ASSERT_EQ(raw_epochs.size(), 2u);
  ASSERT_EQ(ema_epochs.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    SCOPED_TRACE(e);
    EXPECT_FALSE(raw_epochs[e].contains("own_test_accuracy"));
    EXPECT_NEAR(ema_epochs[e]["own_test_accuracy"].get<double>(),
                raw_epochs[e]["test_accuracy"].get<double>(), 1e-9);
    EXPECT_NEAR(ema_epochs[e]["own_test_loss"].get<double>(),
                raw_epochs[e]["test_loss"].get<double>(), 1e-6);
    EXPECT_NE(ema_epochs[e]["own_test_loss"].get<double>(),
              ema_epochs[e]["test_loss"].get<double>());
  }
  for (const auto& weights : {dir / "c.ckpt", dir / "w.pt"}) {
    r = test::run_faster("eval --device cpu --weights " + weights.string() +
                         test::fashion_mnist_flag() + " --json " + (dir / "e.json").string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NEAR(json("e.json")["top1"].get<double>(), averaged, 1e-9) << weights;
  }
}

TEST(Train, SaveWritesAStateDictThatLoadsHereAndInPython) {
  REQUIRE_FASHION_MNIST();
  test::TempDir dir;
  auto o = small_run();
  o.save = (dir / "thinnet.pt").string();
  train(o);
  models::ThinNetOptions mo;
  mo.blocks = o.blocks;
  mo.filters = o.filters;
  models::ThinNet loaded(mo);
  load_state_dict(*loaded, o.save);
  loaded->eval();
  const auto x = torch::linspace(0, 1, 2 * 28 * 28).reshape({2, 1, 28, 28});
  const auto ours = loaded->forward(x);
  // The same weights must not come from a fresh model.
  models::ThinNet fresh(mo);
  fresh->eval();
  EXPECT_FALSE(torch::allclose(fresh->forward(x), ours));
  // Weights that are not finite (a diverged run's) are refused by eval, naming the tensor: they
  // scored as chance with a NaN loss, exit 0.
  {
    torch::NoGradGuard no_grad;
    loaded->named_parameters()["fc.weight"].view(-1)[3] = std::nan("");
  }
  const auto nan_path = (dir / "nan.pt").string();
  save_state_dict(*loaded, nan_path);
  const auto nan_eval =
      test::run_faster("eval --device cpu --weights " + nan_path + test::fashion_mnist_flag());
  EXPECT_EQ(nan_eval.exit_code, 1) << nan_eval.output;
  EXPECT_NE(nan_eval.output.find("nan.pt holds weights that are not finite (fc.weight)"),
            std::string::npos)
      << nan_eval.output;

  const auto py = test::run_shell("/usr/bin/python3 -c 'import torch' 2>/dev/null");
  if (py.exit_code != 0) GTEST_SKIP() << "no Python torch: the Python half of the check is skipped";
  const auto r =
      test::run_shell("/usr/bin/python3 " + std::string(FASTER_SOURCE_DIR) +
                      "/tests/python/thinnet_reference.py " + o.save + " 0,0,0 8,16,32 1 28");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(r.output);
  const auto flat = ours.flatten();
  for (int64_t i = 0; i < flat.numel(); ++i) {
    double v;
    ASSERT_TRUE(in >> v) << r.output;
    EXPECT_NEAR(v, flat[i].item<double>(), 1e-4) << "logit " << i;
  }
}

// Ctrl-C in the test pass after an epoch: the epoch's training is saved before the run stops (it
// was lost, a long epoch with it).  One step of training, then a test pass of 10,000 images that
// lasts seconds on this machine: the signal comes 2 s after the run logged its start.
TEST(Train, InterruptDuringTheTestPassKeepsTheTrainedEpoch) {
  REQUIRE_FASHION_MNIST();
  test::TempDir t;
  const std::string run =
      std::string(FASTER_BIN) +
      " train --recipe seed --device cpu --epochs 1 --train-limit 64 --batch 64 "
      "--workers 1 --checkpoint " +
      (t / "c.ckpt").string() + " --log-dir " + (t / "log").string() + test::fashion_mnist_flag();
  std::optional<std::chrono::steady_clock::time_point> started;
  const int code = test::signal_when(
      run, t / "out",
      [&](pid_t) {
        if (!started && std::filesystem::exists(t / "log" / "metrics.jsonl"))
          started = std::chrono::steady_clock::now();
        return started && std::chrono::steady_clock::now() - *started > std::chrono::seconds(2);
      },
      SIGINT, /*timeout_s=*/240);  // a busy machine's start-up and test pass take their time
  const std::string out = test::read_file(t / "out");
  ASSERT_EQ(code, 130) << out;
  EXPECT_NE(out.find("interrupted (SIGINT) testing after epoch 1/1"), std::string::npos) << out;
  // Its last epoch: nothing is left to resume, and the hint says how to score it.
  EXPECT_NE(out.find("HINT: " + (t / "c.ckpt").string() + " holds the trained run (1 epoch): " +
                     "'faster eval --weights " + (t / "c.ckpt").string() + "' scores it"),
            std::string::npos)
      << out;
  const auto meta = checkpoint_meta(read_state_dict(t / "c.ckpt"), "c.ckpt");
  EXPECT_EQ(meta["epochs_done"], 1);
  // Its history holds the epoch, untested (a resumed report had a gap there).
  ASSERT_EQ(meta["epochs"].size(), 1u) << meta.dump();
  EXPECT_EQ(meta["epochs"][0].value("epoch", 0), 1);
  EXPECT_FALSE(meta["epochs"][0].contains("test_accuracy"));
  EXPECT_EQ(meta["epochs"][0].value("train_images", 0), 64);
  EXPECT_GT(meta["epochs"][0].value("train_loss", 0.0), 0.0);
}

// Ctrl-C once an epoch is saved: the run stops at its next step, exits 130, names where it stopped
// and the checkpoint that holds the last whole epoch; the metrics log ends with the event; and
// --resume from that checkpoint goes on, naming the shorter schedule, and with other settings, with
// a warning that names them.
TEST(Train, InterruptStopsBetweenStepsAndNamesTheCheckpoint) {
  REQUIRE_FASHION_MNIST();
  test::TempDir t;
  const std::string run = std::string(FASTER_BIN) +
                          " train --device cpu --blocks 0,0,0 --filters 8,16,32 --train-limit 512 "
                          "--test-limit 128 --workers 1 --checkpoint " +
                          (t / "c.ckpt").string() + test::fashion_mnist_flag();
  const int code = test::signal_when(
      run + " --epochs 100000 --log-dir " + (t / "log").string(), t / "out",
      [&](pid_t) { return std::filesystem::exists(t / "c.ckpt"); }, SIGINT);
  const std::string out = test::read_file(t / "out");
  ASSERT_EQ(code, 130) << out;
  EXPECT_NE(out.find("faster: error: interrupted (SIGINT) "), std::string::npos) << out;
  EXPECT_NE(out.find("HINT: " + (t / "c.ckpt").string() + " holds epoch "), std::string::npos)
      << out;
  std::istringstream lines(test::read_file(t / "log" / "metrics.jsonl"));
  std::string line, last;
  while (std::getline(lines, line)) last = line;
  const auto event = nlohmann::json::parse(last);
  EXPECT_EQ(event["event"], "interrupted") << last;
  const auto resumed =
      test::run_shell(run + " --epochs " + std::to_string(event["epoch"].get<int>() + 1) +
                      " --resume " + (t / "c.ckpt").string());
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming after epoch"), std::string::npos) << resumed.output;
  // Another end of a cosine schedule is another schedule: named, as the only change.
  EXPECT_NE(resumed.output.find(": epochs " + std::to_string(event["epoch"].get<int>() + 1) +
                                " (was 100000); training goes on"),
            std::string::npos)
      << resumed.output;
  // Other settings than the checkpoint's (it holds the last run's end now): allowed, with one
  // warning naming them.
  const auto changed =
      test::run_shell(run + " --epochs " + std::to_string(event["epoch"].get<int>() + 2) +
                      " --lr 0.02 --min-lr 0.5 --seed 7 --resume " + (t / "c.ckpt").string());
  EXPECT_EQ(changed.exit_code, 0) << changed.output;
  EXPECT_NE(changed.output.find("lr 0.02 (was 0.05), min_lr 0.5 (was 0.0), seed 7 (was 0); "
                                "training goes on, but not as the uninterrupted run would have"),
            std::string::npos)
      << changed.output;
}

}  // namespace
}  // namespace faster::train

// The speedrun recipe's pieces against references (flip TTA is the mean of the two passes; the
// step warm-up leaves the run untouched), and tiny CPU runs: the recipe through the command line
// improves on its first epoch and reports its process time; its weights load back in `faster eval`.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "faster/core/error.h"
#include "faster/models/registry.h"
#include "faster/train/checkpoint.h"
#include "faster/train/device_warm_up.h"
#include "faster/train/options.h"
#include "faster/train/stepper.h"
#include "faster/train/trainer.h"
#include "support/test_support.h"

namespace faster::train {
namespace {

models::Model small_speednet() {
  models::ModelOptions mo;
  mo.name = "speednet";
  mo.filters = {8, 16, 32};
  mo.blocks = {1, 1, 1};
  torch::manual_seed(0);
  auto m = models::make_model(mo);
  // BatchNorm statistics of real activations (fresh ones shrink the logits to nothing).
  torch::NoGradGuard no_grad;
  for (int i = 0; i < 20; ++i) m.forward(torch::rand({16, 1, 28, 28}));
  m->eval();
  return m;
}

TEST(FlipTta, IsTheMeanOfTheLogitsOfBothPasses) {
  auto m = small_speednet();
  torch::NoGradGuard no_grad;
  const auto x = torch::rand({4, 1, 28, 28});
  const auto f = [&](const torch::Tensor& t) { return m.forward(t); };
  // Mirrored by hand, column by column.
  auto mirrored = torch::empty_like(x);
  for (int64_t c = 0; c < 28; ++c) mirrored.select(3, c).copy_(x.select(3, 27 - c));
  const auto direct = (m.forward(x) + m.forward(mirrored)) / 2;
  EXPECT_TRUE(torch::allclose(flip_tta(f, x), direct, 1e-5, 1e-6));
  // Hence a test image and its mirror image get the same prediction.
  EXPECT_TRUE(torch::allclose(flip_tta(f, mirrored), direct, 1e-5, 1e-6));
  // The flip mattered: one pass alone is further from the mean than the tolerance above.
  const double one_pass = (m.forward(x) - direct).abs().max().item<double>();
  EXPECT_GT(one_pass, 100 * (1e-6 + 1e-5 * direct.abs().max().item<double>())) << one_pass;
}

// The second level: 0.5 x the flip mean + 0.25 x the flip means of the two shifted images, built
// here by hand (the shifted image's pixels copied from x, its new edge reflected).
TEST(FlipTta, ShiftLevelIsTheWeightedMeanOfThreePlacements) {
  auto m = small_speednet();
  torch::NoGradGuard no_grad;
  const auto x = torch::rand({3, 1, 28, 28});
  const auto f = [&](const torch::Tensor& t) { return m.forward(t); };
  // Down-right by one: out[y][x] = in[y - 1][x - 1], row/column -1 reflected to row/column 1.
  const auto reflect = [](int64_t i, int64_t n) { return i < 0 ? -i : i >= n ? 2 * n - 2 - i : i; };
  auto down_right = torch::empty_like(x), up_left = torch::empty_like(x);
  for (int64_t r = 0; r < 28; ++r)
    for (int64_t c = 0; c < 28; ++c) {
      down_right.select(2, r).select(2, c).copy_(
          x.select(2, reflect(r - 1, 28)).select(2, reflect(c - 1, 28)));
      up_left.select(2, r).select(2, c).copy_(
          x.select(2, reflect(r + 1, 28)).select(2, reflect(c + 1, 28)));
    }
  const auto expected =
      0.5 * flip_tta(f, x) + 0.25 * (flip_tta(f, down_right) + flip_tta(f, up_left));
  EXPECT_TRUE(torch::allclose(tta_logits(f, x, true, true), expected, 1e-5, 1e-6));
  // Without flips: the same weights over the plain passes; without shifts: flip_tta, or one pass.
  EXPECT_TRUE(torch::allclose(tta_logits(f, x, false, true),
                              0.5 * f(x) + 0.25 * (f(down_right) + f(up_left)), 1e-5, 1e-6));
  EXPECT_TRUE(torch::equal(tta_logits(f, x, true, false), flip_tta(f, x)));
  EXPECT_TRUE(torch::equal(tta_logits(f, x, false, false), f(x)));
  // The shifts mattered: the result differs from the flip mean by far more than the tolerance.
  const double moved = (expected - flip_tta(f, x)).abs().max().item<double>();
  EXPECT_GT(moved, 100 * (1e-6 + 1e-5 * expected.abs().max().item<double>())) << moved;
}

TrainOptions tiny_speedrun() {
  TrainOptions o;
  o.data = test::fashion_mnist_dir().string();
  o.device = "cpu";
  o.model = "speednet";
  o.filters = {8, 16, 32};
  o.blocks = {1, 1, 1};
  o.epochs = 2;
  o.batch = 64;
  o.sgd.lr = 0.05;
  o.sgd.nesterov = true;
  o.train_limit = 512;
  o.test_limit = 256;
  o.loader = LoaderKind::kDevice;
  o.translate = 2;
  o.flip = Flip::kAuto;
  o.tta = true;
  o.whiten = true;
  return o;
}

// The warm-up runs train and eval steps, then restores everything: a run with it equals one
// without, to the last bit on the CPU.
TEST(Speedrun, StepWarmUpLeavesTheRunUntouched) {
  REQUIRE_FASHION_MNIST();
  auto o = tiny_speedrun();
  o.ema_decay = 0.9;
  const auto plain = train(o);
  o.prewarm = true;
  const auto warmed = train(o);
  ASSERT_EQ(plain.epochs.size(), warmed.epochs.size());
  for (size_t e = 0; e < plain.epochs.size(); ++e) {
    EXPECT_EQ(plain.epochs[e].train_loss, warmed.epochs[e].train_loss) << e;
    EXPECT_EQ(plain.epochs[e].test_accuracy, warmed.epochs[e].test_accuracy) << e;
  }
  EXPECT_TRUE(warmed.setup.contains("steps_ready_s"));
  EXPECT_TRUE(warmed.setup.contains("device_ready_s"));
  // Resumed with the warm-up, the checkpoint's average of the weights is kept too (the warm-up
  // reset it to the weights): the same epochs as the straight run.
  test::TempDir d;
  o.checkpoint = (d / "w.ckpt").string(), o.keep_checkpoints = true;
  train(o);
  o.checkpoint.clear(), o.keep_checkpoints = false;
  o.resume = (d / "w.ckpt.epoch1").string();
  const auto resumed = train(o);
  ASSERT_EQ(resumed.epochs.size(), plain.epochs.size() - 1);
  for (size_t e = 0; e < resumed.epochs.size(); ++e) {
    EXPECT_EQ(plain.epochs[e + 1].train_loss, resumed.epochs[e].train_loss) << e;
    EXPECT_EQ(plain.epochs[e + 1].test_accuracy, resumed.epochs[e].test_accuracy) << e;
  }
  o.resume.clear();
  // The options say what was decided from the data: Fashion-MNIST flips.
  EXPECT_EQ(warmed.options["flip"], "on");
  EXPECT_EQ(warmed.options["tta"], true);
}

// The model warm-up (a copy's first step on a thread of its own, for its kernels): it draws on no
// random generator (the run's streams stay as seeded), freezes what the data initialise and
// trains the rest of the copy one step; on the CPU too (the trainer runs it on GPUs only).
TEST(Speedrun, ModelWarmUpTrainsACopyAndLeavesTheRandomStreams) {
  models::ModelOptions mo;
  mo.name = "speednet";
  mo.filters = {8, 16, 32};
  mo.blocks = {1, 1, 1};
  // The recipe's optimizer (Muon for the filters) and format, on the CPU.
  auto o = recipe_options(Recipe::kSpeedrun);
  o.sgd.lr = 0.1;
  o.precision = Precision::kBFloat16;
  o.channels_last = true;
  const auto fresh = [&mo] {
    torch::manual_seed(3);  // the same weights each time
    return models::make_model(mo);
  };
  auto copy = fresh();
  std::map<std::string, torch::Tensor> before;
  for (const auto& p : copy->named_parameters()) before[p.key()] = p.value().detach().clone();
  torch::manual_seed(7);
  const auto expected = torch::rand({8});
  torch::manual_seed(7);
  EXPECT_EQ(warm_up_model(copy, {16, 1, 28, 28}, o, torch::kCPU).get(), "");
  EXPECT_TRUE(torch::equal(torch::rand({8}), expected));
  // The device warm-up draws no random numbers either (it runs beside the seeded model's build).
  torch::manual_seed(7);
  warm_up_device(torch::kCPU, Precision::kBFloat16, true);
  EXPECT_TRUE(torch::equal(torch::rand({8}), expected));
  // Muon moved the filters: the same copy on SGD alone ends elsewhere.
  auto on_sgd = fresh();
  auto sgd_only = o;
  sgd_only.sgd.muon_lr = 0;
  EXPECT_EQ(warm_up_model(on_sgd, {16, 1, 28, 28}, sgd_only, torch::kCPU).get(), "");
  const auto filter = [](const models::Model& m) {
    return m->named_parameters()["stages.0.conv0.weight"];  // throws where there is none
  };
  EXPECT_FALSE(torch::allclose(filter(copy), filter(on_sgd), 1e-4, 1e-6));
  for (const auto& p : copy->named_parameters()) {
    const bool stem = p.key().rfind("stem.", 0) == 0;
    EXPECT_EQ(p.value().requires_grad(), !stem) << p.key();
    EXPECT_EQ(p.value().grad().defined(), !stem) << p.key();  // trained one step, but the stem
    // The step moved what trains (Muon the filters, SGD the rest); the stem is as whitened.
    if (!stem && p.key().find("bn") == std::string::npos)
      EXPECT_FALSE(torch::equal(p.value(), before[p.key()])) << p.key();
  }
  EXPECT_FALSE(copy->is_training());  // left as its test pass ran it
  // Without whitening nothing is frozen.
  o.whiten = o.freeze_whitening = false;
  o.sgd.muon_lr = 0;
  o.precision = Precision::kFloat32;
  o.channels_last = false;
  auto plain = fresh();
  EXPECT_EQ(warm_up_model(plain, {16, 1, 28, 28}, o, torch::kCPU).get(), "");
  for (const auto& p : plain->named_parameters())
    EXPECT_TRUE(p.value().grad().defined()) << p.key();
  // What goes wrong is said, not thrown: the warm-up is an optimisation (a 1-channel copy fed
  // 3-channel images).
  auto wrong = models::make_model(mo);
  EXPECT_NE(warm_up_model(wrong, {4, 3, 28, 28}, o, torch::kCPU).get(), "");
}

// --freeze-whitening: the stem leaves training exactly as whitened (one epoch or two: the same
// bits), while the layers after it learn; without it the stem moves too.
TEST(Speedrun, FrozenWhiteningStaysAsInitialised) {
  REQUIRE_FASHION_MNIST();
  test::TempDir d;
  auto o = tiny_speedrun();
  const auto weights = [&](int epochs, bool freeze, const char* name) {
    o.epochs = epochs, o.freeze_whitening = freeze, o.save = (d / name).string();
    train(o);
    return read_state_dict(o.save);
  };
  const auto one = weights(1, true, "one.pt"), two = weights(2, true, "two.pt");
  const auto moving = weights(2, false, "moving.pt");
  for (const char* k : {"stem.weight", "stem.bias"}) {
    EXPECT_TRUE(torch::equal(one.at(k), two.at(k))) << k;
    EXPECT_FALSE(torch::allclose(two.at(k), moving.at(k), 1e-4, 1e-6)) << k;
  }
  EXPECT_FALSE(torch::allclose(one.at("stages.0.conv0.weight"), two.at("stages.0.conv0.weight"),
                               1e-4, 1e-6));
  // A checkpoint of a frozen stem resumes only as one: a trained stem has optimizer state for it.
  o.epochs = 2, o.freeze_whitening = true, o.save.clear(), o.checkpoint = (d / "f.ckpt").string();
  train(o);
  o.resume = o.checkpoint, o.checkpoint.clear(), o.epochs = 3;
  o.freeze_whitening = false;
  EXPECT_THROW(train(o), Error);
  o.freeze_whitening = true;
  EXPECT_EQ(train(o).epochs.size(), 1u);
  o.resume.clear();
  // Nothing to keep without whitening: refused, not ignored.
  o.whiten = false, o.freeze_whitening = true;
  EXPECT_THROW(train(o), Error);
}

// On a GPU: the recipe begins the CUDA context before main() (context_s in its report) unless
// FASTER_EARLY_CONTEXT=0, and warms the model's kernels on a copy (model_warm_s); neither, nor the
// step warm-up (--no-prewarm drops both warm-ups), changes a bit of what it trains.
TEST(Speedrun, OnAGpuTheContextStartsEarlyAndTheWarmUpsChangeNothing) {
  SKIP_WITHOUT_GPU();
  REQUIRE_FASHION_MNIST();
  test::TempDir d;
  const auto run = [&](const std::string& env, const std::string& flags, const char* name) {
    const auto json = d / name;
    const auto r = test::run_faster_env(
        env, "train --recipe speedrun --epochs 2 --train-limit 8192 --test-limit 2048 --json " +
                 json.string() + flags + test::fashion_mnist_flag());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(test::read_file(json));
  };
  const auto early = run("", "", "early.json");
  const auto late = run("FASTER_EARLY_CONTEXT=0", "", "late.json");
  const auto cold = run("", " --no-prewarm", "cold.json");
  EXPECT_TRUE(early["setup"].contains("context_s")) << early["setup"].dump();
  EXPECT_LT(early["setup"]["context_s"].get<double>(), early["setup"]["start_s"].get<double>());
  EXPECT_TRUE(early["setup"].contains("model_warm_s")) << early["setup"].dump();
  EXPECT_FALSE(late["setup"].contains("context_s")) << late["setup"].dump();
  EXPECT_TRUE(late["setup"].contains("model_warm_s"));
  EXPECT_FALSE(cold["setup"].contains("model_warm_s"));
  for (const auto* other : {&late, &cold}) {
    ASSERT_EQ((*other)["epochs"].size(), early["epochs"].size());
    for (size_t e = 0; e < early["epochs"].size(); ++e)
      EXPECT_EQ((*other)["epochs"][e]["train_loss"], early["epochs"][e]["train_loss"]) << e;
    EXPECT_EQ((*other)["final_test_accuracy"], early["final_test_accuracy"]);
  }
}

TEST(Speedrun, RecipeImprovesOnItsFirstEpochAndCountsFromProcessStart) {
  REQUIRE_FASHION_MNIST();
  test::TempDir d;
  const auto json = d / "r.json";
  const auto r = test::run_faster(
      "train --recipe speedrun --device cpu --filters 8,16,32 --epochs 4 --batch 128 "
      "--train-limit 2048 --test-limit 500 --eval-every 1 --json " +
      json.string() + test::fashion_mnist_flag());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("from process start"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(test::read_file(json));
  EXPECT_EQ(j["options"]["model"], "speednet");
  EXPECT_EQ(j["options"]["mode"], "speedrun");
  EXPECT_EQ(j["options"]["lr_decay"], "linear");
  EXPECT_EQ(j["options"]["translate"], 2);
  EXPECT_EQ(j["options"]["flip"], "on");
  EXPECT_EQ(j["options"]["whiten"], true);
  EXPECT_EQ(j["options"]["freeze_whitening"], true);
  EXPECT_EQ(j["options"]["filters"], (std::vector<int>{8, 16, 32}));
  EXPECT_EQ(j["options"]["blocks"], (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(j["options"]["stem_dims"], 8);  // 8 of a gray 3x3 patch's 9: a 16-channel stem
  EXPECT_DOUBLE_EQ(j["options"]["muon_lr"].get<double>(), 0.16);        // the filters on Muon
  EXPECT_FALSE(j["cuda_env"].contains("CUDA_DEVICE_MAX_CONNECTIONS"));  // left as measured
  const auto& epochs = j["epochs"];
  ASSERT_EQ(epochs.size(), 4u);
  const double first = epochs[0]["test_accuracy"], last = epochs[3]["test_accuracy"];
  EXPECT_GT(last, first + 2.0) << r.output;
  EXPECT_GT(last, 60.0) << r.output;  // 10 classes: chance is 10 %
  // The process clock covers the whole timed run and the start-up before it.
  const double process = j["process_seconds"], total = j["total_seconds"];
  EXPECT_GT(process, total);
  EXPECT_DOUBLE_EQ(process, epochs[3]["process_seconds"].get<double>());
  EXPECT_LT(epochs[0]["process_seconds"].get<double>(), process);
  // Set-up milestones in order, from main()'s entry (after the libraries loaded) on.
  const auto& s = j["setup"];
  ASSERT_TRUE(s.contains("main_s")) << s.dump();
  EXPECT_GT(s["main_s"].get<double>(), 0);
  EXPECT_LE(s["main_s"].get<double>(), s["start_s"].get<double>());
  EXPECT_LE(s["start_s"].get<double>(), s["first_step_s"].get<double>());
  EXPECT_LE(s["first_step_s"].get<double>(), s["train_step_ready_s"].get<double>());
  EXPECT_LE(s["train_step_ready_s"].get<double>(), s["steps_ready_s"].get<double>());
}

// The recipes as measured (BENCHMARKS.md): speedrun 8 epochs with Muon for the filters, speedrun95
// 40 on SGD alone.  The recipe's Muon needs its stem frozen: with --train-whitening (or another
// model) the run goes on SGD alone instead of being refused; a --muon-lr given is still refused.
TEST(Speedrun, RecipesAndWhenTheirMuonApplies) {
  const auto fast = recipe_options(Recipe::kSpeedrun), longer = recipe_options(Recipe::kSpeedrun95);
  EXPECT_EQ(fast.epochs, 8);
  EXPECT_DOUBLE_EQ(fast.sgd.muon_lr, 0.16);
  EXPECT_EQ(longer.epochs, 40);
  EXPECT_DOUBLE_EQ(longer.sgd.muon_lr, 0.0);
  REQUIRE_FASHION_MNIST();
  test::TempDir d;
  const std::string run =
      "train --recipe speedrun --device cpu --filters 8,16,32 --epochs 1 --batch 128 "
      "--train-limit 512 --test-limit 128 --train-whitening" +
      test::fashion_mnist_flag();
  auto r = test::run_faster(run + " --json " + (d / "t.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_DOUBLE_EQ(
      nlohmann::json::parse(test::read_file(d / "t.json"))["options"]["muon_lr"].get<double>(), 0);
  r = test::run_faster(run + " --muon-lr 0.24");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--muon-lr with speednet needs its stem frozen"), std::string::npos)
      << r.output;
}

TEST(Speedrun, MnistDigitsAreNotFlipped) {
  REQUIRE_FASHION_MNIST();
  // The same idx files under a folder named like MNIST's: flips (and so flip TTA) are off.
  test::TempDir d;
  const auto mnist = d / "mnist";
  std::filesystem::create_directories(mnist);
  for (const auto& f : std::filesystem::directory_iterator(test::fashion_mnist_dir()))
    std::filesystem::create_symlink(f.path(), mnist / f.path().filename());
  auto o = tiny_speedrun();
  o.data = mnist.string();
  o.epochs = 1;
  const auto r = train(o);
  EXPECT_EQ(r.options["flip"], "off");
  EXPECT_EQ(r.options["tta"], false);
  o.flip = Flip::kOn;  // asked for: obeyed
  EXPECT_EQ(train(o).options["flip"], "on");
  o.loader = LoaderKind::kHost;  // the host loader has no shifts or flips: refused, not ignored
  EXPECT_THROW(train(o), Error);
}

// `faster eval` reproduces the run's accuracy: of a checkpoint, with the flip TTA and the average
// of weights its run tested (the average leaves the frozen stem out); of the saved weights (the
// average), with --tta; --no-tta scores single passes instead.
TEST(Speedrun, SavedWeightsEvaluateToTheSameAccuracy) {
  REQUIRE_FASHION_MNIST();
  test::TempDir d;
  auto o = tiny_speedrun();
  o.test_limit = 0;  // eval reads the whole test split
  o.save = (d / "speednet.pt").string();
  o.checkpoint = (d / "speednet.ckpt").string();
  o.ema_decay = 0.9;  // tested (and saved) as the average; the frozen stem stays out of it
  o.freeze_whitening = true;
  const auto r = train(o);
  ASSERT_EQ(r.options["tta"], true);
  EvalOptions e;
  e.data = o.data;
  e.device = "cpu";
  e.weights = o.checkpoint;
  const auto of_checkpoint = evaluate(e);
  EXPECT_EQ(of_checkpoint.model, "speednet");
  EXPECT_TRUE(of_checkpoint.tta);
  EXPECT_TRUE(of_checkpoint.ema);
  EXPECT_NEAR(of_checkpoint.top1, r.epochs.back().test_accuracy, 0.02);
  EXPECT_NEAR(of_checkpoint.loss, r.epochs.back().test_loss, 1e-4);
  e.weights = o.save;
  e.tta = true;
  const auto with_tta = evaluate(e);
  EXPECT_NEAR(with_tta.top1, r.epochs.back().test_accuracy, 0.02);
  e.tta = false;
  const auto single = evaluate(e);
  EXPECT_FALSE(single.tta);
  EXPECT_GT(std::abs(single.loss - with_tta.loss), 1e-4);  // one pass, not the mean of two
}

}  // namespace
}  // namespace faster::train

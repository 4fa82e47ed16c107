// torchvision's recipes in faster: random erasing, mixup and cutmix against torchvision's own ops
// and references' code (Python, torchvision 0.14 on the CPU), their draws against torchvision's
// distributions, the per-epoch schedulers against torch.optim's, the weight-decay groups against
// torchvision's set_weight_decay, gradient clipping against LibTorch's clip_grad_norm_; and
// train.py's command lines through the program: they run, resume bit-exactly, and the flags faster
// cannot honour exit 2 naming themselves.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <future>
#include <regex>
#include <sstream>

#include "data/image_trees.h"
#include "faster/cli/train_flags.h"
#include "faster/data/augment/crop_params.h"
#include "faster/models/registry.h"
#include "faster/train/batch_augment.h"
#include "faster/train/checkpoint.h"
#include "faster/train/schedule.h"
#include "faster/train/sgd.h"
#include "faster/train/stepper.h"
#include "faster/train/torchvision_weights.h"
#include "support/test_support.h"

namespace faster {
namespace {
namespace fs = std::filesystem;

void save_tensors(const fs::path& path,
                  const std::vector<std::pair<std::string, torch::Tensor>>& t) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [k, v] : t) dict.insert(k, v);
  const auto bytes = torch::pickle_save(dict);
  test::write_file(path, std::string(bytes.begin(), bytes.end()));
}

TEST(BatchAugment, ErasingMixupAndCutmixAreTorchvisionsForTheDrawnParameters) {
  if (!test::have_python_module("torchvision")) GTEST_SKIP() << "no Python torchvision";
  constexpr int64_t kN = 8, kH = 20, kW = 24, kClasses = 10, kSteps = 12;
  train::BatchAugmentOptions o;
  o.random_erase = 0.5, o.mixup_alpha = 0.2, o.cutmix_alpha = 1.0;
  train::BatchAugment augment(o, /*seed=*/7, /*rank=*/0, kN, torch::kCPU);
  torch::manual_seed(0);
  const auto x = torch::randn({kN, 3, kH, kW}).contiguous(torch::MemoryFormat::ChannelsLast);
  const auto y = torch::randint(kClasses, {kN}, torch::kLong);
  std::vector<std::pair<std::string, torch::Tensor>> saved{{"x", x.contiguous()}, {"y", y}};
  int cutmixes = 0;
  for (int64_t step = 0; step < kSteps; ++step) {
    const auto d = augment.draw(step, kN, kH, kW);
    const auto out = augment.images(x);
    const auto target = augment.targets(y, kClasses);
    EXPECT_TRUE(out.is_contiguous(torch::MemoryFormat::ChannelsLast));
    // Mixed labels sum to one; cutmix's weight is the area outside its box.
    EXPECT_LT((target.sum(1) - 1).abs().max().item<float>(), 1e-6);
    if (d.mix.cutmix) {
      ++cutmixes;
      const double box =
          static_cast<double>((d.mix.bottom - d.mix.top) * (d.mix.right - d.mix.left));
      EXPECT_NEAR(d.mix.lam, 1 - box / (kH * kW), 1e-12);
    }
    auto boxes = torch::zeros({kN, 4}, torch::kLong);
    for (int64_t i = 0; i < kN; ++i) {
      const auto& e = d.erase[i];
      boxes[i] = torch::tensor({e.top, e.left, e.h, e.w});
    }
    const auto mix =
        torch::tensor({d.mix.cutmix ? 1.0 : 0.0, d.mix.keep, d.mix.lam,
                       static_cast<double>(d.mix.top), static_cast<double>(d.mix.bottom),
                       static_cast<double>(d.mix.left), static_cast<double>(d.mix.right)},
                      torch::kDouble);
    const auto s = std::to_string(step);
    saved.insert(saved.end(), {{"out" + s, out.contiguous()},
                               {"target" + s, target},
                               {"boxes" + s, boxes},
                               {"mix" + s, mix}});
  }
  EXPECT_GT(cutmixes, 0);
  EXPECT_LT(cutmixes, kSteps);
  const test::TempDir dir;
  save_tensors(dir.path() / "t.pt", saved);
  // The reference: torchvision.transforms.functional.erase for each drawn box (value 0), then
  // torchvision's references' RandomMixup / RandomCutmix (transforms.py) with the drawn lambda and
  // box, on torch's own tensors.
  const auto r = test::run_python(R"(
import torch.nn.functional as NF
import torchvision.transforms.functional as F
t = torch.load(path)
x, y = t["x"], t["y"]
worst = 0.0
for s in range(12):
    batch = x.clone()
    for i, (top, left, h, w) in enumerate(t[f"boxes{s}"].tolist()):
        if h > 0:
            batch[i] = F.erase(batch[i], top, left, h, w, torch.tensor(0.0))
    cutmix, keep, lam, y1, y2, x1, x2 = t[f"mix{s}"].tolist()
    target = NF.one_hot(y, num_classes=10).to(batch.dtype)
    batch_rolled, target_rolled = batch.roll(1, 0), target.roll(1, 0)
    if cutmix:
        y1, y2, x1, x2 = int(y1), int(y2), int(x1), int(x2)
        batch[:, :, y1:y2, x1:x2] = batch_rolled[:, :, y1:y2, x1:x2]
    else:
        batch_rolled.mul_(1.0 - lam)
        batch.mul_(lam).add_(batch_rolled)
    target_rolled.mul_(1.0 - lam)
    target.mul_(lam).add_(target_rolled)
    worst = max(worst, (batch - t[f"out{s}"]).abs().max().item(),
                (target - t[f"target{s}"]).abs().max().item())
print("worst", worst)
)",
                                  dir.path() / "t.pt");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(r.output.substr(r.output.find("worst")));
  std::string word;
  double worst = 1;
  in >> word >> worst;
  EXPECT_LT(worst, 1e-5) << r.output;  // float32 rounding of x * lam + rolled * (1 - lam)
}

TEST(BatchAugment, DrawsFollowTorchvisionsDistributions) {
  std::mt19937_64 gen(1);
  constexpr int kDraws = 20000;
  constexpr int64_t kH = 224, kW = 160;
  int erased = 0;
  for (int i = 0; i < kDraws; ++i) {
    const auto e = train::draw_erase(gen, 0.3, kH, kW);
    if (e.h == 0) continue;
    ++erased;
    ASSERT_TRUE(e.h < kH && e.w < kW && e.top >= 0 && e.left >= 0 && e.top + e.h <= kH &&
                e.left + e.w <= kW);
    // scale (0.02, 0.33) of the area, aspect (0.3, 3.3), each side rounded: within a pixel.
    const double hi = std::sqrt(0.33 * kH * kW * 3.3) + 0.5;
    EXPECT_LE(e.h, hi);
    EXPECT_GE((e.h + 0.5) * (e.w + 0.5), 0.02 * kH * kW);
    EXPECT_LE((e.h - 0.5) * (e.w - 0.5), 0.33 * kH * kW);
  }
  EXPECT_NEAR(erased / static_cast<double>(kDraws), 0.3, 0.015);  // 5 sigma: 0.016
  // Beta(0.2, 0.2): mean 1/2, variance 1 / (4 (2 alpha + 1)); cutmix or mixup half the time each.
  train::BatchAugmentOptions o;
  o.mixup_alpha = 0.2, o.cutmix_alpha = 0.2;
  double sum = 0, squares = 0;
  int mixups = 0;
  for (int i = 0; i < kDraws; ++i) {
    const auto m = train::draw_mix(gen, o, kH, kW);
    if (m.cutmix) continue;
    ++mixups;
    sum += m.lam, squares += m.lam * m.lam;
  }
  EXPECT_NEAR(mixups / static_cast<double>(kDraws), 0.5, 0.02);
  const double mean = sum / mixups, variance = squares / mixups - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.015);
  EXPECT_NEAR(variance, 1.0 / (4 * 1.4), 0.01);
  // The same step draws the same (a resumed run); another step, others.
  train::BatchAugment a(o, 3, 0, 4, torch::kCPU), b(o, 3, 0, 4, torch::kCPU);
  EXPECT_EQ(a.draw(5, 4, 32, 32).mix.lam, b.draw(5, 4, 32, 32).mix.lam);
  EXPECT_NE(a.draw(5, 4, 32, 32).mix.lam, b.draw(6, 4, 32, 32).mix.lam);
}

TEST(Schedule, TorchvisionsSchedulersAreTorchOptimsPerEpoch) {
  if (!test::have_python_module("torchvision")) GTEST_SKIP() << "no Python torchvision";
  struct Case {
    train::LrDecay decay;
    const char* main;  // torch.optim.lr_scheduler's, as train.py makes it
    int warmup;
    train::WarmupShape shape;
  };
  const Case cases[] = {
      {train::LrDecay::kStep, "StepLR(opt, step_size=3, gamma=0.5)", 2,
       train::WarmupShape::kLinear},
      {train::LrDecay::kCosine, "CosineAnnealingLR(opt, T_max=epochs - 3, eta_min=0.002)", 3,
       train::WarmupShape::kConstant},
      {train::LrDecay::kExponential, "ExponentialLR(opt, gamma=0.8)", 0,
       train::WarmupShape::kLinear},
      {train::LrDecay::kCosine, "CosineAnnealingLR(opt, T_max=epochs - 2, eta_min=0.0)", 2,
       train::WarmupShape::kLinear}};
  constexpr int kEpochs = 11, kStepsPerEpoch = 3;
  constexpr double kLr = 0.4;
  for (const auto& c : cases) {
    const std::string warmup =
        c.shape == train::WarmupShape::kLinear
            ? "LinearLR(opt, start_factor=0.01, total_iters=" + std::to_string(c.warmup) + ")"
            : "ConstantLR(opt, factor=0.01, total_iters=" + std::to_string(c.warmup) + ")";
    const std::string script =
        "from torch.optim.lr_scheduler import *\nepochs = " + std::to_string(kEpochs) +
        "\nopt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.4)\nmain = " + c.main +
        "\n" +
        (c.warmup > 0 ? "s = SequentialLR(opt, [" + warmup + ", main], milestones=[" +
                            std::to_string(c.warmup) + "])\n"
                      : "s = main\n") +
        "for e in range(epochs):\n    print(repr(opt.param_groups[0]['lr']))\n    opt.step()\n"
        "    s.step()\n";
    const test::TempDir dir;
    const auto r = test::run_python(script, dir.path());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    train::LrSchedule s;
    s.per_epoch = true;
    s.decay = c.decay;
    s.warmup_epochs = c.warmup;
    s.warmup_shape = c.shape;
    s.warmup_start = 0.01;
    s.step_size = 3;
    s.step_gamma = c.decay == train::LrDecay::kExponential ? 0.8 : 0.5;
    s.min_lr = std::string(c.main).find("0.002") != std::string::npos ? 0.002 / kLr : 0;
    std::istringstream in(r.output);
    for (int e = 0; e < kEpochs; ++e) {
      double expected = 0;
      ASSERT_TRUE(in >> expected) << r.output;
      for (int k = 0; k < kStepsPerEpoch; ++k)  // constant within the epoch
        EXPECT_NEAR(kLr * train::lr_factor(s, e * kStepsPerEpoch + k, kStepsPerEpoch, kEpochs),
                    expected, 1e-12 + 1e-9 * expected)
            << c.main << " epoch " << e;
    }
  }
}

TEST(Sgd, WeightDecayGroupsAreTorchvisionsSetWeightDecay) {
  if (!test::have_python_module("torchvision")) GTEST_SKIP() << "no Python torchvision";
  // torchvision's references' utils.set_weight_decay (0.14), transcribed: a parameter named in
  // custom keys ("bias") takes its decay; else a norm layer's takes norm_weight_decay; else the
  // weight decay.
  const auto r = test::run_python(R"(
model = torchvision.models.resnet18(num_classes=10)
norm_classes = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.LayerNorm, torch.nn.GroupNorm)
for bias_decay in (None, 3e-5):
    for module_name, module in model.named_modules():
        for name, p in module.named_parameters(recurse=False):
            full = f"{module_name}.{name}" if module_name else name
            if bias_decay is not None and name == "bias":
                d = bias_decay
            elif isinstance(module, norm_classes):
                d = 0.0
            else:
                d = 1e-4
            print(full, repr(d))
)",
                                  fs::path("."));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  models::ModelOptions mo;
  mo.name = "resnet18", mo.in_channels = 3, mo.classes = 10;
  const auto model = models::make_model(mo);
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& p : model->named_parameters()) named.emplace_back(p.key(), p.value());
  const auto roles = train::param_roles(named);
  std::istringstream in(r.output);
  for (const double bias_decay : {-1.0, 3e-5}) {
    train::SgdOptions o;
    o.weight_decay = 1e-4, o.norm_weight_decay = 0, o.bias_weight_decay = bias_decay;
    o.lr = 1, o.momentum = 0;
    std::vector<torch::Tensor> params;
    for (const auto& [name, t] : named) params.push_back(t.detach().clone().fill_(1));
    train::FlatSgd sgd(params, o, roles);
    sgd.step(torch::zeros_like(sgd.flat_params()));  // p -= lr * decay * p, with p = 1
    for (size_t i = 0; i < named.size(); ++i) {
      std::string name;
      double expected = 0;
      ASSERT_TRUE(in >> name >> expected) << r.output;
      ASSERT_EQ(name, named[i].first);
      const auto got = 1 - sgd.params()[i].flatten()[0].item<double>();
      EXPECT_NEAR(got, expected, 1e-7)  // float32 parameters
          << name << " (bias decay " << bias_decay << ")";
    }
  }
}

TEST(Stepper, ClipGradNormIsLibTorchs) {
  torch::manual_seed(3);
  for (const double max_norm : {0.5, 1e3}) {
    std::vector<torch::Tensor> grads{torch::randn({4, 5}), torch::randn({7}), torch::randn({2, 3})};
    std::vector<torch::Tensor> params;
    std::vector<torch::Tensor> flat;
    for (const auto& g : grads) {
      auto p = torch::zeros(g.sizes(), torch::requires_grad());
      p.mutable_grad() = g.clone();
      params.push_back(p);
      flat.push_back(g.flatten());
    }
    auto f = torch::cat(flat);
    train::clip_grad_norm(f, max_norm);
    torch::nn::utils::clip_grad_norm_(params, max_norm);
    std::vector<torch::Tensor> want;
    for (const auto& p : params) want.push_back(p.grad().flatten());
    EXPECT_TRUE(torch::allclose(f, torch::cat(want), 1e-6, 1e-7)) << max_norm;
  }
}

// --- train.py's command lines through the program -------------------------------------------

const std::string kSmall =
    " --device cpu --epochs 1 -b 32 -j 2 --train-crop-size 28 --val-resize-size 32 "
    "--val-crop-size 28";

TEST(TorchvisionFlags, ItsReadmeResNet18LineRunsWithItsDefaults) {
  REQUIRE_FASHION_MNIST();
  // torchvision's README: train.py --model resnet18 (its defaults: batch 32, SGD 0.1, steplr),
  // with the flags of train.py that change nothing here (each said so) and --print-freq.
  const auto data = test::exported_fashion_mnist(200);
  const auto r =
      test::run_faster("train --data-path " + data.string() + " --model resnet18" + kSmall +
                       " --print-freq 2 --cache-dataset --backend Tensor --use-v2 "
                       "--transformer-embedding-decay 0 --world-size 1 --dist-url "
                       "env:// --start-epoch 0 --use-deterministic-algorithms");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("recipe torchvision: resnet18, 1 epoch, batch 32, SGD lr 0.1"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("steplr per epoch"), std::string::npos) << r.output;
  for (const auto& f : cli::kInertTorchvisionFlags)
    EXPECT_NE(r.output.find(std::string("(") + f.flag + ": " + f.why + ")"), std::string::npos)
        << f.flag << "\n"
        << r.output;
  // A progress line at every second step (7 training batches, then the test's), and none between.
  for (const int step : {2, 4, 6, 8})
    EXPECT_TRUE(std::regex_search(r.output, std::regex(" " + std::to_string(step) + "/\\d+ batch")))
        << step << "\n"
        << r.output;
  for (const int step : {1, 3, 5})
    EXPECT_FALSE(
        std::regex_search(r.output, std::regex(" " + std::to_string(step) + "/\\d+ batch")))
        << step << "\n"
        << r.output;
}

TEST(TorchvisionFlags, OptAndSchedulerNamesInAnyCaseAsTorchvisionReadsThem) {
  REQUIRE_FASHION_MNIST();
  // train.py lower-cases --opt and --lr-scheduler: "SGD_Nesterov" and "CosineAnnealingLR" are
  // its sgd_nesterov and cosineannealinglr.
  const auto data = test::exported_fashion_mnist(200);
  test::TempDir dir;
  const auto json = (dir.path() / "run.json").string();
  const auto r = test::run_faster("train --data-path " + data.string() +
                                  " --model resnet18 --opt SGD_Nesterov --lr-scheduler "
                                  "CosineAnnealingLR --auto-augment augmix --augmix-severity 4 "
                                  "--json " +
                                  json + kSmall);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cosineannealinglr per epoch"), std::string::npos) << r.output;
  const auto options = nlohmann::json::parse(test::read_file(json))["options"];
  EXPECT_TRUE(options["nesterov"].get<bool>()) << options.dump();
  EXPECT_EQ(options["auto_augment"], "augmix") << options.dump();
  EXPECT_EQ(options["augmix_severity"], 4) << options.dump();
  // A name faster lacks is still refused in any case, named as torchvision would read it.
  const auto bad = test::run_faster("train --device cpu --data-path /nonexistent --opt AdamW");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--opt 'adamw'"), std::string::npos) << bad.output;
}

TEST(TorchvisionFlags, TheStrongRecipesAugmentationsTrainAndResumeBitExactly) {
  REQUIRE_FASHION_MNIST();
  const auto data = test::exported_fashion_mnist(200);
  const test::TempDir dir;
  const std::string line =
      "train --data-path " + data.string() +
      " --model resnet18 --device cpu -b 32 -j 2 --lr 0.5 --lr-scheduler cosineannealinglr "
      "--lr-warmup-epochs 1 --lr-warmup-method linear --auto-augment ta_wide --epochs 2 "
      "--random-erase 0.1 "
      "--weight-decay 0.00002 --norm-weight-decay 0.0 --label-smoothing 0.1 --mixup-alpha 0.2 "
      "--cutmix-alpha 1.0 --train-crop-size 28 --model-ema --model-ema-steps 4 "
      "--val-resize-size 32 --val-crop-size 28 --clip-grad-norm 5";
  auto r = test::run_faster(line + " --json " + (dir.path() / "straight.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto straight = nlohmann::json::parse(test::read_file(dir.path() / "straight.json"));
  const auto& o = straight["options"];
  EXPECT_EQ(o["auto_augment"], "ta_wide");
  EXPECT_EQ(o["mixup_alpha"], 0.2);
  EXPECT_EQ(o["cutmix_alpha"], 1.0);
  EXPECT_EQ(o["random_erase"], 0.1);
  EXPECT_EQ(o["ema_every"], 4);
  EXPECT_EQ(o["ema_warmup"], false);  // torchvision's constant decay
  EXPECT_EQ(o["lr_per_epoch"], true);
  // torchvision's --model-ema decay: 1 - (1 - 0.99998) x world 1 x batch 32 x 4 steps / 2 epochs.
  EXPECT_NEAR(o["ema"].get<double>(), 1 - 2e-5 * 32 * 4 / 2, 1e-12);
  // The same run with checkpoints, resumed from its first epoch's: the same weights, bit for bit.
  const auto ckpt = dir.path() / "c.ckpt";
  r = test::run_faster(line + " --save " + (dir.path() / "straight.pt").string() +
                       " --checkpoint " + ckpt.string() + " --keep-checkpoints");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_faster(line + " --resume " + ckpt.string() + ".epoch1 --save " +
                       (dir.path() / "resumed.pt").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resuming after epoch 1"), std::string::npos) << r.output;
  const auto a = train::read_state_dict(dir.path() / "straight.pt");
  const auto b = train::read_state_dict(dir.path() / "resumed.pt");
  ASSERT_EQ(a.size(), b.size());
  for (const auto& kv : a) EXPECT_TRUE(torch::equal(kv.value(), b.at(kv.key()))) << kv.key();
  // --test-only scores the saved weights (the average) as the run's last test pass did.
  r = test::run_faster("train --data-path " + data.string() +
                       " --model resnet18 --device cpu -j 2 --val-resize-size 32 "
                       "--val-crop-size 28 --test-only --resume " +
                       (dir.path() / "straight.pt").string() + " --json " +
                       (dir.path() / "test_only.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("eval resnet18"), std::string::npos) << r.output;
  const auto scored = nlohmann::json::parse(test::read_file(dir.path() / "test_only.json"));
  EXPECT_NEAR(scored["top1"].get<double>(), straight["final_test_accuracy"].get<double>(), 1e-9);
}

TEST(TorchvisionFlags, OutputDirCheckpointsResumeInTorchvisionsOwnObjects) {
  REQUIRE_FASHION_MNIST();
  if (!test::have_python_module("torchvision")) GTEST_SKIP() << "no Python torchvision";
  const auto data = test::exported_fashion_mnist(200);
  const test::TempDir dir;
  const auto out = dir.path() / "tv";
  const std::string line =
      "train --data-path " + data.string() +
      " --model resnet18 --device cpu -b 32 -j 2 --epochs 3 --lr 0.2 --lr-scheduler steplr "
      "--lr-step-size 1 --lr-gamma 0.5 --lr-warmup-epochs 1 --lr-warmup-method linear "
      "--norm-weight-decay 0 --bias-weight-decay 0.00003 --model-ema --model-ema-steps 2 "
      "--train-crop-size 28 --val-resize-size 32 --val-crop-size 28 --output-dir " +
      out.string();
  auto r = test::run_faster(line);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // train.py's objects, built as it builds them from its arguments (references' utils.
  // set_weight_decay transcribed), take the checkpoint with their own load_state_dict; its
  // scheduler then goes on as faster's schedule does.
  const auto py = test::run_python(R"PY(
import os
from torch.optim.lr_scheduler import LinearLR, SequentialLR, StepLR
from torch.optim.swa_utils import AveragedModel
ck = torch.load(os.path.join(path, "checkpoint.pth"), map_location="cpu")
a = ck["args"]
model = torchvision.models.resnet18(num_classes=10)
model.load_state_dict(ck["model"])
norms = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.LayerNorm, torch.nn.GroupNorm)
params, decays = {"other": [], "norm": []}, {"other": a["weight_decay"], "norm": a["norm_weight_decay"]}
custom = [] if a["bias_weight_decay"] is None else [("bias", a["bias_weight_decay"])]
for key, d in custom:
    params[key], decays[key] = [], d
for m in model.modules():
    for name, p in m.named_parameters(recurse=False):
        key = next((k for k, _ in custom if k == name), None)
        if key is None:
            key = "norm" if a["norm_weight_decay"] is not None and isinstance(m, norms) else "other"
        params[key].append(p)
groups = [{"params": params[k], "weight_decay": decays[k]} for k in params if params[k]]
def built():
    opt = torch.optim.SGD([dict(g) for g in groups], lr=a["lr"], momentum=a["momentum"],
                          weight_decay=a["weight_decay"], nesterov="nesterov" in a["opt"])
    main = StepLR(opt, step_size=a["lr_step_size"], gamma=a["lr_gamma"])
    warm = LinearLR(opt, start_factor=a["lr_warmup_decay"], total_iters=a["lr_warmup_epochs"])
    return opt, SequentialLR(opt, [warm, main], milestones=[a["lr_warmup_epochs"]])
# The scheduler train.py would hold after as many epochs, stepped by torch itself.
ref_opt, ref = built()
for _ in range(ck["epoch"] + 1):
    ref_opt.step()
    ref.step()
opt, sched = built()
opt.load_state_dict(ck["optimizer"])
sched.load_state_dict(ck["lr_scheduler"])
def same(x, y):
    if isinstance(x, (list, tuple)):
        return isinstance(y, (list, tuple)) and len(x) == len(y) and all(map(same, x, y))
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, float) or isinstance(y, float):
        return abs(x - y) <= 1e-12 * max(abs(x), abs(y), 1e-300)
    return x == y
theirs, mine = ref.state_dict(), sched.state_dict()
keys = [k for k in theirs if k != "_schedulers"]
keys += ["%d.%s" % (i, k) for i, s in enumerate(theirs["_schedulers"]) for k in s]
def at(d, key):
    i, _, k = key.partition(".")
    return d["_schedulers"][int(i)].get(k, "missing") if k else d.get(key, "missing")
print("scheduler differs from torch's at:",
      " ".join("%s (%r, torch %r)" % (k, at(mine, k), at(theirs, k))
               for k in keys if not same(at(mine, k), at(theirs, k))) or "none")
AveragedModel(model, use_buffers=True).load_state_dict(ck["model_ema"])
momenta = all(opt.state[p]["momentum_buffer"].shape == p.shape for g in opt.param_groups for p in g["params"])
print("epoch", ck["epoch"], "groups", len(opt.param_groups), "momenta", int(momenta))
print("lr", repr(opt.param_groups[0]["lr"]))
sched.step()
print("next", repr(opt.param_groups[0]["lr"]))
print("files", " ".join(sorted(os.listdir(path))))
)PY",
                                   out);
  ASSERT_EQ(py.exit_code, 0) << py.output;
  EXPECT_NE(py.output.find("epoch 2 groups 3 momenta 1"), std::string::npos) << py.output;
  // Every entry of the scheduler's state as torch's own after three epochs (_step_count too).
  EXPECT_NE(py.output.find("scheduler differs from torch's at: none"), std::string::npos)
      << py.output;
  // Warm-up epoch 0, then 0.2 x 0.5^(e - 1): the rate for epoch 3, then 4.
  const auto number = [&](const std::string& key) {
    const auto at = py.output.find(key + " ");
    return at == std::string::npos ? -1.0 : std::stod(py.output.substr(at + key.size() + 1));
  };
  EXPECT_NEAR(number("lr"), 0.05, 1e-12) << py.output;
  EXPECT_NEAR(number("next"), 0.025, 1e-12) << py.output;
  EXPECT_NE(py.output.find("files checkpoint.pth model_0.pth model_1.pth model_2.pth"),
            std::string::npos)
      << py.output;
  // faster eval of the checkpoint scores at its run's test transforms (crop 28 of 32) as given
  // by hand, read from its "args": faster's whole record there, or, in a checkpoint.pth as
  // torchvision's train.py writes it (args an argparse.Namespace), val_crop_size and
  // val_resize_size.  Before, it scored at 224 px with a warning.
  const auto tv_args = test::run_python(R"PY(
import argparse, os
ck = torch.load(os.path.join(path, "checkpoint.pth"), map_location="cpu")
ck["args"] = argparse.Namespace(**{k: v for k, v in ck["args"].items() if k != "faster"})
torch.save(ck, os.path.join(path, "torchvision.pth"))
)PY",
                                        out);
  ASSERT_EQ(tv_args.exit_code, 0) << tv_args.output;
  const auto scored = [&](const std::string& weights, const std::string& flags) {
    const auto e = test::run_faster("eval --device cpu --data " + data.string() + " --weights " +
                                    (out / weights).string() + flags);
    EXPECT_EQ(e.exit_code, 0) << e.output;
    EXPECT_EQ(e.output.find("records no resolution"), std::string::npos) << e.output;
    EXPECT_NE(e.output.find(" at 28 px: top-1 "), std::string::npos) << e.output;
    const auto at = e.output.find("top-1 ");
    return at == std::string::npos ? -1.0 : std::stod(e.output.substr(at + 6));
  };
  const double by_hand = scored("checkpoint.pth", " --val-res 28 --val-resize 32");
  EXPECT_EQ(scored("checkpoint.pth", ""), by_hand);
  EXPECT_EQ(scored("torchvision.pth", ""), by_hand);
  // A flipped byte inside a tensor of model_1.pth: faster eval, --test-only and --resume refuse
  // it by its entry's CRC-32.
  const auto damaged = out / "model_1.pth";
  torch::Tensor largest;
  for (const auto& kv : train::read_state_dict(damaged))
    if (!largest.defined() || kv.value().numel() > largest.numel()) largest = kv.value();
  const auto values = largest.contiguous();
  std::string bytes = test::read_file(damaged);
  const auto at =
      bytes.find(std::string(static_cast<const char*>(values.data_ptr()), values.nbytes()));
  ASSERT_NE(at, std::string::npos);
  bytes[at + values.nbytes() / 2] ^= 0x01;
  test::write_file(damaged, bytes);
  for (const std::string& command :
       {"eval --device cpu --val-res 28 --data " + data.string() + " --weights " + damaged.string(),
        "train --data-path " + data.string() + " --device cpu --test-only --resume " +
            damaged.string(),
        "train --data-path " + data.string() + " --device cpu --resume " + damaged.string()}) {
    const auto d = test::run_faster(command);
    EXPECT_EQ(d.exit_code, 1) << command << "\n" << d.output;
    EXPECT_NE(d.output.find("does not match its CRC-32"), std::string::npos) << d.output;
  }
  // A new run is refused the folder (its checkpoint.pth is another run's), the files untouched.
  const auto before = test::read_file(out / "checkpoint.pth");
  r = test::run_faster(line);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--output-dir"), std::string::npos) << r.output;
  EXPECT_EQ(test::read_file(out / "checkpoint.pth"), before);
}

// The strong ResNet-50 line of torchvision's README, its flags unchanged, its sizes scaled to this
// machine (model, epochs, warm-up, crops, batch): under DDP its --ra-sampler --ra-reps 4 deal
// each rank floor(1000 / 256) * 256 / 2 = 384 images (RASampler's epoch: 768 for the job, about
// 192 of them distinct); in a single process
// train.py ignores the sampler, and so does faster, saying so.
TEST(TorchvisionFlags, TheStrongResNet50LineRunsItsRepeatedAugmentationUnderDdp) {
  REQUIRE_FASHION_MNIST();
  const auto data = test::exported_fashion_mnist(1000);
  const test::TempDir dir;
  const std::string line =
      "train --data-path " + data.string() +
      " --model resnet18 --batch-size 32 --lr 0.5 --lr-scheduler cosineannealinglr "
      "--lr-warmup-epochs 0 --lr-warmup-method linear --auto-augment ta_wide --epochs 1 "
      "--random-erase 0.1 --weight-decay 0.00002 --norm-weight-decay 0.0 --label-smoothing 0.1 "
      "--mixup-alpha 0.2 --cutmix-alpha 1.0 --train-crop-size 28 --model-ema "
      "--val-resize-size 32 --val-crop-size 28 --ra-sampler --ra-reps 4 --device cpu -j 1";
  const auto ddp = test::run_faster(line + " --parallel ddp --nproc 2 --json " +
                                    (dir.path() / "ddp.json").string());
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  const auto report = nlohmann::json::parse(test::read_file(dir.path() / "ddp.json"));
  EXPECT_EQ(report["options"]["ra_reps"], 4);
  EXPECT_EQ(report["epochs"][0]["train_images"], 768) << report["epochs"].dump();      // the job's
  EXPECT_EQ(report["epochs"][0]["loader"]["images"], 384) << report["epochs"].dump();  // rank 0's
  const auto one = test::run_faster(line + " --json " + (dir.path() / "one.json").string());
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("--ra-sampler: as torchvision's train.py, only under DDP"),
            std::string::npos)
      << one.output;
  const auto alone = nlohmann::json::parse(test::read_file(dir.path() / "one.json"));
  EXPECT_EQ(alone["options"]["ra_reps"], 0);
  EXPECT_EQ(alone["epochs"][0]["train_images"], 1000) << alone["epochs"].dump();
}

// --- torchvision's pretrained weights by name (--weights) -----------------------------------

// Each name's file, evaluation resize and crop, and DEFAULT, as torchvision's enums hold them; the
// cache folder as torch.hub.get_dir() reads the environment.
TEST(TorchvisionWeights, NamesFilesAndResizesAreTorchvisionsOwn) {
  if (!test::have_python_module("torchvision")) GTEST_SKIP() << "no Python torchvision";
  const test::TempDir dir;
  const auto r = test::run_python(R"(
import torchvision.models.resnet as R
for n in sorted(dir(R)):
    if n.endswith("_Weights"):
        E = getattr(R, n)
        for m in E:
            t = m.transforms()
            print("entry", f"{n}.{m.name}", m.url.rsplit("/", 1)[1], t.resize_size[0],
                  t.crop_size[0], m.meta["categories"].__len__())
        print("entry", f"{n}.DEFAULT", E.DEFAULT.url.rsplit("/", 1)[1], 0, 0, 0)
)",
                                  dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(r.output);
  std::string word, name, file;
  int resize = 0, crop = 0, classes = 0, entries = 0;
  while (in >> word >> name >> file >> resize >> crop >> classes) {
    ASSERT_EQ(word, "entry") << r.output;
    ASSERT_TRUE(train::is_weights_name(name)) << name;
    const auto w = train::torchvision_weights(name);
    EXPECT_EQ(w.file, file) << name;
    EXPECT_EQ(w.url(), "https://download.pytorch.org/models/" + file);
    if (name.find(".DEFAULT") == std::string::npos) {
      EXPECT_EQ(w.name, name);
      EXPECT_EQ(w.resize, resize) << name;
      EXPECT_EQ(w.crop, crop) << name;
      EXPECT_EQ(classes, 1000) << name;
      // Its architecture is faster's model of that name, which torchvision's enum is named for.
      EXPECT_NO_THROW(models::family(w.arch)) << name;
    }
    ++entries;
  }
  EXPECT_EQ(entries, 27) << r.output;  // 17 weights of 10 models, and each model's DEFAULT
  for (const char* text : {"weights.pth", "dir/ResNet50_Weights.IMAGENET1K_V1", "ResNet50_Weights.",
                           "_Weights.IMAGENET1K_V1", "ResNet50.IMAGENET1K_V1"})
    EXPECT_FALSE(train::is_weights_name(text)) << text;
  try {
    train::torchvision_weights("ResNet50_Weights.IMAGENET1K_V3");
    ADD_FAILURE() << "an unknown tag passed";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("IMAGENET1K_V1, IMAGENET1K_V2 (or DEFAULT)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(train::torchvision_weights("ViT_B_16_Weights.IMAGENET1K_V1"), UsageError);
  // A bare tag is --model's, as torchvision's WeightsEnum.verify reads a string; the rest as is.
  EXPECT_EQ(train::qualify_weights_tag("IMAGENET1K_V2", "resnet50"),
            "ResNet50_Weights.IMAGENET1K_V2");
  EXPECT_EQ(train::qualify_weights_tag("DEFAULT", "wide_resnet50_2"),
            "Wide_ResNet50_2_Weights.DEFAULT");
  for (const char* text : {"ResNet50_Weights.IMAGENET1K_V2", "weights.pth", "dir/V1", "v1"})
    EXPECT_EQ(train::qualify_weights_tag(text, "resnet18"), text);
  EXPECT_THROW(train::torchvision_weights(train::qualify_weights_tag("V9", "resnet18")),
               UsageError);  // an unknown tag: the enum's tags listed, as above
  EXPECT_THROW(train::qualify_weights_tag("IMAGENET1K_V1", ""), UsageError);
  EXPECT_THROW(train::qualify_weights_tag("IMAGENET1K_V1", "thinnet"), UsageError);
  // The cache folder: $TORCH_HOME, else $XDG_CACHE_HOME/torch, else ~/.cache/torch, as torch's.
  const char* home = std::getenv("HOME");
  const std::string saved_home = home ? home : "";
  for (const std::string env :
       {"TORCH_HOME=/a/th XDG_CACHE_HOME=/b/xdg HOME=/c/home", "XDG_CACHE_HOME=/b/xdg HOME=/c/home",
        "HOME=/c/home", "TORCH_HOME=~/th HOME=/c/home"}) {
    unsetenv("TORCH_HOME");
    unsetenv("XDG_CACHE_HOME");
    std::istringstream vars(env);
    for (std::string kv; vars >> kv;)
      setenv(kv.substr(0, kv.find('=')).c_str(), kv.substr(kv.find('=') + 1).c_str(), 1);
    const auto theirs = test::run_shell(
        "env -u TORCH_HOME -u XDG_CACHE_HOME " + env +
        " /usr/bin/python3 -c 'import torch.hub; print(torch.hub.get_dir() + \"/checkpoints\")'");
    ASSERT_EQ(theirs.exit_code, 0) << theirs.output;
    EXPECT_EQ(train::torch_hub_checkpoints() + "\n", theirs.output) << env;
  }
  unsetenv("TORCH_HOME");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", saved_home.c_str(), 1);
}

// train.py --test-only --weights NAME, and eval --weights NAME (or a tag of --model's): the file
// torchvision downloaded into torch's cache, scored at the resize torchvision's transforms for them
// take (ResNet-50's V2: 232, not 256); a missing file is an error that says where it goes and where
// it comes from.
TEST(TorchvisionFlags, WeightsByNameAreScoredFromTorchsCacheAtTheirResize) {
  if (!test::have_python_module("torchvision")) GTEST_SKIP() << "no Python torchvision";
  const test::TempDir dir;
  test::make_tree(dir.path() / "data" / "val", 2, 3);
  const auto cache = dir.path() / "th" / "hub" / "checkpoints";
  fs::create_directories(cache);
  const auto file = cache / "resnet50-11ad3fa6.pth";
  // A stand-in of the 2 classes here at the name's place (the real one classifies 1000).
  const auto py = test::run_python(
      "torch.manual_seed(0)\n"
      "torch.save(torchvision.models.resnet50(num_classes=2).state_dict(), path)\n",
      file);
  ASSERT_EQ(py.exit_code, 0) << py.output;
  const std::string env = "TORCH_HOME=" + (dir.path() / "th").string();
  const std::string data = " --data " + (dir.path() / "data").string() + " --device cpu --json ";
  const auto loss = [&](const std::string& json) {
    return nlohmann::json::parse(test::read_file(dir.path() / json))["loss"].get<double>();
  };
  std::vector<std::string> lines = {
      "eval --weights ResNet50_Weights.DEFAULT" + data + "(dir)/named.json",
      "eval --weights " + file.string() + " --val-res 224 --val-resize 232" + data +
          "(dir)/232.json",
      "eval --weights " + file.string() + " --val-res 224 --val-resize 256" + data +
          "(dir)/256.json",
      "train --data-path " + (dir.path() / "data").string() +
          " --test-only --weights ResNet50_Weights.IMAGENET1K_V2 --device cpu --json "
          "(dir)/test_only.json",
      // --resume's weights at --weights' transforms, as train.py; a resize given still holds.
      "train --data-path " + (dir.path() / "data").string() + " --test-only --resume " +
          file.string() +
          " --weights ResNet50_Weights.IMAGENET1K_V2 --device cpu --json (dir)/resumed.json",
      "train --data-path " + (dir.path() / "data").string() + " --test-only --resume " +
          file.string() +
          " --weights ResNet50_Weights.IMAGENET1K_V2 --val-resize-size 240 --device cpu --json "
          "(dir)/resumed240.json",
      "eval --weights " + file.string() + " --val-res 224 --val-resize 240" + data +
          "(dir)/240.json",
      // The tag alone, of --model's enum, as train.py's get_model reads it.
      "eval --model resnet50 --weights IMAGENET1K_V2" + data + "(dir)/tag.json",
      "train --data-path " + (dir.path() / "data").string() +
          " --test-only --model resnet50 --weights DEFAULT --device cpu --json (dir)/tag2.json"};
  for (auto& l : lines) {
    l.replace(l.find("(dir)"), 5, dir.path().string());
    const auto r = test::run_faster_env(env, l);
    ASSERT_EQ(r.exit_code, 0) << l << "\n" << r.output;
  }
  EXPECT_DOUBLE_EQ(loss("named.json"), loss("232.json"));
  EXPECT_DOUBLE_EQ(loss("test_only.json"), loss("232.json"));
  EXPECT_DOUBLE_EQ(loss("resumed.json"), loss("232.json"));
  EXPECT_DOUBLE_EQ(loss("resumed240.json"), loss("240.json"));
  EXPECT_DOUBLE_EQ(loss("tag.json"), loss("232.json"));
  EXPECT_DOUBLE_EQ(loss("tag2.json"), loss("232.json"));
  EXPECT_NE(loss("232.json"), loss("256.json"));  // the resize is seen
  // No file in the cache: where it goes, and where it comes from.
  auto r = test::run_faster_env(
      "TORCH_HOME=" + (dir.path() / "empty").string(),
      "eval --weights ResNet50_Weights.IMAGENET1K_V1" + data + (dir.path() / "x.json").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find((dir.path() / "empty/hub/checkpoints/resnet50-0676ba61.pth").string()),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("https://download.pytorch.org/models/resnet50-0676ba61.pth"),
            std::string::npos)
      << r.output;
  // Usage errors before anything is read: an unknown tag, another model's weights.
  r = test::run_faster_env(env, "eval --weights ResNet50_Weights.IMAGENET1K_V9" + data +
                                    (dir.path() / "x.json").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("IMAGENET1K_V1, IMAGENET1K_V2"), std::string::npos) << r.output;
  r = test::run_faster_env(env, "eval --model resnet18 --weights ResNet50_Weights.DEFAULT" + data +
                                    (dir.path() / "x.json").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("resnet50's, not --model resnet18's"), std::string::npos) << r.output;
  // A tag alone: eval needs --model; train.py's spelling takes its default, resnet18 (whose file
  // is not in this cache).
  r = test::run_faster_env(
      env, "eval --weights IMAGENET1K_V2" + data + (dir.path() / "x.json").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("needs --model"), std::string::npos) << r.output;
  r = test::run_faster_env(env, "train --data-path " + (dir.path() / "data").string() +
                                    " --test-only --weights DEFAULT --device cpu");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("resnet18-f37072fd.pth"), std::string::npos) << r.output;
}

// train.py --weights: training starts from them, --model defaulting to theirs; fine-tuning on
// other classes keeps every layer but the classifier, which starts fresh (train.py would refuse
// the class count).  A file works as a name does.
TEST(TorchvisionFlags, TrainingStartsFromWeightsTheirClassifierFreshForOtherClasses) {
  REQUIRE_FASHION_MNIST();
  if (!test::have_python_module("torchvision")) GTEST_SKIP() << "no Python torchvision";
  const auto data = test::exported_fashion_mnist(200);
  const test::TempDir dir;
  const auto cache = dir.path() / "th" / "hub" / "checkpoints";
  fs::create_directories(cache);
  const auto named = cache / "resnet34-b627a593.pth";
  auto py = test::run_python(
      "torch.manual_seed(1)\n"
      "torch.save(torchvision.models.resnet34().state_dict(), path)\n",
      named);
  ASSERT_EQ(py.exit_code, 0) << py.output;
  // A rate too small to move a weight: what is saved is what the run started from, to 1e-20
  // (BatchNorm's running statistics and zero biases aside).
  const std::string line = "train --data-path " + data.string() + " --lr 1e-30 --weight-decay 0" +
                           kSmall + " --weights ";
  auto r = test::run_faster_env("TORCH_HOME=" + (dir.path() / "th").string(),
                                line + "ResNet34_Weights.DEFAULT --save " +
                                    (dir.path() / "a.pt").string() + " --json " +
                                    (dir.path() / "a.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resnet34 (10 classes)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("from ResNet34_Weights.DEFAULT (their 1000-class fc left out: fresh)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(nlohmann::json::parse(test::read_file(dir.path() / "a.json"))["options"]["weights"],
            "ResNet34_Weights.DEFAULT");
  // The same from the file faster saved, every layer taken (its fc classifies these 10 classes).
  r = test::run_faster(line + (dir.path() / "a.pt").string() + " --save " +
                       (dir.path() / "b.pt").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("left out"), std::string::npos) << r.output;
  py = test::run_python(R"(
d = path + "/"
start, a, b = torch.load(d + "th/hub/checkpoints/resnet34-b627a593.pth"), torch.load(d + "a.pt"), torch.load(d + "b.pt")
convs = [k for k in start if "conv" in k or "downsample.0" in k]
assert len(convs) == 36, len(convs)
for k in convs:  # a weight at zero moves by the rate's 1e-30 times its gradient
    assert torch.allclose(start[k], a[k], rtol=0, atol=1e-20), k
    assert torch.allclose(a[k], b[k], rtol=0, atol=1e-20), k
assert a["fc.weight"].shape == (10, 512) and not torch.equal(a["fc.weight"], start["fc.weight"][:10])
assert torch.equal(a["fc.weight"], b["fc.weight"])
print("ok")
)",
                        dir.path());
  EXPECT_EQ(py.exit_code, 0) << py.output;
  // Weights of another model than --model's.
  r = test::run_faster(line + (dir.path() / "a.pt").string() + " --model resnet18");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("holds resnet34 weights, not --model resnet18's"), std::string::npos)
      << r.output;
}

TEST(TorchvisionFlags, ValuesFasterCannotHonourExitTwoNamingTheirFlags) {
  std::vector<std::string> lines;
  for (const auto& bad : {"--opt adamw", "--interpolation bicubic", "--lr-scheduler onecycle",
                          "--ra-sampler --ra-reps 0", "--backend opencv",
                          "--dist-url tcp://10.0.0.1:23456", "--start-epoch 3", "--print-freq -1"})
    lines.push_back(std::string("train --device cpu --data-path /nonexistent ") + bad);
  std::vector<std::future<test::RunResult>> runs;
  for (const auto& l : lines) runs.push_back(std::async(std::launch::async, test::run_faster, l));
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto r = runs[i].get();
    EXPECT_EQ(r.exit_code, 2) << lines[i] << "\n" << r.output;
    const std::string named =
        lines[i].substr(lines[i].rfind("--"), lines[i].rfind(' ') - lines[i].rfind("--"));
    EXPECT_NE(r.output.find(named), std::string::npos) << lines[i] << "\n" << r.output;
  }
}

// --use-deterministic-algorithms on the CPU: taken, since faster's CPU runs are deterministic
// already; two runs of the same line train the same weights to the bit.
TEST(TorchvisionFlags, DeterministicAlgorithmsOnTheCpuTrainTheSameWeightsTwice) {
  REQUIRE_FASHION_MNIST();
  if (!test::have_python_module("torch")) GTEST_SKIP() << "no Python torch";
  const auto data = test::exported_fashion_mnist(200);
  const test::TempDir dir;
  for (const char* name : {"a.pt", "b.pt"}) {
    const auto r = test::run_faster("train --data-path " + data.string() +
                                    " --auto-augment ta_wide --use-deterministic-algorithms" +
                                    kSmall + " --save " + (dir.path() / name).string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("(--use-deterministic-algorithms: faster's CPU runs are deterministic"),
              std::string::npos)
        << r.output;
  }
  const auto py = test::run_python(R"(
a, b = torch.load(path + "/a.pt"), torch.load(path + "/b.pt")
assert a.keys() == b.keys()
for k in a:
    assert torch.equal(a[k], b[k]), k
print("ok")
)",
                                   dir.path());
  EXPECT_EQ(py.exit_code, 0) << py.output;
}

}  // namespace
}  // namespace faster

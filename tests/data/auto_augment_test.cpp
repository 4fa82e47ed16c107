// torchvision's automatic augmentation in faster against torchvision 0.14 itself (Python, on the
// CPU): every op at strengths across its range on RGB and gray images against
// torchvision.transforms.autoaugment._apply_op (nearest geometry, zeros entering), the policies'
// strength tables and AutoAugment's ImageNet sub-policies against torchvision's own, and the
// draws against the policies' distributions.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

#include "faster/data/augment/auto_augment.h"
#include "support/test_support.h"

namespace faster::data {
namespace {
namespace fs = std::filesystem;

// HWC uint8 images: noise (every tie of the nearest sample is as likely as any other), and a smooth
// picture (gradients and a disc, as photographs are mostly smooth), RGB and gray.
std::vector<ImageBuffer> images() {
  std::vector<ImageBuffer> out;
  torch::manual_seed(5);
  const auto add = [&](const torch::Tensor& hwc) {
    ImageBuffer b;
    b.reshape(static_cast<int>(hwc.size(1)), static_cast<int>(hwc.size(0)),
              static_cast<int>(hwc.size(2)));
    std::memcpy(b.data(), hwc.contiguous().data_ptr<uint8_t>(), hwc.numel());
    out.push_back(std::move(b));
  };
  add(torch::randint(256, {29, 37, 3}, torch::kByte));
  const auto y = torch::arange(48).view({48, 1, 1}).to(torch::kFloat);
  const auto x = torch::arange(64).view({1, 64, 1}).to(torch::kFloat);
  const auto c = torch::tensor({1.0f, 0.6f, 0.3f}).view({1, 1, 3});
  auto smooth =
      (x * 3 + y * 2) * c + 40 * ((x - 30).pow(2) + (y - 20).pow(2) < 150).to(torch::kFloat);
  add(smooth.clamp(0, 255).to(torch::kByte));
  add(torch::randint(256, {23, 31, 1}, torch::kByte));
  return out;
}

TEST(AutoAugment, EveryOpIsTorchvisionsOnTheSameImage) {
  if (!test::have_python_module("torchvision")) GTEST_SKIP() << "no Python torchvision";
  const auto imgs = images();
  c10::Dict<std::string, torch::Tensor> saved;
  struct Case {
    int image;
    AppliedOp op;
    bool bilinear;
  };
  std::vector<Case> cases;
  for (size_t i = 0; i < imgs.size(); ++i) {
    const auto& im = imgs[i];
    saved.insert("img" + std::to_string(i),
                 torch::from_blob(const_cast<uint8_t*>(im.data()),
                                  {im.height(), im.width(), im.channels()}, torch::kByte)
                     .permute({2, 0, 1})
                     .clone());  // a copy: the buffer goes, and a gray image's view is contiguous
    for (const auto& [name, op] : kAugmentOpNames) {
      const auto space =
          op_space(AutoAugmentPolicy::kTrivialAugmentWide, op, 31, im.height(), im.width());
      std::vector<double> ms{0};
      if (!space.magnitudes.empty())
        ms = {space.magnitudes[1], space.magnitudes[12], space.magnitudes[30]};
      if (op == AugmentOp::kSolarize) ms.push_back(128.4);
      for (double m : ms)
        for (double sign : {1.0, -1.0}) {
          if (sign < 0 && !space.signed_) continue;
          for (const bool bilinear : {true, false})  // the geometric ops sample either way
            if (bilinear || space.signed_)
              cases.push_back({static_cast<int>(i), {op, sign * m}, bilinear});
        }
    }
  }
  auto index = torch::zeros({static_cast<int64_t>(cases.size()), 4}, torch::kDouble);
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& [i, a, bilinear] = cases[k];
    const auto& im = imgs[i];
    ImageBuffer out;
    out.reshape(im.width(), im.height(), im.channels());
    apply_op(a, im.view(), out.mutable_view(), bilinear);
    saved.insert(
        "out" + std::to_string(k),
        torch::from_blob(out.data(), {im.height(), im.width(), im.channels()}, torch::kByte)
            .permute({2, 0, 1})
            .clone());  // a copy: the buffer goes, and a gray image's view is contiguous
    index[k] =
        torch::tensor({double(i), double(a.op), a.magnitude, double(bilinear)}, torch::kDouble);
  }
  saved.insert("index", index);
  const test::TempDir dir;
  const auto bytes = torch::pickle_save(saved);
  test::write_file(dir.path() / "ops.pt", std::string(bytes.begin(), bytes.end()));
  const auto r = test::run_python(R"(
from torchvision.transforms.autoaugment import _apply_op
from torchvision.transforms import InterpolationMode
names = ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness",
         "Color", "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize",
         "Invert"]
t = torch.load(path)
for k, (i, op, m, bilinear) in enumerate(t["index"].tolist()):
    img = t[f"img{int(i)}"]
    mode = InterpolationMode.BILINEAR if bilinear else InterpolationMode.NEAREST
    ref = _apply_op(img, names[int(op)], m, interpolation=mode, fill=None)
    d = (ref.int() - t[f"out{k}"].int()).abs()
    print(names[int(op)], m, int(i), int(bilinear), d.max().item(), (d > 1).float().mean().item(),
          (d > 0).float().mean().item())
)",
                                  dir.path() / "ops.pt");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(r.output);
  std::string name;
  double m = 0, far = 0, off = 0;
  int i = 0, bilinear = 0, worst = 0, n = 0;
  double nearest_off = 0, bilinear_off = 0, colour_off = 0;
  int bilinear_worst = 0, colour_worst = 0;
  while (in >> name >> m >> i >> bilinear >> worst >> far >> off) {
    ++n;
    const bool geometry =
        name.find("Shear") == 0 || name.find("Translate") == 0 || name == "Rotate";
    const std::string what = name + " " + std::to_string(m) + " on image " + std::to_string(i) +
                             (bilinear ? " (bilinear)" : " (nearest)");
    if (geometry && !bilinear) {
      // A pixel whose source falls on a tie between two samples may take the other (float32
      // arithmetic in another order): at most 0.5 % of the pixels.
      nearest_off = std::max(nearest_off, off);
      EXPECT_LE(off, 0.005) << what;
    } else if (geometry) {
      // Bilinear weights summed in another order may round a value the other way: one level,
      // on at most 1 % of the values.
      bilinear_off = std::max(bilinear_off, off), bilinear_worst = std::max(bilinear_worst, worst);
      EXPECT_LE(worst, 1) << what;
      EXPECT_LE(off, 0.01) << what;
    } else {
      // The colour ops round as torch does: within one level, on at most 0.1 % of values.
      colour_off = std::max(colour_off, off), colour_worst = std::max(colour_worst, worst);
      EXPECT_LE(worst, 1) << what;
      EXPECT_LE(off, 0.001) << what;
    }
  }
  EXPECT_EQ(n, static_cast<int>(cases.size())) << r.output;
  std::printf(
      "nearest geometry: at most %.2f %% of pixels differ; bilinear: %.2f %% of values, by at "
      "most %d; colour: %.2f %% of values, by at most %d\n",
      100 * nearest_off, 100 * bilinear_off, bilinear_worst, 100 * colour_off, colour_worst);
}

TEST(AutoAugment, PoliciesAreTorchvisionsTables) {
  if (!test::have_python_module("torchvision")) GTEST_SKIP() << "no Python torchvision";
  const int h = 48, w = 64;
  const auto r = test::run_python(R"(
from torchvision.transforms import TrivialAugmentWide, RandAugment, AutoAugment, AutoAugmentPolicy
from torchvision.transforms import AugMix
spaces = {"ta_wide": TrivialAugmentWide()._augmentation_space(31),
          "ra": RandAugment()._augmentation_space(31, (48, 64)),
          "imagenet": AutoAugment()._augmentation_space(10, (48, 64)),
          "augmix": AugMix()._augmentation_space(10, (48, 64))}
for policy, space in spaces.items():
    for name, (mags, signed) in space.items():
        vals = [float(v) for v in mags.flatten().tolist()] if mags.ndim > 0 else []
        print("space", policy, name, int(signed), len(vals), *[repr(v) for v in vals])
for (a, pa, ma), (b, pb, mb) in AutoAugment(AutoAugmentPolicy.IMAGENET).policies:
    print("pair", a, pa, -1 if ma is None else ma, b, pb, -1 if mb is None else mb)
)",
                                  fs::path("."));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(r.output);
  std::string kind;
  std::map<AutoAugmentPolicy, std::vector<AugmentOp>> seen;
  size_t pair = 0;
  while (in >> kind) {
    if (kind == "space") {
      std::string policy_name, op_name;
      int is_signed = 0, count = 0;
      in >> policy_name >> op_name >> is_signed >> count;
      const auto policy = parse_enum(kAutoAugmentNames, policy_name, "policy");
      const auto op = parse_enum(kAugmentOpNames, op_name, "op");
      seen[policy].push_back(op);
      const bool ten =
          policy == AutoAugmentPolicy::kImagenet || policy == AutoAugmentPolicy::kAugMix;
      const auto space = op_space(policy, op, ten ? 10 : 31, h, w);
      ASSERT_EQ(static_cast<int>(space.magnitudes.size()), count) << policy_name << " " << op_name;
      if (count > 0) EXPECT_EQ(space.signed_, is_signed != 0) << policy_name << " " << op_name;
      for (int k = 0; k < count; ++k) {
        double v = 0;
        in >> v;
        // torch.linspace's float32 rounding follows the machine's vector width: one ulp apart.
        EXPECT_NEAR(space.magnitudes[k], v, 1.2e-7 * std::max(1.0, std::abs(v)))
            << policy_name << " " << op_name << " bin " << k;
      }
    } else {
      ASSERT_EQ(kind, "pair");
      std::string a, b;
      double pa = 0, pb = 0;
      int ma = 0, mb = 0;
      in >> a >> pa >> ma >> b >> pb >> mb;
      ASSERT_LT(pair, imagenet_policy().size());
      const auto& [x, y] = imagenet_policy()[pair++];
      EXPECT_EQ(x.op, parse_enum(kAugmentOpNames, a, "op")) << pair;
      EXPECT_EQ(x.p, pa) << pair;
      EXPECT_EQ(x.bin, ma) << pair;
      EXPECT_EQ(y.op, parse_enum(kAugmentOpNames, b, "op")) << pair;
      EXPECT_EQ(y.p, pb) << pair;
      EXPECT_EQ(y.bin, mb) << pair;
    }
  }
  EXPECT_EQ(pair, imagenet_policy().size());
  for (const auto policy : {AutoAugmentPolicy::kTrivialAugmentWide, AutoAugmentPolicy::kRandAugment,
                            AutoAugmentPolicy::kImagenet, AutoAugmentPolicy::kAugMix})
    EXPECT_EQ(seen[policy], policy_ops(policy)) << enum_name(kAutoAugmentNames, policy);
}

// torchvision's AugMix.forward itself, fed faster's draws (its Dirichlet samples through the
// _sample_dirichlet its tests override, its torch.randint calls from the same draws in its order:
// each chain's depth, then each op's index, strength bin and sign) and strengths, against
// faster's AugMix on the same images: severities 3 (train.py's default) and 10, unflipped and
// flipped.
TEST(AutoAugment, AugMixIsTorchvisionsForwardGivenTheSameDraws) {
  if (!test::have_python_module("torchvision")) GTEST_SKIP() << "no Python torchvision";
  const auto imgs = images();
  c10::Dict<std::string, torch::Tensor> saved;
  const auto chw = [](const ImageBuffer& b) {
    return torch::from_blob(const_cast<uint8_t*>(b.data()), {b.height(), b.width(), b.channels()},
                            torch::kByte)
        .permute({2, 0, 1})
        .clone();
  };
  const auto ops = policy_ops(AutoAugmentPolicy::kAugMix);
  int cases = 0;
  AugmentBuffers buffers;
  for (size_t i = 0; i < imgs.size(); ++i) {
    saved.insert("img" + std::to_string(i), chw(imgs[i]));
    // faster's strengths for this image (torch.linspace's own agree to a float32 ulp, as the
    // machine's vector width rounds them: PoliciesAreTorchvisionsTables), so that a colour op's
    // blend of near-equal images, v * (ratio + (1 - ratio)), truncates alike.
    for (const AugmentOp op : ops) {
      const auto space = op_space(AutoAugmentPolicy::kAugMix, op, 10, imgs[i].height(),
                                  imgs[i].width());
      saved.insert("space" + std::to_string(i) + enum_name(kAugmentOpNames, op),
                   space.magnitudes.empty() ? torch::zeros({}, torch::kDouble)
                                            : torch::tensor(space.magnitudes, torch::kDouble));
    }
    for (const int severity : {3, 10})
      for (int k = 0; k < 12; ++k) {
        const auto& im = imgs[i];
        AutoAugmentOptions o;
        o.policy = AutoAugmentPolicy::kAugMix;
        o.augmix_severity = severity;
        SampleRng rng(11, severity, static_cast<int64_t>(i) * 100 + k);
        const AugMixDraw d = draw_augmix(o, im.height(), im.width(), rng);
        ImageBuffer out;
        out.reshape(im.width(), im.height(), im.channels());
        std::memcpy(out.data(), im.data(),
                    static_cast<size_t>(im.width()) * im.height() * im.channels());
        const bool flip = k % 4 == 3;
        apply_augmix(d, flip, /*bilinear=*/true, out, buffers);
        // torch.randint's values in the order AugMix.forward draws them.
        std::vector<int64_t> draws;
        for (const auto& chain : d.chains) {
          draws.push_back(static_cast<int64_t>(chain.size()));
          for (const auto& a : chain) {
            draws.push_back(std::find(ops.begin(), ops.end(), a.op) - ops.begin());
            const auto space = op_space(o.policy, a.op, 10, im.height(), im.width());
            if (space.magnitudes.empty()) continue;
            const auto bin =
                std::find(space.magnitudes.begin(), space.magnitudes.end(), std::abs(a.magnitude)) -
                space.magnitudes.begin();
            ASSERT_LT(bin, severity) << a.magnitude;
            draws.push_back(bin);
            if (space.signed_) draws.push_back(std::signbit(a.magnitude) ? 1 : 0);
          }
        }
        const auto c = std::to_string(cases++);
        saved.insert("out" + c, chw(out));
        saved.insert("draws" + c, torch::tensor(draws, torch::kLong));
        saved.insert("beta" + c, torch::tensor({d.original, d.augmented}).view({1, 2}));
        saved.insert("dirichlet" + c, torch::tensor(d.dirichlet).view({1, -1}));
        saved.insert("case" + c, torch::tensor({int64_t(i), int64_t(severity), int64_t(flip)}));
      }
  }
  const test::TempDir dir;
  const auto bytes = torch::pickle_save(saved);
  test::write_file(dir.path() / "augmix.pt", std::string(bytes.begin(), bytes.end()));
  const auto r = test::run_python(R"(
from torchvision.transforms import AugMix, InterpolationMode
import torchvision.transforms.functional as F
t = torch.load(path)
real_randint = torch.randint
k = 0
while f"out{k}" in t:
    i, severity, flip = t[f"case{k}"].tolist()
    queue = t[f"draws{k}"].tolist()
    draws = list(queue)
    torch.randint = lambda *a, **kw: torch.tensor([queue.pop(0)])
    aug = AugMix(severity=severity, interpolation=InterpolationMode.BILINEAR)
    theirs = aug._augmentation_space(10, tuple(t[f"img{i}"].shape[1:]))
    space = {name: (t[f"space{i}{name}"], signed) for name, (_, signed) in theirs.items()}
    aug._augmentation_space = lambda bins, size: space
    dirichlet = [t[f"beta{k}"], t[f"dirichlet{k}"]]
    aug._sample_dirichlet = lambda params: dirichlet.pop(0)
    img = t[f"img{i}"]
    ref = aug(F.hflip(img) if flip else img)
    torch.randint = real_randint
    assert not queue and not dirichlet, (k, queue)
    d = (ref.int() - t[f"out{k}"].int()).abs()
    print("case", k, d.max().item(), (d > 1).float().mean().item(), (d > 0).float().mean().item())
    if (d > 0).float().mean().item() > 0.01:
        print("#", k, draws, t[f"beta{k}"].tolist(), t[f"dirichlet{k}"].tolist(), file=sys.stderr)
    k += 1
)",
                                  dir.path() / "augmix.pt");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(r.output);
  std::string word;
  int k = 0, worst = 0, n = 0, worst_all = 0;
  double far = 0, off = 0, far_all = 0, off_all = 0;
  while (in >> word >> k >> worst >> far >> off) {
    ++n;
    worst_all = std::max(worst_all, worst), far_all = std::max(far_all, far);
    off_all = std::max(off_all, off);
    // Each op is within a level of torchvision's on a few values (EveryOpIsTorchvisions...), and
    // the mix truncates alike: at most 1 % of values differ (measured: 0.22 %).  Through a chain
    // of three, a level can cross a threshold (Solarize, Posterize, Equalize's bins), so a few
    // values differ by more: at most 0.2 % (measured: 0.03 %, by 3 levels).
    EXPECT_LE(off, 0.01) << "case " << k;
    EXPECT_LE(far, 0.002) << "case " << k;
  }
  EXPECT_EQ(n, cases) << r.output;
  std::printf(
      "AugMix: at most %.2f %% of values differ, %.2f %% by more than a level (at most %d)\n",
      100 * off_all, 100 * far_all, worst_all);
}

TEST(AutoAugment, DrawsFollowThePolicies) {
  constexpr int kDraws = 28000;
  AutoAugmentOptions o;
  o.policy = AutoAugmentPolicy::kTrivialAugmentWide;
  std::map<AugmentOp, int> counts;
  int negative = 0, signed_draws = 0;
  for (int i = 0; i < kDraws; ++i) {
    SampleRng rng(1, 0, i);
    const auto ops = draw_ops(o, 32, 32, rng);
    ASSERT_EQ(ops.size(), 1u);
    ++counts[ops[0].op];
    const auto space = op_space(o.policy, ops[0].op, 31, 32, 32);
    if (space.signed_ && ops[0].magnitude != 0) ++signed_draws, negative += ops[0].magnitude < 0;
  }
  // One of 14 ops each, uniformly (4.5 sigma of 2,000: 190); signs even.
  EXPECT_EQ(counts.size(), 14u);
  for (const auto& [op, n] : counts)
    EXPECT_NEAR(n, kDraws / 14.0, 190) << enum_name(kAugmentOpNames, op);
  EXPECT_NEAR(negative / double(signed_draws), 0.5, 0.02);
  // RandAugment: ra_ops ops at bin ra_magnitude.
  o.policy = AutoAugmentPolicy::kRandAugment;
  o.ra_magnitude = 20;
  SampleRng rng(2, 0, 0);
  for (int i = 0; i < 200; ++i) {
    const auto ops = draw_ops(o, 32, 40, rng);
    ASSERT_EQ(ops.size(), 2u);
    for (const auto& a : ops) {
      const auto space = op_space(o.policy, a.op, 31, 32, 40);
      if (!space.magnitudes.empty())
        EXPECT_EQ(std::abs(a.magnitude), std::abs(space.magnitudes[20]));
    }
  }
  // AutoAugment: at most two ops, from one sub-policy.
  o.policy = AutoAugmentPolicy::kImagenet;
  int total = 0;
  for (int i = 0; i < 2000; ++i) {
    SampleRng r(3, 0, i);
    const auto ops = draw_ops(o, 32, 32, r);
    ASSERT_LE(ops.size(), 2u);
    total += static_cast<int>(ops.size());
  }
  // The sub-policies' probabilities average 0.62 per op: 1.24 ops per image.
  double mean_p = 0;
  for (const auto& [a, b] : imagenet_policy()) mean_p += a.p + b.p;
  mean_p /= imagenet_policy().size();
  EXPECT_NEAR(total / 2000.0, mean_p, 0.06);
  // AugMix: the original's weight Beta(1, 1) (uniform: mean 1/2, variance 1/12), the chains'
  // Dirichlet(1, 1, 1) (each a third on average, summing to 1), 1-3 ops per chain evenly, its 13
  // ops evenly, strength bins below the severity, evenly.
  o.policy = AutoAugmentPolicy::kAugMix;
  o.augmix_severity = 4;
  constexpr int kMixes = 6000;
  double sum = 0, sum_sq = 0, first = 0;
  std::map<int, int> depths, bins;
  std::map<AugmentOp, int> augmix_ops;
  for (int i = 0; i < kMixes; ++i) {
    SampleRng r(4, 0, i);
    const auto d = draw_augmix(o, 32, 48, r);
    sum += d.original, sum_sq += d.original * d.original;
    EXPECT_NEAR(d.original + d.augmented, 1.0, 1e-6);
    ASSERT_EQ(d.dirichlet.size(), 3u);
    EXPECT_NEAR(d.dirichlet[0] + d.dirichlet[1] + d.dirichlet[2], 1.0, 1e-6);
    first += d.dirichlet[0];
    ASSERT_EQ(d.chains.size(), 3u);
    for (const auto& chain : d.chains) {
      ++depths[static_cast<int>(chain.size())];
      for (const auto& a : chain) {
        ++augmix_ops[a.op];
        const auto space = op_space(o.policy, a.op, 10, 32, 48);
        if (space.magnitudes.empty()) continue;
        const auto bin =
            std::find(space.magnitudes.begin(), space.magnitudes.end(), std::abs(a.magnitude)) -
            space.magnitudes.begin();
        if (a.op != AugmentOp::kPosterize) ++bins[static_cast<int>(bin)];  // its bins repeat
      }
    }
  }
  const double mean = sum / kMixes;
  EXPECT_NEAR(mean, 0.5, 0.02);  // 5 sigma of sqrt(1/12 / 6000) = 0.0037: 0.019
  EXPECT_NEAR(sum_sq / kMixes - mean * mean, 1.0 / 12, 0.006);
  EXPECT_NEAR(first / kMixes, 1.0 / 3, 0.015);  // Beta(1, 2): sd 0.236 / sqrt(6000) = 0.003
  EXPECT_EQ(depths.size(), 3u);
  for (const auto& [depth, count] : depths) EXPECT_NEAR(count, kMixes, 5 * 77) << depth;
  EXPECT_EQ(augmix_ops.size(), 13u);
  int all_ops = 0;
  for (const auto& [op, count] : augmix_ops) all_ops += count;
  for (const auto& [op, count] : augmix_ops)
    EXPECT_NEAR(count, all_ops / 13.0, 5 * std::sqrt(all_ops / 13.0))
        << enum_name(kAugmentOpNames, op);
  EXPECT_EQ(bins.size(), 4u);
  int all_bins = 0;
  for (const auto& [bin, count] : bins) all_bins += count;
  for (const auto& [bin, count] : bins)
    EXPECT_NEAR(count, all_bins / 4.0, 5 * std::sqrt(all_bins / 4.0)) << bin;
}

}  // namespace
}  // namespace faster::data

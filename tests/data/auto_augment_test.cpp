// torchvision's automatic augmentation in faster against torchvision 0.14 itself (Python, on the
// CPU): every op at strengths across its range on RGB and gray images against
// torchvision.transforms.autoaugment._apply_op (nearest geometry, zeros entering), the policies'
// strength tables and AutoAugment's ImageNet sub-policies against torchvision's own, and the
// draws against the policies' distributions.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
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
spaces = {"ta_wide": TrivialAugmentWide()._augmentation_space(31),
          "ra": RandAugment()._augmentation_space(31, (48, 64)),
          "imagenet": AutoAugment()._augmentation_space(10, (48, 64))}
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
      const auto space =
          op_space(policy, op, policy == AutoAugmentPolicy::kImagenet ? 10 : 31, h, w);
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
                            AutoAugmentPolicy::kImagenet})
    EXPECT_EQ(seen[policy], policy_ops(policy)) << enum_name(kAutoAugmentNames, policy);
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
}

}  // namespace
}  // namespace faster::data

// torchvision's ResNets, ResNeXts and wide ResNets against torchvision
// (tests/python/resnet_reference.py): parameter counts, state names and shapes, and weights that
// move both ways (faster -> torchvision, torch.save -> faster) giving the same eval-mode logits.
// The Python halves skip where torchvision is not installed.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <sstream>

#include "faster/core/error.h"
#include "faster/models/registry.h"
#include "faster/models/resnet.h"
#include "faster/train/checkpoint.h"
#include "support/test_support.h"

namespace faster::models {
namespace {

constexpr int kSize = 64;  // input side: small enough for quick CPU tests, 2x2 after layer4

ResNet make(const std::string& arch, int classes = 1000) {
  ResNetOptions o;
  o.arch = arch;
  o.classes = classes;
  return ResNet(o);
}

int64_t count(const ResNet& m) {
  int64_t n = 0;
  for (const auto& p : m->parameters()) n += p.numel();
  return n;
}

// The input resnet_reference.py builds: sin(0.7 i), shaped [2, 3, kSize, kSize].
torch::Tensor fixed_input() {
  return (torch::arange(2 * 3 * kSize * kSize, torch::kFloat) * 0.7)
      .sin()
      .reshape({2, 3, kSize, kSize});
}

torch::Tensor eval_logits(ResNet& m) {
  torch::NoGradGuard no_grad;
  m->eval();
  return m->forward(fixed_input());
}

// The largest difference relative to the largest reference logit.
double relative_difference(const torch::Tensor& ours, const torch::Tensor& reference) {
  return ((ours.flatten() - reference.flatten()).abs().max() / reference.abs().max())
      .item<double>();
}

// float32 on CPU.  Measured: 0 (Debian's python3-torch runs the same libtorch as faster); the
// bound leaves room for another PyTorch build, whose convolutions may sum in another order.
constexpr double kTolerance = 1e-4;

bool have_torchvision() {
  static const bool yes =
      test::run_shell("/usr/bin/python3 -c 'import torchvision' 2>/dev/null").exit_code == 0;
  return yes;
}
#define REQUIRE_TORCHVISION() \
  if (!have_torchvision()) GTEST_SKIP() << "no Python torchvision: the reference check is skipped"

// Runs resnet_reference.py MODE OUT ARGS and returns the lines it wrote to OUT.
std::vector<std::string> reference(const std::string& mode, const std::string& args) {
  test::TempDir dir;
  const auto out = dir / "reference.txt";
  const auto r = test::run_shell("/usr/bin/python3 " + std::string(FASTER_SOURCE_DIR) +
                                 "/tests/python/resnet_reference.py " + mode + " '" + out.string() +
                                 "' " + args);
  if (r.exit_code != 0) throw std::runtime_error("resnet_reference.py failed:\n" + r.output);
  std::vector<std::string> lines;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

torch::Tensor parse_logits(const std::string& line) {
  std::vector<float> v;
  std::istringstream in(line);
  for (double x; in >> x;) v.push_back(static_cast<float>(x));
  return torch::tensor(v);
}

std::string shape(const torch::Tensor& t) {
  std::string s;
  for (const auto d : t.sizes()) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s.empty() ? "scalar" : s;
}

// The listing resnet_reference.py writes for a torchvision model, made from ours.
std::vector<std::string> listing(const ResNet& m, const std::string& arch) {
  std::vector<std::string> lines{arch + " params " + std::to_string(count(m))};
  for (const auto& p : m->named_parameters())
    lines.push_back("param " + p.key() + " " + shape(p.value()));
  for (const auto& b : m->named_buffers())
    lines.push_back("buffer " + b.key() + " " + shape(b.value()));
  return lines;
}

// Every BatchNorm's state away from its initial values, so eval-mode logits depend on all of it.
void randomize_norms(ResNet& m) {
  torch::NoGradGuard no_grad;
  for (auto& p : m->named_parameters())
    if (p.value().dim() == 1 && p.key() != "fc.bias") p.value().uniform_(0.5, 1.5);
  for (auto& b : m->named_buffers()) {
    const auto& name = b.key();
    if (name.size() >= 12 && name.compare(name.size() - 12, 12, "running_mean") == 0)
      b.value().uniform_(-0.2, 0.2);
    else if (name.size() >= 11 && name.compare(name.size() - 11, 11, "running_var") == 0)
      b.value().uniform_(0.5, 2.0);
    else
      b.value().fill_(3);  // num_batches_tracked
  }
}

TEST(ResNet, OutputShapesAndTorchvisionParameterCounts) {
  // torchvision's published parameter counts (1000 classes).
  const std::vector<std::pair<std::string, int64_t>> published{
      {"resnet18", 11689512},         {"resnet34", 21797672},         {"resnet50", 25557032},
      {"resnet101", 44549160},        {"resnet152", 60192808},        {"resnext50_32x4d", 25028904},
      {"resnext101_32x8d", 88791336}, {"resnext101_64x4d", 83455272}, {"wide_resnet50_2", 68883240},
      {"wide_resnet101_2", 126886696}};
  EXPECT_EQ(resnet_names().size(), published.size());
  for (const auto& [arch, params] : published) {
    auto m = make(arch);
    EXPECT_EQ(count(m), params) << arch;
    EXPECT_EQ(m->forward(torch::randn({2, 3, kSize, kSize})).sizes(),
              (std::vector<int64_t>{2, 1000}));
  }
  ResNetOptions o;
  o.arch = "resnet18";
  o.classes = 10;
  o.in_channels = 1;
  ResNet gray(o);
  EXPECT_EQ(gray->forward(torch::randn({3, 1, 32, 32})).sizes(), (std::vector<int64_t>{3, 10}));
}

TEST(ResNet, StateNamesShapesAndOrderAreTorchvisions) {
  REQUIRE_TORCHVISION();
  const auto archs = resnet_names();
  std::string names;
  for (const auto& arch : archs) names += " " + arch;
  const auto theirs = reference("state", names);
  std::vector<std::string> ours;
  for (const auto& arch : archs) {
    const auto l = listing(make(arch), arch);
    ours.insert(ours.end(), l.begin(), l.end());
  }
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) ASSERT_EQ(ours[i], theirs[i]) << "line " << i;
  // Spot checks of the names the task names.
  auto m = make("resnet50");
  const auto params = m->named_parameters();
  const auto buffers = m->named_buffers();
  for (const char* name :
       {"conv1.weight", "bn1.weight", "layer1.0.conv1.weight", "layer4.0.downsample.0.weight",
        "layer4.0.downsample.1.bias", "layer3.5.bn3.weight", "fc.weight", "fc.bias"})
    EXPECT_TRUE(params.contains(name)) << name;
  for (const char* name : {"bn1.running_mean", "layer1.0.bn1.running_var",
                           "layer2.0.downsample.1.num_batches_tracked"})
    EXPECT_TRUE(buffers.contains(name)) << name;
}

TEST(ResNet, SavedWeightsLoadIntoTorchvisionWithTheSameLogits) {
  REQUIRE_TORCHVISION();
  test::TempDir dir;
  const int classes = 10;
  // Each kind: BasicBlock (18, 34), Bottleneck (50), deeper (101), grouped (ResNeXt), wider.
  const std::vector<std::string> archs{"resnet18",  "resnet34",        "resnet50",
                                       "resnet101", "resnext50_32x4d", "wide_resnet50_2"};
  std::string jobs;
  std::vector<torch::Tensor> ours;
  for (const auto& arch : archs) {
    auto m = make(arch, classes);
    randomize_norms(m);
    const auto path = dir / (arch + ".pt");
    train::save_state_dict(*m, path);
    ours.push_back(eval_logits(m));
    jobs += " " + arch + ":'" + path.string() + "'";
    // And back into a fresh faster model: the same logits, bit for bit.
    auto back = make(arch, classes);
    train::load_state_dict(*back, path);
    EXPECT_TRUE(torch::equal(eval_logits(back), ours.back())) << arch;
  }
  const auto theirs =
      reference("logits", std::to_string(classes) + " " + std::to_string(kSize) + jobs);
  ASSERT_EQ(theirs.size(), archs.size());
  for (size_t i = 0; i < archs.size(); ++i) {
    const auto t = parse_logits(theirs[i]);
    ASSERT_EQ(t.numel(), 2 * classes);
    const double d = relative_difference(ours[i], t);
    std::cout << "[ measured ] " << archs[i]
              << ": max |faster - torchvision| / max |torchvision| = " << d << "\n";
    EXPECT_LT(d, kTolerance) << archs[i];
  }
}

TEST(ResNet, TorchSaveStateDictLoadsWithTheSameLogits) {
  REQUIRE_TORCHVISION();
  test::TempDir dir;
  const auto path = dir / "torchvision_resnet18.pt";
  const int classes = 7;
  const auto theirs = reference("save", "resnet18 " + std::to_string(classes) + " " +
                                            std::to_string(kSize) + " '" + path.string() + "'");
  ASSERT_EQ(theirs.size(), 1u);
  auto m = make("resnet18", classes);
  train::load_state_dict(*m, path);
  EXPECT_EQ(m->named_buffers()["bn1.num_batches_tracked"].item<int64_t>(), 3);
  const double d = relative_difference(eval_logits(m), parse_logits(theirs[0]));
  std::cout << "[ measured ] max |faster - torchvision| / max |torchvision| = " << d << "\n";
  EXPECT_LT(d, kTolerance);
}

TEST(ResNet, InitialisationIsTorchvisions) {
  auto m = make("resnet18");
  const auto params = m->named_parameters();
  // kaiming_normal_(mode='fan_out', nonlinearity='relu'): std = sqrt(2 / (out * k * k)).
  const auto w = params["conv1.weight"];
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0 / (64 * 7 * 7)),
              0.05 * std::sqrt(2.0 / (64 * 7 * 7)));
  const auto w2 = params["layer4.1.conv2.weight"];
  EXPECT_NEAR(w2.std().item<double>(), std::sqrt(2.0 / (512 * 9)),
              0.02 * std::sqrt(2.0 / (512 * 9)));
  EXPECT_TRUE(torch::equal(params["layer2.0.bn2.weight"], torch::ones({128})));
  EXPECT_TRUE(torch::equal(params["layer2.0.bn2.bias"], torch::zeros({128})));
  // Linear keeps LibTorch's default (PyTorch's): U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias.
  EXPECT_LE(params["fc.bias"].abs().max().item<double>(), 1 / std::sqrt(512.0));
}

TEST(ResNet, ZeroInitResidualZeroesTheLastNormOfEachBlock) {
  for (const std::string arch : {"resnet18", "resnet50"}) {
    ResNetOptions o;
    o.arch = arch;
    o.zero_init_residual = true;
    ResNet m(o);
    const std::string last = arch == "resnet50" ? ".bn3.weight" : ".bn2.weight";
    int zeroed = 0;
    for (const auto& p : m->named_parameters()) {
      const auto& name = p.key();
      const bool is_last = name.size() > last.size() &&
                           name.compare(name.size() - last.size(), last.size(), last) == 0;
      if (is_last) {
        EXPECT_EQ(p.value().abs().sum().item<double>(), 0.0) << name;
        ++zeroed;
      } else if (p.value().dim() == 1 && name != "fc.bias") {  // every other norm: weight 1, bias 0
        const bool weight = name.size() > 6 && name.compare(name.size() - 6, 6, "weight") == 0;
        EXPECT_TRUE(torch::equal(p.value(), torch::full_like(p.value(), weight ? 1 : 0))) << name;
      }
    }
    EXPECT_EQ(zeroed, arch == "resnet18" ? 8 : 16) << "one per block";
  }
}

TEST(ResNet, SyncBatchNormHasBatchNormNames) {
  ResNetOptions o;
  o.arch = "resnet18";
  auto batch = ResNet(o);
  o.norm = Norm::kSync;
  o.sync_all_reduce = [](torch::Tensor&) {};  // one rank
  auto sync = ResNet(o);
  EXPECT_EQ(listing(sync, "resnet18"), listing(batch, "resnet18"));
  // One rank: the same function as BatchNorm2d in training mode too.  In double precision, as
  // layer4's norms see only 2x2x2 values per channel here and amplify float32 rounding.
  {
    torch::NoGradGuard no_grad;
    for (auto& p : sync->named_parameters()) p.value().copy_(batch->named_parameters()[p.key()]);
  }
  sync->to(torch::kDouble);
  batch->to(torch::kDouble);
  torch::manual_seed(3);
  const auto x = torch::randn({2, 3, kSize, kSize}, torch::kDouble);
  const auto a = sync->forward(x), b = batch->forward(x);
  EXPECT_LT(relative_difference(a, b), 1e-10);
  const auto batch_buffers = batch->named_buffers();
  for (const auto& b : sync->named_buffers())
    EXPECT_TRUE(torch::allclose(b.value(), batch_buffers[b.key()], 1e-10, 1e-12)) << b.key();
}

TEST(ResNet, CloneIsAClassifierWithTheSameWeights) {
  auto m = make("resnet18", 10);
  randomize_norms(m);
  const auto copy = m->clone();
  auto& c = classifier_of(*copy);
  copy->eval();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(c.forward(fixed_input()), eval_logits(m)));
  EXPECT_NE(copy->named_parameters()["conv1.weight"].data_ptr(),
            m->named_parameters()["conv1.weight"].data_ptr());
  const Model model(m.ptr(), "resnet18");
  EXPECT_TRUE(torch::equal(model.forward(fixed_input()), eval_logits(m)));
}

// What `faster eval --weights` and a resume read from a state_dict's shapes alone: every
// architecture back by its name (the depth from the layers' lengths, ResNeXt's groups and the
// width from the first 3x3), the classes and input channels too.
TEST(ResNet, ArchitectureIsInferredFromTheStateShapes) {
  for (const auto& arch : resnet_names()) {
    ResNetOptions o;
    o.arch = arch, o.classes = 7, o.in_channels = 1;
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& p : ResNet(o)->named_parameters()) shapes[p.key()] = p.value().sizes().vec();
    const auto back = infer_model_options(shapes, "test");
    EXPECT_EQ(back.name, arch);
    EXPECT_EQ(back.classes, 7) << arch;
    EXPECT_EQ(back.in_channels, 1) << arch;
  }
  // A layer4 one block short is no architecture faster builds: named as such.
  ResNetOptions o;
  o.arch = "resnet50";
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& p : ResNet(o)->named_parameters())
    if (p.key().rfind("layer4.2.", 0) != 0) shapes[p.key()] = p.value().sizes().vec();
  try {
    infer_model_options(shapes, "w.pt");
    FAIL() << "a 3,4,6,2 ResNet inferred";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "w.pt: a ResNet of blocks 3,4,6,2 (Bottleneck, 1 groups of 64) is none of "
                 "torchvision's that faster builds");
  }
}

TEST(ResNet, BadOptionsAndNamesThrow) {
  const auto bad = [](auto change) {
    ResNetOptions o;
    change(o);
    EXPECT_THROW(ResNet{o}, Error);
  };
  bad([](ResNetOptions& o) { o.arch = "resnet20"; });
  bad([](ResNetOptions& o) { o.arch = ""; });
  bad([](ResNetOptions& o) { o.classes = 1; });
  bad([](ResNetOptions& o) { o.in_channels = 0; });
  bad([](ResNetOptions& o) { o.norm = Norm::kNone; });
  bad([](ResNetOptions& o) { o.norm = Norm::kSync; });  // without a distributed job
  try {
    ResNetOptions o;
    o.arch = "resnet20";
    ResNet m(o);
    FAIL() << "resnet20 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("unknown ResNet 'resnet20' (resnet18, resnet34, ", 0), 0u)
        << e.what();
  }
  EXPECT_EQ(resnet_names().front(), "resnet18");
  EXPECT_EQ(resnet_name_of(true, {3, 4, 23, 3}, 32, 8), "resnext101_32x8d");
  EXPECT_EQ(resnet_name_of(true, {3, 4, 6, 3}, 1, 128), "wide_resnet50_2");
  EXPECT_EQ(resnet_name_of(false, {2, 2, 2, 2}, 1, 64), "resnet18");
  EXPECT_EQ(resnet_name_of(true, {3, 4, 5, 3}, 1, 64), "");
}

}  // namespace
}  // namespace faster::models

// The grad scaler (torch.cuda.amp.GradScaler semantics), flat SGD (torch.optim.SGD semantics) and
// its Muon for convolution filters, each against a reference: LibTorch's own SGD, the scaler rules
// written out step by step, Muon's formulas per parameter in double precision.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "faster/train/amp.h"
#include "faster/train/sgd.h"
#include "faster/train/step_graph.h"
#include "support/test_support.h"

namespace faster::train {
namespace {

std::vector<torch::Tensor> make_params(int64_t seed) {
  torch::manual_seed(seed);
  // A conv weight in channels_last layout exercises the flat buffer's stride handling.
  auto w = torch::randn({4, 3, 3, 3}).contiguous(torch::MemoryFormat::ChannelsLast);
  return {w.requires_grad_(), torch::randn({7}).requires_grad_(),
          torch::randn({2, 5}).requires_grad_()};
}

void set_grads(std::vector<torch::Tensor>& ps, int64_t step) {
  for (size_t i = 0; i < ps.size(); ++i) {
    torch::manual_seed(100 * step + i);
    ps[i].mutable_grad() = torch::randn(ps[i].sizes()).contiguous(ps[i].suggest_memory_format());
  }
}

void expect_same_as_torch_sgd(SgdOptions o) {
  auto mine = make_params(1), ref = make_params(1);
  FlatSgd sgd(mine, o);
  torch::optim::SGD torch_sgd(ref, torch::optim::SGDOptions(o.lr)
                                       .momentum(o.momentum)
                                       .weight_decay(o.weight_decay)
                                       .nesterov(o.nesterov));
  for (int64_t step = 0; step < 5; ++step) {
    set_grads(mine, step);
    set_grads(ref, step);
    sgd.step(sgd.flat_grad());
    torch_sgd.step();
  }
  for (size_t i = 0; i < mine.size(); ++i)
    EXPECT_TRUE(torch::allclose(mine[i], ref[i], 1e-6, 1e-6)) << "param " << i;
}

TEST(FlatSgd, MatchesTorchSgdWithMomentum) {
  expect_same_as_torch_sgd({0.1, 0.9, 0.0, false});
}
TEST(FlatSgd, MatchesTorchSgdWithNesterovAndWeightDecay) {
  expect_same_as_torch_sgd({0.05, 0.8, 1e-2, true});
}
TEST(FlatSgd, MatchesTorchSgdWithoutMomentum) {
  expect_same_as_torch_sgd({0.2, 0.0, 0.0, false});
}

TEST(FlatSgd, KeepsShapesAndLayoutsAndSkipsOnFoundInf) {
  auto ps = make_params(2);
  const auto before = ps[0].clone();
  FlatSgd sgd(ps, {0.1, 0.9, 0.0, false});
  EXPECT_TRUE(ps[0].is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::equal(ps[0], before));
  set_grads(ps, 0);
  const auto snapshot = sgd.flat_params().clone();
  sgd.step(sgd.flat_grad(), torch::ones({}));  // skipped: nothing moves
  EXPECT_TRUE(torch::equal(sgd.flat_params(), snapshot));
  sgd.step(sgd.flat_grad(), torch::zeros({}));
  EXPECT_FALSE(torch::equal(sgd.flat_params(), snapshot));
  sgd.zero_grad();
  for (const auto& p : ps) EXPECT_FALSE(p.grad().defined());
}

// A checkpoint's flat momentum written by a run of the other memory format (a --fast GPU run
// resumed without it, say) lands on the same values per parameter, both ways.
TEST(FlatSgd, ReordersAFlatBufferOfTheOtherMemoryFormat) {
  auto last = make_params(3);  // the conv weight channels-last
  std::vector<torch::Tensor> plain;
  for (const auto& p : last) plain.push_back(p.detach().contiguous().clone().requires_grad_());
  const FlatSgd cl(last, {0.1, 0.9, 0.0, false}), nchw(plain, {0.1, 0.9, 0.0, false});
  ASSERT_FALSE(torch::equal(cl.flat_params(), nchw.flat_params()));  // the orders differ
  auto buffer = nchw.flat_params().clone();
  cl.reorder_from(buffer, /*channels_last=*/false);
  EXPECT_TRUE(torch::equal(buffer, cl.flat_params()));
  buffer = cl.flat_params().clone();
  nchw.reorder_from(buffer, /*channels_last=*/true);
  EXPECT_TRUE(torch::equal(buffer, nchw.flat_params()));
}

// Muon's Newton-Schulz iteration written out for one matrix of any orientation, in double.
torch::Tensor newton_schulz_reference(torch::Tensor g, int steps) {
  g = g.to(torch::kDouble);
  const bool tall = g.size(0) > g.size(1);
  auto x = tall ? g.t() : g;
  x = x / (x.norm() + 1e-7);
  for (int i = 0; i < steps; ++i) {
    const auto a = x.mm(x.t());
    const auto b = -4.7750 * a + 2.0315 * a.mm(a);
    x = 3.4445 * x + b.mm(x);
  }
  return tall ? x.t() : x;
}

TEST(NewtonSchulz, MatchesTheIterationPerMatrixAndIgnoresPadding) {
  torch::manual_seed(5);
  const auto g1 = torch::randn({3, 5}), g2 = torch::randn({2, 7});
  auto batch = torch::zeros({3, 3, 7});  // the third matrix all zero (a bank with no gradient)
  batch[0].narrow(0, 0, 3).narrow(1, 0, 5).copy_(g1);
  batch[1].narrow(0, 0, 2).copy_(g2);
  const auto x = newton_schulz(batch, 3);
  EXPECT_TRUE(torch::allclose(x[0].narrow(0, 0, 3).narrow(1, 0, 5).to(torch::kDouble),
                              newton_schulz_reference(g1, 3), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(x[1].narrow(0, 0, 2).to(torch::kDouble),
                              newton_schulz_reference(g2, 3), 1e-5, 1e-5));
  // Padding rows and columns stay exactly zero, and so does an all-zero matrix.
  EXPECT_EQ(x[0].narrow(1, 5, 2).abs().max().item<float>(), 0.0f);
  EXPECT_EQ(x[1].narrow(0, 2, 1).abs().max().item<float>(), 0.0f);
  EXPECT_EQ(x[2].abs().max().item<float>(), 0.0f);
}

// The iteration approximates the orthogonal factor U V^T of g = U S V^T (SVD), as Muon wants: its
// direction is close to it, and its singular values lie near 1 (measured for this matrix after 5
// steps: 0.68-1.13, the band the quintic's coefficients settle in, and a cosine of 0.982).
TEST(NewtonSchulz, ApproximatesTheOrthogonalFactor) {
  torch::manual_seed(6);
  const auto g = torch::randn({1, 16, 64}, torch::kDouble);
  const auto x = newton_schulz(g, 5)[0];
  const auto [u, sv, vh] = torch::linalg_svd(g[0], /*full_matrices=*/false);
  const auto polar = u.mm(vh);
  const double cosine = (x * polar).sum().item<double>() / (x.norm() * polar.norm()).item<double>();
  EXPECT_GT(cosine, 0.97);
  const auto s = torch::linalg_svdvals(x);
  EXPECT_GT(s.min().item<double>(), 0.6);
  EXPECT_LT(s.max().item<double>(), 1.2);
}

// Muon's step per parameter, in double: filters (4-d) by Muon, the rest by SGD, as SgdOptions
// describes them.
struct MuonReference {
  SgdOptions o;
  std::vector<torch::Tensor> params, bufs;
  void step(const std::vector<torch::Tensor>& grads, double factor) {
    for (size_t i = 0; i < params.size(); ++i) {
      auto& p = params[i];
      auto g = grads[i].to(torch::kDouble).contiguous();
      if (p.dim() == 4) {
        bufs[i] = o.muon_momentum * bufs[i] + g;
        const auto u = o.nesterov ? g + o.muon_momentum * bufs[i] : bufs[i];
        const int64_t out = p.size(0);
        p = p * (std::sqrt(double(out)) / p.norm().item<double>()) -
            o.muon_lr * factor *
                newton_schulz_reference(u.reshape({out, -1}), o.muon_steps).view(p.sizes());
      } else {
        if (p.dim() > 1 || o.decay_1d) g = g + o.weight_decay * p;
        bufs[i] = o.momentum * bufs[i] + g;
        p = p - o.lr * factor * (o.nesterov ? g + o.momentum * bufs[i] : bufs[i]);
      }
    }
  }
};

TEST(FlatSgd, MuonStepMatchesItsFormulaPerParameter) {
  torch::manual_seed(8);
  // Filter banks of three shapes: channels-last 4 x 27, a 1x1 bank taller than wide (16 x 2,
  // taken transposed), a contiguous 8 x 36; a bias and a linear layer take SGD.
  std::vector<torch::Tensor> mine = {
      torch::randn({4, 3, 3, 3}).contiguous(torch::MemoryFormat::ChannelsLast),
      torch::randn({16, 2, 1, 1}), torch::randn({8, 4, 3, 3}), torch::randn({7}),
      torch::randn({2, 5})};
  MuonReference ref;
  for (auto& p : mine) {
    ref.params.push_back(p.to(torch::kDouble).contiguous());
    ref.bufs.push_back(torch::zeros_like(ref.params.back()));
    p.requires_grad_();
  }
  SgdOptions o{0.1, 0.9, 1e-2, true, false};
  o.muon_lr = 0.05;
  o.muon_momentum = 0.6;
  ref.o = o;
  FlatSgd sgd(mine, o);
  // Largest first; the 16 x 2 bank would more than double its group's padding: a group of its own.
  EXPECT_EQ(sgd.muon_groups(), (std::vector<std::vector<int64_t>>{{2, 8, 36}, {1, 2, 16}}));
  for (int64_t step = 0; step < 4; ++step) {
    const double factor = step < 2 ? 1.0 : 0.5;  // the schedule halves the rate: Muon's too
    sgd.set_lr(o.lr * factor);
    set_grads(mine, step);
    std::vector<torch::Tensor> grads;
    for (const auto& p : mine) grads.push_back(p.grad());
    sgd.step(sgd.flat_grad());
    ref.step(grads, factor);
  }
  for (size_t i = 0; i < mine.size(); ++i) {
    EXPECT_TRUE(torch::allclose(mine[i].to(torch::kDouble), ref.params[i], 1e-5, 1e-5))
        << "param " << i << ": " << (mine[i].to(torch::kDouble) - ref.params[i]).abs().max();
    if (mine[i].dim() == 4)  // the bank's norm was reset before the last update
      EXPECT_NEAR(mine[i].norm().item<double>(), std::sqrt(double(mine[i].size(0))), 0.1);
  }
  EXPECT_TRUE(mine[0].is_contiguous(torch::MemoryFormat::ChannelsLast));
}

// A step with a non-finite gradient and found_inf set moves nothing, also where the gradient runs
// through a padded bank: the next finite step is the one a fresh optimizer takes.
TEST(FlatSgd, MuonSkipsAStepOnFoundInf) {
  torch::manual_seed(4);
  // Banks of 4 x 27 and 2 x 3: one group, the second padded.
  const std::vector<torch::Tensor> init = {torch::randn({4, 3, 3, 3}), torch::randn({2, 3, 1, 1}),
                                           torch::randn({5})};
  const auto copies = [&] {
    std::vector<torch::Tensor> ps;
    for (const auto& p : init) ps.push_back(p.clone().requires_grad_());
    return ps;
  };
  SgdOptions o{0.1, 0.9, 1e-3, true, false};
  o.muon_lr = 0.2;
  auto skipped = copies(), fresh = copies();
  FlatSgd a(skipped, o), b(fresh, o);
  ASSERT_EQ(a.muon_groups(), (std::vector<std::vector<int64_t>>{{2, 4, 27}}));
  const auto params = a.flat_params().clone(), momentum = a.momentum().clone();
  set_grads(skipped, 0);
  skipped[1].mutable_grad()[1][2][0][0] = std::numeric_limits<float>::infinity();
  a.step(a.flat_grad(), torch::ones({}));
  EXPECT_TRUE(torch::equal(a.flat_params(), params));
  EXPECT_TRUE(torch::equal(a.momentum(), momentum));
  set_grads(skipped, 1);
  set_grads(fresh, 1);
  a.step(a.flat_grad(), torch::zeros({}));
  b.step(b.flat_grad(), torch::zeros({}));
  EXPECT_TRUE(torch::equal(a.flat_params(), b.flat_params()));
  EXPECT_FALSE(torch::equal(a.flat_params(), params));
}

// On a GPU (run on the GPU machine; skipped elsewhere): Muon's step, its Newton-Schulz in bf16,
// moves the filters as the CPU's float step does up to bf16's rounding, the rest alike, and the
// step replays in a CUDA graph as it runs eagerly.
TEST(FlatSgd, MuonOnCudaMatchesTheCpuAndReplaysInAGraph) {
  SKIP_WITHOUT_GPU();
  torch::manual_seed(9);
  // Filter banks at Muon's norm (sqrt(out channels)) already, so that what moves them is the
  // orthogonalized update alone, not the norm's reset.
  const auto bank = [](int64_t out, int64_t in) {
    auto w = torch::randn({out, in, 3, 3});
    return (w * (std::sqrt(double(out)) / w.norm().item<double>()))
        .contiguous(torch::MemoryFormat::ChannelsLast);
  };
  const std::vector<torch::Tensor> init = {bank(64, 16), bank(128, 64), torch::randn({128}),
                                           torch::randn({10, 128})};
  // Copies even on the CPU (to() and contiguous() would return init itself there, and the step
  // would then move init with them).
  const auto copies = [&](torch::Device device) {
    std::vector<torch::Tensor> ps;
    for (const auto& p : init) ps.push_back(p.clone().to(device).requires_grad_());
    return ps;
  };
  SgdOptions o{0.1, 0.9, 5e-4, true, false};
  o.muon_lr = 0.24;
  auto cpu = copies(torch::kCPU), cuda = copies(torch::kCUDA);
  FlatSgd on_cpu(cpu, o), on_cuda(cuda, o);
  const auto before = on_cpu.flat_params().clone();
  set_grads(cpu, 0);
  for (size_t i = 0; i < cuda.size(); ++i) cuda[i].mutable_grad() = cpu[i].grad().to(torch::kCUDA);
  on_cpu.step(on_cpu.flat_grad());
  on_cuda.step(on_cuda.flat_grad());
  for (size_t i = 0; i < cpu.size(); ++i) {
    const auto moved = (cpu[i] - init[i]).to(torch::kDouble);
    const auto diff = (cuda[i].cpu() - cpu[i]).to(torch::kDouble).abs().max().item<double>();
    const double scale = moved.abs().max().item<double>();
    EXPECT_LT(diff / scale, i < 2 ? 3e-2 : 1e-5) << "param " << i;  // bf16: 3 %
  }
  EXPECT_FALSE(torch::equal(on_cpu.flat_params(), before));

  // Two twins on the GPU: one steps eagerly, the other replays a captured step.
  auto eager = copies(torch::kCUDA), graphed = copies(torch::kCUDA);
  FlatSgd a(eager, o), b(graphed, o);
  std::vector<torch::Tensor> grads;
  for (const auto& p : init) grads.push_back(torch::randn(p.sizes()).to(torch::kCUDA));
  for (size_t i = 0; i < grads.size(); ++i) {
    eager[i].mutable_grad() = grads[i].contiguous(init[i].suggest_memory_format());
    graphed[i].mutable_grad() = grads[i].contiguous(init[i].suggest_memory_format());
  }
  auto flat = b.flat_grad();
  // The capture's stream from here: the eager steps settle cuBLAS's workspace on it before a
  // capture, as the trainer's warm-up steps do.
  SideStreamScope side(torch::kCUDA);
  a.step(a.flat_grad());
  b.step(flat);
  StepGraph graph;
  graph.capture([&] { b.step(flat); });
  for (int i = 0; i < 2; ++i) {
    a.step(a.flat_grad());
    graph.replay();
  }
  torch::cuda::synchronize();
  EXPECT_TRUE(torch::allclose(a.flat_params(), b.flat_params(), 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(a.momentum(), b.momentum(), 1e-6, 1e-6));
}

TEST(GradScaler, InfGradientSkipsStepAndHalvesScale) {
  auto ps = make_params(3);
  FlatSgd sgd(ps, {0.1, 0.9, 0.0, false});
  GradScaler scaler(torch::kCPU, {1024.0, 2.0, 0.5, 3});
  set_grads(ps, 0);
  ps[1].mutable_grad()[3] = std::numeric_limits<float>::infinity();
  const auto snapshot = sgd.flat_params().clone();
  auto g = sgd.flat_grad();
  auto found = scaler.unscale_(g);
  EXPECT_EQ(found.item<float>(), 1.0f);
  sgd.step(g, found);
  scaler.update(found);
  EXPECT_TRUE(torch::equal(sgd.flat_params(), snapshot));
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 512.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  // NaN is treated the same way.
  set_grads(ps, 1);
  ps[2].mutable_grad()[0][0] = std::numeric_limits<float>::quiet_NaN();
  g = sgd.flat_grad();
  found = scaler.unscale_(g);
  scaler.update(found);
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 256.0);
}

TEST(GradScaler, FiniteStepsUnscaleAndGrowAfterInterval) {
  GradScaler scaler(torch::kCPU, {8.0, 2.0, 0.5, 3});
  auto loss = torch::tensor(1.5f);
  EXPECT_FLOAT_EQ(scaler.scale(loss).item<float>(), 12.0f);
  std::vector<double> scales;
  for (int step = 0; step < 7; ++step) {
    auto g = torch::full({4}, 16.0f);
    auto found = scaler.unscale_(g);
    EXPECT_EQ(found.item<float>(), 0.0f);
    EXPECT_FLOAT_EQ(g[0].item<float>(), 16.0f / float(scaler.current_scale()));
    scaler.update(found);
    scales.push_back(scaler.current_scale());
  }
  // Grows on the 3rd and 6th finite step in a row, as torch's _amp_update_scale_.
  EXPECT_EQ(scales, (std::vector<double>{8, 8, 16, 16, 16, 32, 32}));
  EXPECT_EQ(scaler.growth_tracker(), 1);
}

TEST(Autocast, Bf16ScopeOnCpuCastsMatmulsAndRestores) {
  auto a = torch::randn({8, 8}), b = torch::randn({8, 8});
  {
    AutocastScope scope(c10::DeviceType::CPU, Precision::kBFloat16);
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat);
  AutocastScope off(c10::DeviceType::CPU, Precision::kFloat32);
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat);
}

}  // namespace
}  // namespace faster::train

// The fused BatchNorm + activation kernels (CUDA builds, run on the GPU machine; skipped where no
// GPU is visible) against LibTorch's ops in double precision on the same (rounded) inputs: ReLU ->
// batch_norm (ThinNet's) and batch_norm -> gelu (SpeedNet's); forward output, running statistics,
// inference output and the gradients of the input, gamma and beta, for NCHW and NHWC,
// float/half/bfloat16, packed and unpacked channel counts; and a training step of each model fused
// against unfused.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "faster/models/norm_activation.h"
#include "faster/models/speednet.h"
#include "faster/models/thinnet.h"
#include "faster/train/step_graph.h"
#include "support/test_support.h"

namespace faster::models {
namespace {

enum class Act { kReluNorm, kNormGelu };

struct Case {
  int64_t n, c, h, w;
  bool channels_last;
  torch::ScalarType type;
  Act act = Act::kReluNorm;
};

bool applies(Act act, const torch::Tensor& y, const torch::nn::BatchNorm2dImpl& bn) {
  return act == Act::kReluNorm ? fused_relu_batch_norm_applies(y, bn)
                               : fused_batch_norm_gelu_applies(y, bn);
}

torch::Tensor fused(Act act, const torch::Tensor& y, torch::nn::BatchNorm2dImpl& bn) {
  return act == Act::kReluNorm ? fused_relu_batch_norm(y, bn) : fused_batch_norm_gelu(y, bn);
}

// LibTorch's unfused pair: batch_norm(relu(y)) or gelu(batch_norm(y)).
torch::Tensor reference(Act act, const torch::Tensor& y, const torch::Tensor& mean,
                        const torch::Tensor& var,
                        const torch::nn::functional::BatchNormFuncOptions& options) {
  namespace F = torch::nn::functional;
  if (act == Act::kReluNorm) return F::batch_norm(torch::relu(y), mean, var, options);
  return torch::gelu(F::batch_norm(y, mean, var, options));
}

// Largest |a - b| relative to the largest |b| (1 where b is all zero).
double relative_error(const torch::Tensor& a, const torch::Tensor& b) {
  const auto ad = a.to(torch::kCPU, torch::kDouble), bd = b.to(torch::kCPU, torch::kDouble);
  const double scale = std::max(bd.abs().max().item<double>(), 1e-12);
  return (ad - bd).abs().max().item<double>() / scale;
}

// Tolerance for values rounded to `type` once (output stored in that type): a few of its ulps.
double output_tolerance(torch::ScalarType type) {
  return type == torch::kFloat ? 1e-5 : type == torch::kHalf ? 2e-3 : 1.6e-2;
}

void check_case(const Case& k) {
  SCOPED_TRACE(::testing::Message()
               << (k.act == Act::kReluNorm ? "relu-bn" : "bn-gelu") << " n=" << k.n << " c=" << k.c
               << " " << k.h << "x" << k.w << (k.channels_last ? " NHWC " : " NCHW ") << k.type);
  torch::manual_seed(7);
  const auto format =
      k.channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
  // Conv-like input (mean slightly positive, so the ReLU keeps about 60 %), rounded to the type.
  auto y =
      (torch::randn({k.n, k.c, k.h, k.w}) + 0.3).to(k.type).to(torch::kCUDA).contiguous(format);
  auto dout = torch::randn({k.n, k.c, k.h, k.w}).to(k.type).to(torch::kCUDA).contiguous(format);

  torch::nn::BatchNorm2d bn(k.c);
  bn->to(torch::kCUDA);
  {
    torch::NoGradGuard no_grad;
    bn->weight.uniform_(0.5, 1.5);
    bn->bias.uniform_(-0.5, 0.5);
    bn->running_mean.uniform_(-0.2, 0.2);
    bn->running_var.uniform_(0.5, 2.0);
  }
  const auto rm0 = bn->running_mean.clone(), rv0 = bn->running_var.clone();

  // Reference: double precision on the CPU from the same rounded values.
  auto yr = y.to(torch::kCPU, torch::kDouble).contiguous().requires_grad_(true);
  auto gr = bn->weight.detach().to(torch::kCPU, torch::kDouble).requires_grad_(true);
  auto br = bn->bias.detach().to(torch::kCPU, torch::kDouble).requires_grad_(true);
  auto rmr = rm0.to(torch::kCPU, torch::kDouble), rvr = rv0.to(torch::kCPU, torch::kDouble);
  namespace F = torch::nn::functional;
  auto ref = reference(
      k.act, yr, rmr, rvr,
      F::BatchNormFuncOptions().weight(gr).bias(br).training(true).momentum(0.1).eps(1e-5));
  ref.backward(dout.to(torch::kCPU, torch::kDouble));

  bn->train();
  ASSERT_TRUE(applies(k.act, y, *bn));
  auto yf = y.detach().clone().requires_grad_(true);
  auto out = fused(k.act, yf, *bn);
  EXPECT_EQ(out.scalar_type(), k.type);
  EXPECT_TRUE(out.is_contiguous(format));
  out.backward(dout);
  const double tol = output_tolerance(k.type);
  EXPECT_LT(relative_error(out, ref), tol) << "forward";
  EXPECT_LT(relative_error(bn->running_mean, rmr), 1e-5) << "running_mean";
  EXPECT_LT(relative_error(bn->running_var, rvr), 1e-5) << "running_var";
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_LT(relative_error(yf.grad(), yr.grad()), 2 * tol) << "dy";
  EXPECT_TRUE(yf.grad().is_contiguous(format));
  EXPECT_LT(relative_error(bn->weight.grad(), gr.grad()), 1e-4) << "dgamma";
  EXPECT_LT(relative_error(bn->bias.grad(), br.grad()), 1e-4) << "dbeta";
  // Where y <= 0 the ReLU passes no gradient.
  if (k.act == Act::kReluNorm) {
    EXPECT_EQ(yf.grad().masked_select(y <= 0).abs().max().item<double>(), 0.0);
  }

  // Inference with the updated running statistics.
  bn->eval();
  torch::NoGradGuard no_grad;
  ASSERT_TRUE(applies(k.act, y, *bn));
  auto inf = fused(k.act, y, *bn);
  auto inf_ref = reference(
      k.act, y.to(torch::kCPU, torch::kDouble), rmr, rvr,
      F::BatchNormFuncOptions().weight(gr.detach()).bias(br.detach()).training(false).eps(1e-5));
  EXPECT_LT(relative_error(inf, inf_ref), tol) << "inference";
}

TEST(FusedReluBatchNorm, MatchesReluThenBatchNormInDouble) {
  SKIP_WITHOUT_GPU();
  for (auto type : {torch::kFloat, torch::kHalf, torch::kBFloat16})
    for (bool cl : {false, true}) {
      check_case({16, 32, 26, 26, cl, type});  // ThinNet's first stage; 16-byte packs in NHWC
      check_case({64, 128, 6, 6, cl, type});   // its last stage
      check_case({5, 3, 7, 9, cl, type});      // channels not a multiple of a pack: one by one
    }
}

TEST(FusedBatchNormGelu, MatchesBatchNormThenGeluInDouble) {
  SKIP_WITHOUT_GPU();
  for (auto type : {torch::kFloat, torch::kHalf, torch::kBFloat16})
    for (bool cl : {false, true}) {
      check_case({64, 64, 14, 14, cl, type, Act::kNormGelu});  // SpeedNet's first stage, pooled
      check_case({64, 256, 3, 3, cl, type, Act::kNormGelu});   // its last
      check_case({5, 96, 7, 7, cl, type, Act::kNormGelu});     // speedrun95's first width
      check_case({5, 3, 7, 9, cl, type, Act::kNormGelu});      // one by one
    }
}

TEST(FusedReluBatchNorm, AppliesOnlyWhereItCan) {
  SKIP_WITHOUT_GPU();
  torch::nn::BatchNorm2d bn(8);
  bn->to(torch::kCUDA);
  const auto y = torch::randn({2, 8, 5, 5}, torch::kCUDA);
  EXPECT_TRUE(fused_relu_batch_norm_applies(y, *bn));
  EXPECT_FALSE(fused_relu_batch_norm_applies(y.cpu(), *bn));
  EXPECT_FALSE(fused_relu_batch_norm_applies(y.to(torch::kDouble), *bn));
  EXPECT_FALSE(fused_relu_batch_norm_applies(torch::randn({2, 8, 25}, torch::kCUDA), *bn));
  torch::nn::BatchNorm2d cumulative(torch::nn::BatchNorm2dOptions(8).momentum(std::nullopt));
  cumulative->to(torch::kCUDA);
  EXPECT_FALSE(fused_relu_batch_norm_applies(y, *cumulative));
  EXPECT_FALSE(fused_relu_batch_norm_applies(torch::randn({1, 8, 1, 1}, torch::kCUDA), *bn));
  // BatchNorm -> GELU goes by the same rules.
  EXPECT_TRUE(fused_batch_norm_gelu_applies(y, *bn));
  EXPECT_FALSE(fused_batch_norm_gelu_applies(y.cpu(), *bn));
  EXPECT_FALSE(fused_batch_norm_gelu_applies(y, *cumulative));
  bn->eval();  // inference with autograd on: LibTorch's ops keep the graph
  EXPECT_FALSE(fused_relu_batch_norm_applies(y.requires_grad_(true), *bn));
  EXPECT_FALSE(fused_batch_norm_gelu_applies(y, *bn));
}

// TF32 off for a scope: float convolutions and matmuls in full precision, so two runs that differ
// only in float rounding stay close (TF32's 10-bit inputs amplify 1e-7 differences to 1e-2).
struct FullFloatPrecision {
  bool cudnn = at::globalContext().allowTF32CuDNN(), cublas = at::globalContext().allowTF32CuBLAS();
  FullFloatPrecision() {
    at::globalContext().setAllowTF32CuDNN(false);
    at::globalContext().setAllowTF32CuBLAS(false);
  }
  ~FullFloatPrecision() {
    at::globalContext().setAllowTF32CuDNN(cudnn);
    at::globalContext().setAllowTF32CuBLAS(cublas);
  }
};

// A whole training step in float gives the same loss and weight gradients fused and unfused (the
// fused path is wired into the model and its backward pass), and the running statistics move alike.
template <typename Net, typename Options>
void check_step_matches_unfused(Options o, int64_t channels) {
  FullFloatPrecision full_float;
  torch::manual_seed(3);
  o.fused = true;
  Net fused(o);
  o.fused = false;
  Net plain(o);
  {
    torch::NoGradGuard no_grad;
    auto src = fused->parameters();
    auto dst = plain->parameters();
    for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
  }
  fused->to(torch::kCUDA);
  plain->to(torch::kCUDA);
  const auto x = torch::rand({64, channels, 28, 28}, torch::kCUDA);
  const auto label =
      torch::randint(0, 10, {64}, torch::TensorOptions(torch::kLong).device(torch::kCUDA));
  const torch::Tensor lf = torch::nn::functional::cross_entropy(fused->forward(x), label);
  const torch::Tensor lp = torch::nn::functional::cross_entropy(plain->forward(x), label);
  lf.backward();
  lp.backward();
  EXPECT_NEAR(lf.item<double>(), lp.item<double>(), 1e-4);
  auto pf = fused->parameters(), pp = plain->parameters();
  for (size_t i = 0; i < pf.size(); ++i)
    EXPECT_LT(relative_error(pf[i].grad(), pp[i].grad()), 1e-3) << "parameter " << i;
  auto bf = fused->buffers(), bp = plain->buffers();
  for (size_t i = 0; i < bf.size(); ++i)
    EXPECT_LT(relative_error(bf[i], bp[i]), 1e-4) << "buffer " << i;
}

TEST(FusedReluBatchNorm, ThinNetStepMatchesUnfused) {
  SKIP_WITHOUT_GPU();
  ThinNetOptions o;
  o.filters = {16, 32, 64};
  o.blocks = {1, 1, 1};
  check_step_matches_unfused<ThinNet>(o, 1);
}

TEST(FusedBatchNormGelu, SpeedNetStepMatchesUnfused) {
  SKIP_WITHOUT_GPU();
  SpeedNetOptions o;
  o.filters = {16, 32, 64};
  check_step_matches_unfused<SpeedNet>(o, 1);
}

// As the speedrun runs it (bf16, channels-last, captured in a CUDA graph): the fused forward and
// backward replay what they compute eagerly, bit for bit (the kernels sum without atomics), the
// gradients and running statistics included, for each new input copied into the graph's.
TEST(FusedBatchNormGelu, ReplaysInACudaGraphAsItRunsEagerly) {
  SKIP_WITHOUT_GPU();
  torch::manual_seed(5);
  const auto input = [] {
    return torch::randn({64, 64, 14, 14})
        .to(torch::kBFloat16)
        .to(torch::kCUDA)
        .contiguous(torch::MemoryFormat::ChannelsLast);
  };
  const auto first = input(), second = input(), dout = input();
  torch::nn::BatchNorm2d eager_bn(64), graphed_bn(64);
  eager_bn->to(torch::kCUDA);
  graphed_bn->to(torch::kCUDA);
  auto ye = first.clone().requires_grad_(true), yg = first.clone().requires_grad_(true);
  const auto step = [&](torch::nn::BatchNorm2d& bn, torch::Tensor& y) {
    for (auto* t : {&y, &bn->weight, &bn->bias})
      if (t->grad().defined()) t->mutable_grad().zero_();
    auto out = fused_batch_norm_gelu(y, *bn);
    out.backward(dout);
    return out;
  };
  train::SideStreamScope side(torch::kCUDA);  // the capture's stream, the warm-up's too
  for (int i = 0; i < 3; ++i) {
    step(eager_bn, ye);
    step(graphed_bn, yg);
  }
  torch::Tensor out_graphed;
  train::StepGraph graph;
  graph.capture([&] { out_graphed = step(graphed_bn, yg); });
  for (const auto& next : {second, first}) {
    {
      torch::NoGradGuard no_grad;
      ye.copy_(next);
      yg.copy_(next);
    }
    const auto out_eager = step(eager_bn, ye);
    graph.replay();
    torch::cuda::synchronize();
    EXPECT_TRUE(torch::equal(out_eager, out_graphed));
    EXPECT_TRUE(torch::equal(ye.grad(), yg.grad()));
    EXPECT_TRUE(torch::equal(eager_bn->weight.grad(), graphed_bn->weight.grad()));
    EXPECT_TRUE(torch::equal(eager_bn->bias.grad(), graphed_bn->bias.grad()));
    EXPECT_TRUE(torch::equal(eager_bn->running_mean, graphed_bn->running_mean));
    EXPECT_TRUE(torch::equal(eager_bn->running_var, graphed_bn->running_var));
  }
  EXPECT_FALSE(torch::equal(eager_bn->running_mean, torch::zeros_like(eager_bn->running_mean)));
}

}  // namespace
}  // namespace faster::models

// cuDNN's fused BatchNorm -> (+ residual) -> ReLU (CUDA builds, run on the GPU machine; skipped
// where no GPU is visible) against relu(batch_norm(x) + z) in double precision on the CPU from the
// same fp16 (or bf16) inputs: output, running statistics and the gradients of x, z, weight and
// bias; and a whole ResNet-18 training step fused against unfused.  bf16 runs where the process's
// cuDNN has the fused ops for it (skipped otherwise); its tolerances are fp16's scaled by the
// ratio of their roundings (2^-8 against 2^-11: 8x) where the data's rounding dominates.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <string>

#include "faster/models/batchnorm_relu.h"
#include "faster/models/resnet.h"
#include "faster/train/amp.h"
#include "support/test_support.h"

namespace faster::models {
namespace {

// FASTER_RESNET_LEVERS set to `levers` while it lives (models/resnet.h), then as it was.
class Levers {
 public:
  explicit Levers(const char* levers) {
    const char* was = std::getenv(kName);
    if (was) was_ = was;
    had_ = was != nullptr;
    ::setenv(kName, levers, 1);
  }
  ~Levers() { had_ ? ::setenv(kName, was_.c_str(), 1) : ::unsetenv(kName); }

 private:
  static constexpr const char* kName = "FASTER_RESNET_LEVERS";
  std::string was_;
  bool had_ = false;
};

// Largest |a - b| relative to the largest |b|.
double relative_error(const torch::Tensor& a, const torch::Tensor& b) {
  const auto ad = a.to(torch::kCPU, torch::kDouble), bd = b.to(torch::kCPU, torch::kDouble);
  return (ad - bd).abs().max().item<double>() / std::max(bd.abs().max().item<double>(), 1e-12);
}

void check_case(int64_t n, int64_t c, int64_t hw, bool residual,
                torch::ScalarType type = torch::kHalf) {
  SCOPED_TRACE(::testing::Message() << n << "x" << c << "x" << hw << "x" << hw
                                    << (residual ? " with residual " : " ") << type);
  torch::manual_seed(3);
  const auto cl = torch::MemoryFormat::ChannelsLast;
  const auto half = [&](double shift) {
    return (torch::randn({n, c, hw, hw}) + shift).to(type).to(torch::kCUDA).contiguous(cl);
  };
  const double k = type == torch::kBFloat16 ? 8 : 1;  // the rounding's ratio
  auto x = half(0.2).requires_grad_(true);
  auto z = residual ? half(0.0).requires_grad_(true) : torch::Tensor();
  const auto dout = half(0.0);
  torch::nn::BatchNorm2d bn(c);
  bn->to(torch::kCUDA);
  {
    torch::NoGradGuard no_grad;
    bn->weight.uniform_(0.5, 1.5);
    bn->bias.uniform_(-0.5, 0.5);
  }
  const auto rm0 = bn->running_mean.clone(), rv0 = bn->running_var.clone();
  ASSERT_TRUE(fused_batch_norm_relu_applies(x, *bn, z));
  auto y = fused_batch_norm_relu(x, *bn, z);
  y.backward(dout);

  // Reference: double precision on the CPU from the same rounded values.
  const auto cpu = [](const torch::Tensor& t) {
    return t.detach().to(torch::kCPU, torch::kDouble).contiguous().requires_grad_(true);
  };
  auto xr = cpu(x), zr = residual ? cpu(z) : torch::Tensor(), gr = cpu(bn->weight),
       br = cpu(bn->bias);
  auto rmr = rm0.to(torch::kCPU, torch::kDouble), rvr = rv0.to(torch::kCPU, torch::kDouble);
  namespace F = torch::nn::functional;
  auto ref = F::batch_norm(
      xr, rmr, rvr,
      F::BatchNormFuncOptions().weight(gr).bias(br).training(true).momentum(0.1).eps(1e-5));
  if (residual) ref = ref + zr;
  ref = ref.relu();
  ref.backward(dout.to(torch::kCPU, torch::kDouble));

  // fp16 output: a few of its ulps; statistics in float; gradients through fp16 data.
  EXPECT_LT(relative_error(y, ref), k * 2e-3);
  EXPECT_LT(relative_error(bn->running_mean, rmr), 1e-4);
  EXPECT_LT(relative_error(bn->running_var, rvr), 1e-4);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_LT(relative_error(x.grad(), xr.grad()), k * 1e-2);
  if (residual) EXPECT_LT(relative_error(z.grad(), zr.grad()), k * 2e-3);
  EXPECT_LT(relative_error(bn->weight.grad(), gr.grad()), k * 1e-2);
  EXPECT_LT(relative_error(bn->bias.grad(), br.grad()), k * 1e-2);
}

// Whether the fused op takes bf16 here (this cuDNN runs it).
bool bf16_applies() {
  torch::nn::BatchNorm2d bn(8);
  bn->to(torch::kCUDA);
  const auto x = torch::randn({2, 8, 5, 5}, torch::kCUDA)
                     .to(torch::kBFloat16)
                     .contiguous(torch::MemoryFormat::ChannelsLast);
  return fused_batch_norm_relu_applies(x, *bn);
}

TEST(FusedBatchNormRelu, MatchesBatchNormAddReluInDouble) {
  SKIP_WITHOUT_GPU();
  check_case(8, 64, 14, false);
  check_case(8, 64, 14, true);
  check_case(4, 256, 7, true);
  check_case(2, 2048, 7, true);
}

TEST(FusedBatchNormRelu, MatchesBatchNormAddReluInDoubleFromBf16) {
  SKIP_WITHOUT_GPU();
  if (!bf16_applies()) GTEST_SKIP() << "this cuDNN has no fused batch norm for bf16";
  check_case(8, 64, 14, false, torch::kBFloat16);
  check_case(8, 64, 14, true, torch::kBFloat16);
  check_case(4, 256, 7, true, torch::kBFloat16);
  check_case(2, 2048, 7, true, torch::kBFloat16);
}

TEST(FusedBatchNormRelu, AppliesOnlyWhereItCan) {
  SKIP_WITHOUT_GPU();
  torch::nn::BatchNorm2d bn(8);
  bn->to(torch::kCUDA);
  const auto cl = torch::MemoryFormat::ChannelsLast;
  const auto x = torch::randn({2, 8, 5, 5}, torch::kCUDA).to(torch::kHalf).contiguous(cl);
  EXPECT_TRUE(fused_batch_norm_relu_applies(x, *bn));
  EXPECT_FALSE(fused_batch_norm_relu_applies(x.contiguous(), *bn));       // NCHW
  EXPECT_FALSE(fused_batch_norm_relu_applies(x.to(torch::kFloat), *bn));  // not fp16
  EXPECT_FALSE(fused_batch_norm_relu_applies(x, *bn, x.contiguous()));    // NCHW residual
  torch::nn::BatchNorm2d odd(6);
  odd->to(torch::kCUDA);
  EXPECT_FALSE(fused_batch_norm_relu_applies(x.narrow(1, 0, 6).contiguous(cl), *odd));
  bn->eval();
  EXPECT_FALSE(fused_batch_norm_relu_applies(x, *bn));
}

// A whole ResNet-18 step (fp16 autocast, channels last) from the same weights and batch: the fused
// model is as close to the float32 step as the unfused fp16 model is.  Through 18 layers of fp16
// the two fp16 models differ from each other by about 10 % in some gradients (they round at other
// points: the fused kernel rounds once after BatchNorm, add and ReLU), so each is measured against
// float32: over all gradients together (L2) the fused one's error may be at most 1.5x the
// unfused one's (+1e-3); per parameter (largest difference) 3x (+0.05), as single gradients scatter
// more (on an H200, 2026-12-03, three of 62 were 1.6-1.9x the unfused error, 0.19-0.31 against
// 0.11-0.17).  A wrong fused kernel (a dropped residual, a misplaced ReLU) errs by about 100 %.
void check_resnet_step(train::Precision precision, const std::string& arch = "resnet18") {
  SCOPED_TRACE(arch);
  ResNetOptions o;
  o.arch = arch, o.classes = 10, o.fused = true;
  torch::manual_seed(1);
  ResNet fused(o);
  o.fused = false;
  ResNet plain(o), reference(o);
  {
    torch::NoGradGuard no_grad;
    auto a = fused->parameters();
    for (auto* m : {&plain, &reference}) {
      auto b = (*m)->parameters();
      for (size_t i = 0; i < a.size(); ++i) b[i].copy_(a[i]);
    }
  }
  const auto cl = torch::MemoryFormat::ChannelsLast;
  for (auto* m : {&fused, &plain, &reference}) {
    (*m)->to(torch::kCUDA);
    for (auto& p : (*m)->parameters())
      if (p.dim() == 4) p.set_data(p.data().contiguous(cl));
  }
  const auto x = torch::randn({16, 3, 64, 64}, torch::kCUDA).contiguous(cl);
  const auto y =
      torch::randint(0, 10, {16}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kLong));
  // The reference in true float32: no TF32 convolutions.
  const bool tf32 = at::globalContext().allowTF32CuDNN();
  at::globalContext().setAllowTF32CuDNN(false);
  std::vector<double> losses;
  for (auto* m : {&fused, &plain, &reference}) {
    torch::Tensor loss;
    {
      train::AutocastScope autocast(c10::DeviceType::CUDA,
                                    m == &reference ? train::Precision::kFloat32 : precision);
      loss = torch::nn::functional::cross_entropy((*m)->forward(x), y);
    }
    loss.backward();
    losses.push_back(loss.item<double>());
  }
  at::globalContext().setAllowTF32CuDNN(tf32);
  EXPECT_LT(std::abs(losses[0] - losses[2]), 1.5 * std::abs(losses[1] - losses[2]) + 2e-3);
  auto a = fused->named_parameters(), b = plain->named_parameters(),
       r = reference->named_parameters();
  std::vector<torch::Tensor> all_a, all_b, all_r;
  for (const auto& kv : a) {
    SCOPED_TRACE(kv.key());
    const auto ref = r[kv.key()].grad();
    EXPECT_LT(relative_error(kv.value().grad(), ref),
              3 * relative_error(b[kv.key()].grad(), ref) + 0.05);
    all_a.push_back(kv.value().grad().flatten().to(torch::kFloat));
    all_b.push_back(b[kv.key()].grad().flatten().to(torch::kFloat));
    all_r.push_back(ref.flatten().to(torch::kFloat));
  }
  const auto all_ref = torch::cat(all_r).to(torch::kDouble);
  const auto l2_error = [&](const std::vector<torch::Tensor>& g) {
    return (torch::cat(g).to(torch::kDouble) - all_ref).norm().item<double>() /
           all_ref.norm().item<double>();
  };
  EXPECT_LT(l2_error(all_a), 1.5 * l2_error(all_b) + 1e-3);
  auto ab = fused->named_buffers(), bb = plain->named_buffers(), rb = reference->named_buffers();
  for (const auto& kv : ab)
    if (kv.value().is_floating_point())
      EXPECT_LT(relative_error(kv.value(), rb[kv.key()]),
                1.5 * relative_error(bb[kv.key()], rb[kv.key()]) + 1e-3)
          << kv.key();
}

TEST(FusedBatchNormRelu, ResNetStepIsAsAccurateAsUnfused) {
  SKIP_WITHOUT_GPU();
  check_resnet_step(train::Precision::kFloat16);
}

// The stem padded to 4 channels (fused, fp16 or bf16 channels-last input on CUDA) against
// torchvision's 3-channel stem (unfused) from the same weights.  The stem alone: its output, and
// the weight's gradient for one upstream gradient, agree to the input type's rounding (the
// convolutions sum in float in other orders); a misplaced zero channel or a wrong stride errs by
// about 100 %.  The whole network in eval mode: the logits agree as closely.  (Its weight gradient
// through the whole network does not: a rounding difference at the stem moves the max-pool's
// choice in near ties and ReLU's at zero, which sends gradient elsewhere; 4.8 % in fp16 on an
// H100, where the stem alone is within its rounding.)
TEST(FusedBatchNormRelu, PaddedStemEqualsThreeChannels) {
  SKIP_WITHOUT_GPU();
  const Levers levers("stem");
  for (const auto type : {torch::kHalf, torch::kBFloat16}) {
    SCOPED_TRACE(::testing::Message() << type);
    ResNetOptions o;
    o.arch = "resnet18", o.classes = 10, o.fused = true;
    torch::manual_seed(2);
    ResNet padded(o);
    o.fused = false;
    ResNet plain(o);
    {
      torch::NoGradGuard no_grad;
      auto a = padded->parameters(), b = plain->parameters();
      for (size_t i = 0; i < a.size(); ++i) b[i].copy_(a[i]);
    }
    const auto cl = torch::MemoryFormat::ChannelsLast;
    const auto precision =
        type == torch::kHalf ? train::Precision::kFloat16 : train::Precision::kBFloat16;
    std::vector<torch::Tensor> stems, grads, logits;
    const auto x = torch::randn({8, 3, 64, 64}, torch::kCUDA).to(type).contiguous(cl);
    const auto upstream = torch::randn({8, 64, 32, 32}, torch::kCUDA).contiguous(cl);
    for (auto* m : {&padded, &plain}) {
      (*m)->to(torch::kCUDA);
      (*m)->eval();
      torch::Tensor stem, out;
      {
        train::AutocastScope autocast(c10::DeviceType::CUDA, precision);
        stem = (*m)->stem(x);
        torch::NoGradGuard no_grad;
        out = (*m)->forward(x);
      }
      (stem.to(torch::kFloat) * upstream).sum().backward();
      stems.push_back(stem.detach().to(torch::kFloat));
      grads.push_back((*m)->named_parameters()["conv1.weight"].grad());
      logits.push_back(out.to(torch::kFloat));
    }
    const double k = type == torch::kBFloat16 ? 8 : 1;
    EXPECT_LT(relative_error(stems[0], stems[1]), k * 2e-3);
    EXPECT_LT(relative_error(grads[0], grads[1]), k * 5e-3);
    EXPECT_LT(relative_error(logits[0], logits[1]), k * 5e-3);
  }
}

// bf16: the same bounds against the unfused bf16 step.
TEST(FusedBatchNormRelu, ResNetStepIsAsAccurateAsUnfusedInBf16) {
  SKIP_WITHOUT_GPU();
  if (!bf16_applies()) GTEST_SKIP() << "this cuDNN has no fused batch norm for bf16";
  const Levers levers("bf16");  // off by default until this test has passed on the GPU machine
  check_resnet_step(train::Precision::kBFloat16);
}

// The shortcut lever: each identity block's shortcut gradient added inside its first
// convolution's data-gradient pass.  The whole step, ResNet-18 (basic blocks: a 3x3 first
// convolution) and ResNet-50 (bottlenecks: 1x1), held to the fused step's bounds above.
TEST(FusedBatchNormRelu, ResNetStepWithTheShortcutInTheConvolutionIsAsAccurate) {
  SKIP_WITHOUT_GPU();
  for (const char* lever : {"shortcut", "shortcut_add"}) {
    SCOPED_TRACE(lever);
    const Levers levers((std::string("stem,pool,") + lever).c_str());
    check_resnet_step(train::Precision::kFloat16, "resnet18");
    check_resnet_step(train::Precision::kFloat16, "resnet50");
  }
}

// conv_and_shortcut (the sum by beta = 1 and in the epilogue) against LibTorch's convolution and
// autograd's sum of the two gradients, from the same fp16 (bf16) inputs on the GPU: the output,
// x's gradient (the convolution's data gradient plus the shortcut's) and the weight's, for
// ResNet's first-convolution shapes (1x1 narrowing, 3x3 with padding).  cuDNN adds in float before rounding once where LibTorch rounds
// the data gradient and then the sum: they may differ by about a rounding of the type (2^-11,
// 2^-8), allowed 4 of them relative to the largest value; a dropped shortcut gradient or a
// transposed filter errs by about 100 %.
TEST(ConvAndShortcut, GradientsAreLibTorchsConvolutionPlusTheShortcuts) {
  SKIP_WITHOUT_GPU();
  const auto cl = torch::MemoryFormat::ChannelsLast;
  struct Shape {
    int64_t in, out, k, pad;
  };
  for (const bool epilogue : {false, true})
    for (const auto type : {torch::kHalf, torch::kBFloat16})
      for (const auto& sh : {Shape{256, 64, 1, 0}, Shape{64, 64, 3, 1}}) {
        SCOPED_TRACE(::testing::Message() << (epilogue ? "epilogue " : "beta ") << type << " "
                                          << sh.in << ">" << sh.out << " " << sh.k << "x" << sh.k);
        torch::manual_seed(5);
        torch::nn::Conv2d conv(
            torch::nn::Conv2dOptions(sh.in, sh.out, sh.k).padding(sh.pad).bias(false));
        conv->to(torch::kCUDA);
        conv->weight.set_data(conv->weight.data().contiguous(cl));
        const auto x = torch::randn({8, sh.in, 14, 14}, torch::kCUDA).to(type).contiguous(cl);
        ASSERT_TRUE(conv_and_shortcut_applies(x, *conv));
        EXPECT_FALSE(conv_and_shortcut_applies(x.contiguous(), *conv));       // NCHW
        EXPECT_FALSE(conv_and_shortcut_applies(x.to(torch::kFloat), *conv));  // float
        const auto up_y = torch::randn({8, sh.out, 14, 14}, torch::kCUDA);
        const auto up_s = torch::randn({8, sh.in, 14, 14}, torch::kCUDA);
        std::vector<torch::Tensor> ys, dxs, dws;
        for (const bool ours : {true, false}) {
          const auto xi = x.detach().clone(cl).requires_grad_(true);
          conv->weight.mutable_grad() = torch::Tensor();
          torch::Tensor y, s;
          if (ours) {
            std::tie(y, s) = conv_and_shortcut(xi, *conv, epilogue);
          } else {
            y = torch::conv2d(xi, conv->weight.to(type), {}, 1, sh.pad);
            s = xi;
          }
          ((y.to(torch::kFloat) * up_y).sum() + (s.to(torch::kFloat) * up_s).sum()).backward();
          ys.push_back(y.detach());
          dxs.push_back(xi.grad());
          dws.push_back(conv->weight.grad().clone());
        }
        const double k = type == torch::kBFloat16 ? 8 : 1;
        EXPECT_LT(relative_error(ys[0], ys[1]), k * 2e-3);
        EXPECT_LT(relative_error(dxs[0], dxs[1]), k * 2e-3);
        EXPECT_LT(relative_error(dws[0], dws[1]), k * 2e-3);
        EXPECT_TRUE(dxs[0].is_contiguous(cl));
      }
}

}  // namespace
}  // namespace faster::models

// Random erasing, mixup and cutmix on the device, drawn on the host.
#include "faster/train/batch_augment.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "faster/data/augment/crop_params.h"

namespace faster::train {
namespace {

double uniform(std::mt19937_64& gen, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(gen);
}

// [lo, hi), as torch.randint(lo, hi).
int64_t randint(std::mt19937_64& gen, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi - 1)(gen);
}

// Beta(alpha, alpha) as torch._sample_dirichlet([alpha, alpha])[0]: two Gamma(alpha) draws.
double beta(std::mt19937_64& gen, double alpha) {
  std::gamma_distribution<double> gamma(alpha, 1.0);
  const double a = gamma(gen), b = gamma(gen);
  return a + b > 0 ? a / (a + b) : 0.5;
}

}  // namespace

EraseBox draw_erase(std::mt19937_64& gen, double p, int64_t h, int64_t w) {
  if (!(uniform(gen, 0, 1) < p)) return {};
  const double area = static_cast<double>(h * w);
  const double log_lo = std::log(0.3), log_hi = std::log(3.3);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double erase_area = area * uniform(gen, 0.02, 0.33);
    const double aspect = std::exp(uniform(gen, log_lo, log_hi));
    // Python's round(): half to even, as nearbyint in the default rounding mode.
    const auto eh = static_cast<int64_t>(std::nearbyint(std::sqrt(erase_area * aspect)));
    const auto ew = static_cast<int64_t>(std::nearbyint(std::sqrt(erase_area / aspect)));
    if (!(eh < h && ew < w)) continue;
    EraseBox b;
    b.top = randint(gen, 0, h - eh + 1);
    b.left = randint(gen, 0, w - ew + 1);
    b.h = eh, b.w = ew;
    return b;
  }
  return {};
}

MixDraw draw_mix(std::mt19937_64& gen, const BatchAugmentOptions& o, int64_t h, int64_t w) {
  MixDraw m;
  const bool both = o.mixup_alpha > 0 && o.cutmix_alpha > 0;
  m.cutmix = both ? randint(gen, 0, 2) == 1 : o.cutmix_alpha > 0;
  const double lam = beta(gen, m.cutmix ? o.cutmix_alpha : o.mixup_alpha);
  if (!m.cutmix) {
    m.keep = m.lam = lam;
    return m;
  }
  const int64_t cx = randint(gen, 0, w), cy = randint(gen, 0, h);
  const double r = 0.5 * std::sqrt(1.0 - lam);
  const auto half_w = static_cast<int64_t>(r * w), half_h = static_cast<int64_t>(r * h);
  m.left = std::max<int64_t>(cx - half_w, 0);
  m.top = std::max<int64_t>(cy - half_h, 0);
  m.right = std::min<int64_t>(cx + half_w, w);
  m.bottom = std::min<int64_t>(cy + half_h, h);
  m.keep = 1;
  m.lam = 1.0 - static_cast<double>((m.right - m.left) * (m.bottom - m.top)) / (w * h);
  return m;
}

BatchAugment::BatchAugment(const BatchAugmentOptions& o, uint64_t seed, int rank, int64_t max_batch,
                           torch::Device device)
    : o_(o), seed_(seed), rank_(rank) {
  boxes_ = torch::zeros({max_batch, 4}, torch::TensorOptions().dtype(torch::kLong).device(device));
  mix_ = torch::zeros({6}, torch::TensorOptions().dtype(torch::kFloat).device(device));
}

BatchDraws BatchAugment::draw(int64_t step, int64_t n, int64_t h, int64_t w) {
  TORCH_CHECK(n <= boxes_.size(0), "BatchAugment: a batch of ", n, " over ", boxes_.size(0));
  // Apart from the crops' streams (seed, epoch, index), which share the key's shape.
  constexpr uint64_t kStream = 0xD1B54A32D192ED03ull;
  std::mt19937_64 gen(data::SampleRng(seed_ ^ kStream, step, rank_).next_u64());
  BatchDraws drawn;
  if (o_.random_erase > 0) {
    auto boxes = torch::zeros({n, 4}, torch::kLong);
    auto* b = boxes.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      const auto e = drawn.erase.emplace_back(draw_erase(gen, o_.random_erase, h, w));
      b[4 * i] = e.top, b[4 * i + 1] = e.top + e.h, b[4 * i + 2] = e.left,
            b[4 * i + 3] = e.left + e.w;
    }
    // From pageable memory: staged before the call returns, so the host tensor may go.
    boxes_.narrow(0, 0, n).copy_(boxes, /*non_blocking=*/true);
  }
  if (o_.mixes()) {
    const auto m = drawn.mix = draw_mix(gen, o_, h, w);
    const auto mix = torch::tensor({static_cast<float>(m.keep), static_cast<float>(m.lam),
                                    static_cast<float>(m.top), static_cast<float>(m.bottom),
                                    static_cast<float>(m.left), static_cast<float>(m.right)});
    mix_.copy_(mix, /*non_blocking=*/true);
  }
  return drawn;
}

namespace {
// [1, 1, h, 1] row and [1, 1, 1, w] column indices.
std::pair<torch::Tensor, torch::Tensor> grid(const torch::Tensor& x, torch::ScalarType type) {
  const auto opt = torch::TensorOptions().dtype(type).device(x.device());
  return {torch::arange(x.size(2), opt).view({1, 1, -1, 1}),
          torch::arange(x.size(3), opt).view({1, 1, 1, -1})};
}
}  // namespace

torch::Tensor BatchAugment::images(const torch::Tensor& x) const {
  auto out = x;
  if (o_.random_erase > 0) {
    const auto [rows, cols] = grid(x, torch::kLong);
    const auto b = boxes_.narrow(0, 0, x.size(0)).view({-1, 4, 1, 1});
    const auto inside = rows.ge(b.select(1, 0).unsqueeze(1)) &
                        rows.lt(b.select(1, 1).unsqueeze(1)) &
                        cols.ge(b.select(1, 2).unsqueeze(1)) & cols.lt(b.select(1, 3).unsqueeze(1));
    out = out.masked_fill(inside, 0);
  }
  if (o_.mixes()) {
    const auto [rows, cols] = grid(x, torch::kFloat);
    const auto inside = rows.ge(mix_[2]) & rows.lt(mix_[3]) & cols.ge(mix_[4]) & cols.lt(mix_[5]);
    // Outside the box: image * keep + previous * (1 - keep); inside it: the previous image's.
    const auto keep = torch::where(inside, torch::zeros_like(mix_[0]), mix_[0]).to(out.dtype());
    const auto previous = out.roll(1, 0);
    out = out * keep + previous * (1 - keep);
    out = out.contiguous(x.suggest_memory_format());
  }
  return out;
}

torch::Tensor BatchAugment::targets(const torch::Tensor& y, int64_t classes) const {
  const auto one_hot = torch::one_hot(y, classes).to(torch::kFloat);
  const auto lam = mix_[1];
  return one_hot * lam + one_hot.roll(1, 0) * (1 - lam);
}

}  // namespace faster::train

// Flat SGD implementation.
#include "faster/train/sgd.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "faster/core/error.h"

namespace faster::train {
namespace {

// A tensor's elements in the order they sit in memory (a view when the tensor is dense).
torch::Tensor memory_order_flat(const torch::Tensor& t) {
  // Permute the dimensions by decreasing stride: a dense tensor then reads in memory order.
  std::vector<int64_t> dims(t.dim());
  std::iota(dims.begin(), dims.end(), 0);
  std::stable_sort(dims.begin(), dims.end(),
                   [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
  return t.permute(dims).reshape({-1});
}

torch::Tensor layout_like(const torch::Tensor& grad, const torch::Tensor& param) {
  // AccumulateGrad gives gradients their parameter's layout; copy only where one does not.
  if (grad.strides() == param.strides()) return grad;
  auto like = torch::empty_strided(param.sizes(), param.strides(), grad.options());
  like.copy_(grad);
  return like;
}

}  // namespace

torch::Tensor flat_grad_of(const torch::Tensor& param) {
  const auto& g = param.grad();
  return g.defined() ? memory_order_flat(layout_like(g, param)) : torch::Tensor();
}

double param_weight_decay(const ParamRole& role, int64_t dim, const SgdOptions& o) {
  // torchvision's precedence: the "bias" key first (0 where 1-d parameters take no decay), then
  // the norm layers', then the weight decay.
  if (role.bias && o.bias_weight_decay >= 0) return o.bias_weight_decay;
  if (role.bias && !o.decay_1d) return 0;
  if (role.norm && o.norm_weight_decay >= 0) return o.norm_weight_decay;
  return dim <= 1 && !o.decay_1d ? 0.0 : o.weight_decay;
}

std::vector<ParamRole> param_roles(
    const std::vector<std::pair<std::string, torch::Tensor>>& named) {
  std::map<std::string, int64_t> weight_dims;  // module prefix -> its weight's dimensions
  const auto split = [](const std::string& name) {
    const auto dot = name.rfind('.');
    return dot == std::string::npos ? std::pair<std::string, std::string>{"", name}
                                    : std::pair{name.substr(0, dot), name.substr(dot + 1)};
  };
  for (const auto& [name, t] : named) {
    const auto [module, leaf] = split(name);
    if (leaf == "weight") weight_dims[module] = t.dim();
  }
  std::vector<ParamRole> roles;
  for (const auto& [name, t] : named) {
    const auto [module, leaf] = split(name);
    const auto it = weight_dims.find(module);
    roles.push_back({it != weight_dims.end() ? it->second == 1 : t.dim() <= 1, leaf == "bias"});
  }
  return roles;
}

FlatSgd::FlatSgd(std::vector<torch::Tensor> params, SgdOptions options,
                 std::vector<ParamRole> roles)
    : params_(std::move(params)), options_(options) {
  FASTER_CHECK(!params_.empty(), "FlatSgd: no parameters");
  int64_t total = 0;
  for (const auto& p : params_) {
    FASTER_CHECK(p.scalar_type() == torch::kFloat && p.is_non_overlapping_and_dense(),
                 "FlatSgd: parameters must be dense float32 tensors");
    offsets_.push_back(total);
    total += p.numel();
  }
  storage_ = torch::zeros({total + 1}, params_[0].options());
  flat_ = storage_.narrow(0, 0, total);
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    // A view with the parameter's own strides over its slice of the flat buffer.
    auto view = param_view(flat_, i);
    view.copy_(p.detach());
    p.set_data(view);
  }
  momentum_ = torch::zeros_like(flat_);
  lr_ = torch::full({}, options_.lr, flat_.options());
  const auto banks = plan_muon();
  const auto slice = [&](torch::Tensor& t, size_t i) {
    return t.narrow(0, offsets_[i], params_[i].numel());
  };
  FASTER_CHECK(roles.empty() || roles.size() == params_.size(), "FlatSgd: ", roles.size(),
               " roles for ", params_.size(), " parameters");
  std::vector<double> decays(params_.size());
  for (size_t i = 0; i < params_.size(); ++i)
    decays[i] =
        param_weight_decay(roles.empty() ? ParamRole{params_[i].dim() <= 1, false} : roles[i],
                           params_[i].dim(), options_);
  for (size_t i : banks) decays[i] = 0;
  const bool uniform = std::all_of(decays.begin(), decays.end(),
                                   [&](double d) { return d == options_.weight_decay; });
  if (!uniform) {
    decay_ = torch::empty_like(flat_);
    for (size_t i = 0; i < params_.size(); ++i) slice(decay_, i).fill_(decays[i]);
  }
  if (!banks.empty()) {
    momentum_coef_ = torch::full_like(flat_, options_.momentum);
    for (size_t i : banks) slice(momentum_coef_, i).fill_(options_.muon_momentum);
    direction_ = torch::zeros_like(storage_);
  }
}

std::vector<size_t> FlatSgd::plan_muon() {
  std::vector<size_t> banks;
  if (!(options_.muon_lr > 0)) return banks;
  FASTER_CHECK(options_.lr > 0, "FlatSgd: Muon's rate follows lr's schedule, so lr must be > 0");
  // A filter bank whose output channels each hold their elements in one run of memory (both
  // memory formats do) is a [out, in x kh x kw] matrix in place, its columns in memory order.
  struct Bank {
    size_t param;
    int64_t out, k, rows, cols;
  };
  std::vector<Bank> all;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    if (p.dim() != 4 || p.numel() == 0) continue;
    const int64_t out = p.size(0), k = p.numel() / out;
    if (p.stride(0) != k) continue;
    all.push_back({i, out, k, std::min(out, k), std::max(out, k)});
    banks.push_back(i);
  }
  // Groups of one padded shape, largest banks first; a bank joins the first group where the
  // padding stays at most as large as what it pads (fewer, larger batched products).
  std::stable_sort(all.begin(), all.end(),
                   [](const Bank& a, const Bank& b) { return a.rows * a.cols > b.rows * b.cols; });
  std::vector<std::vector<Bank>> groups;
  for (const auto& b : all) {
    bool placed = false;
    for (auto& g : groups) {
      int64_t rows = b.rows, cols = b.cols, real = b.rows * b.cols;
      for (const auto& m : g)
        rows = std::max(rows, m.rows), cols = std::max(cols, m.cols), real += m.rows * m.cols;
      if (static_cast<int64_t>(g.size() + 1) * rows * cols <= 2 * real) {
        g.push_back(b);
        placed = true;
        break;
      }
    }
    if (!placed) groups.push_back({b});
  }
  const int64_t pad = flat_.numel();  // storage_'s zero
  for (const auto& g : groups) {
    MuonGroup m;
    m.banks = static_cast<int64_t>(g.size());
    for (const auto& b : g) m.rows = std::max(m.rows, b.rows), m.cols = std::max(m.cols, b.cols);
    auto index = torch::full({m.banks, m.rows, m.cols}, pad, torch::kLong);
    auto target = torch::empty({m.banks, 1, 1});
    auto ix = index.accessor<int64_t, 3>();
    for (int64_t j = 0; j < m.banks; ++j) {
      const auto& b = g[j];
      const int64_t at = offsets_[b.param];
      const bool transposed = b.out > b.k;  // element (r, c) is the bank's (c, r)
      for (int64_t r = 0; r < b.rows; ++r)
        for (int64_t c = 0; c < b.cols; ++c)
          ix[j][r][c] = transposed ? at + c * b.k + r : at + r * b.k + c;
      target[j].fill_(std::sqrt(static_cast<double>(b.out)));
    }
    m.index = index.view({-1}).to(flat_.device());
    m.target = target.to(flat_.device());
    muon_.push_back(std::move(m));
  }
  return banks;
}

std::vector<std::vector<int64_t>> FlatSgd::muon_groups() const {
  std::vector<std::vector<int64_t>> out;
  for (const auto& m : muon_) out.push_back({m.banks, m.rows, m.cols});
  return out;
}

void FlatSgd::reorder_from(torch::Tensor flat, bool channels_last) const {
  torch::NoGradGuard no_grad;
  FASTER_CHECK(flat.numel() == flat_.numel(), "reorder_from: a buffer of another size");
  const auto saved = flat.clone();
  const auto format =
      channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    if (p.dim() != 4) continue;  // one order only
    const auto written = torch::empty(p.sizes(), torch::TensorOptions().memory_format(format));
    param_view(flat, i).copy_(saved.as_strided(p.sizes(), written.strides(), offsets_[i]));
  }
}

void FlatSgd::set_lr(double lr) {
  lr_.fill_(lr);
}

void FlatSgd::zero_grad() {
  for (auto& p : params_) p.mutable_grad() = torch::Tensor();
}

torch::Tensor FlatSgd::flat_grad() const {
  std::vector<torch::Tensor> parts;
  parts.reserve(params_.size());
  for (const auto& p : params_) {
    auto g = flat_grad_of(p);
    parts.push_back(g.defined() ? g : torch::zeros({p.numel()}, p.options()));
  }
  return torch::cat(parts);
}

void FlatSgd::step(const torch::Tensor& grad, const torch::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  const auto& o = options_;
  auto g = decay_.defined()      ? torch::addcmul(grad, decay_, flat_)
           : o.weight_decay != 0 ? grad + o.weight_decay * flat_
                                 : grad;
  if (!muon_.empty()) {
    muon_step(g, found_inf);
    return;
  }
  if (!found_inf.defined()) {
    momentum_.mul_(o.momentum).add_(g);
    flat_.addcmul_(o.nesterov ? g + o.momentum * momentum_ : momentum_, lr_, -1);
    return;
  }
  const auto skip = found_inf.to(torch::kBool);
  auto buf = momentum_ * o.momentum + g;
  auto next = flat_ - lr_ * (o.nesterov ? g + o.momentum * buf : buf);
  momentum_.copy_(torch::where(skip, momentum_, buf));
  flat_.copy_(torch::where(skip, flat_, next));
}

void FlatSgd::muon_step(const torch::Tensor& g, const torch::Tensor& found_inf) {
  const auto& o = options_;
  // SGD's step for every parameter, from a per-element momentum; the filters' values are then
  // replaced by Muon's, computed from the weights before it.
  const auto buf = torch::addcmul(g, momentum_, momentum_coef_);  // momentum * buf + g
  auto direction = direction_.narrow(0, 0, flat_.numel());
  if (o.nesterov)
    torch::addcmul_out(direction, g, momentum_coef_, buf);
  else
    direction.copy_(buf);
  const double ratio = o.muon_lr / o.lr;  // the schedule scales lr_; Muon's rate moves with it
  std::vector<torch::Tensor> before, after;
  for (const auto& m : muon_) {
    const std::vector<int64_t> shape = {m.banks, m.rows, m.cols};
    const auto w = storage_.index_select(0, m.index).view(shape);
    const auto u = direction_.index_select(0, m.index).view(shape);
    const auto ns =
        newton_schulz(u.to(u.is_cuda() ? torch::kBFloat16 : torch::kFloat), o.muon_steps)
            .to(torch::kFloat);
    const auto norm = w.norm(2, {1, 2}, /*keepdim=*/true).clamp_min(1e-12);
    before.push_back(w.view({-1}));
    after.push_back(torch::addcmul(w * (m.target / norm), ns, lr_, -ratio).view({-1}));
  }
  if (!found_inf.defined()) {
    momentum_.copy_(buf);
    flat_.addcmul_(direction, lr_, -1);
  } else {
    const auto skip = found_inf.to(torch::kBool);
    momentum_.copy_(torch::where(skip, momentum_, buf));
    flat_.copy_(torch::where(skip, flat_, flat_ - lr_ * direction));
    for (size_t i = 0; i < after.size(); ++i) after[i] = torch::where(skip, before[i], after[i]);
  }
  // Padding positions all name storage_'s last element, and all carry zero.
  for (size_t i = 0; i < muon_.size(); ++i) storage_.index_copy_(0, muon_[i].index, after[i]);
}

torch::Tensor newton_schulz(const torch::Tensor& g, int steps) {
  FASTER_CHECK(g.dim() == 3 && g.size(1) <= g.size(2), "newton_schulz: [batch, rows <= cols]");
  constexpr double kA = 3.4445, kB = -4.7750, kC = 2.0315;
  auto x = g / (g.norm(2, {1, 2}, /*keepdim=*/true) + 1e-7);
  for (int i = 0; i < steps; ++i) {
    const auto a = torch::bmm(x, x.transpose(1, 2));
    const auto b = torch::baddbmm(a, a, a, /*beta=*/kB, /*alpha=*/kC);  // kB a + kC a^2
    x = torch::baddbmm(x, b, x, /*beta=*/kA, /*alpha=*/1);              // kA x + b x
  }
  return x;
}

}  // namespace faster::train

// SGD with momentum, weight decay and Nesterov (torch.optim.SGD semantics, dampening 0), over all
// parameters at once: the parameters are re-pointed into one flat buffer so that a step is a
// handful of kernels, whatever the layer count, and a skipped (non-finite) step is decided on the
// device. The learning rate lives on the device too, so a schedule changes it between the replays
// of a captured CUDA graph.  Optionally Muon (airbench94_muon's optimizer) for the convolution
// filters, in a few batched kernels too.
#pragma once

#include <torch/types.h>

#include <vector>

namespace faster::train {

struct SgdOptions {
  double lr = 1e-3;
  double momentum = 0.9;
  double weight_decay = 0.0;
  bool nesterov = false;
  // Weight decay on 1-d parameters too (BatchNorm weights and biases, every bias); false leaves
  // them undecayed (torchvision's --norm-weight-decay 0 --bias-weight-decay 0).
  bool decay_1d = true;
  // >= 0: the weight decay of normalization layers' parameters (torchvision's
  // --norm-weight-decay) and of every parameter named bias (--bias-weight-decay, which wins for a
  // norm's bias, as in torchvision's set_weight_decay); < 0: weight_decay, or 0 where decay_1d
  // is off.
  double norm_weight_decay = -1;
  double bias_weight_decay = -1;
  // Muon where muon_lr > 0, for the convolution filters (4-d parameters): a bank's Nesterov (as
  // `nesterov`) momentum with muon_momentum, as a matrix of one row per output channel, is
  // orthogonalized by muon_steps Newton-Schulz iterations (newton_schulz: bf16 on CUDA, float on
  // the CPU) and applied at muon_lr, which the schedule scales as it scales lr; before each step
  // the bank's norm is reset to sqrt(output channels) (the BatchNorm after it makes the scale
  // moot), and it takes no weight decay.  The other parameters keep SGD.
  double muon_lr = 0;
  double muon_momentum = 0.6;
  int muon_steps = 3;
};

// What a parameter is, for its weight decay: a normalization layer's (its module's weight is 1-d)
// and/or a bias (named "bias").
struct ParamRole {
  bool norm = false, bias = false;
};
// The roles of `named` parameters by their names (torchvision's, "layer1.0.bn1.weight").
std::vector<ParamRole> param_roles(const std::vector<std::pair<std::string, torch::Tensor>>& named);
// The weight decay of a parameter of `role` with `dim` dimensions.
double param_weight_decay(const ParamRole& role, int64_t dim, const SgdOptions& o);

class FlatSgd {
 public:
  // `params` keep their shapes and memory formats; their storage moves into one flat buffer.
  // `roles` (one per parameter, or none: every 1-d parameter a norm's) decide their decays.
  FlatSgd(std::vector<torch::Tensor> params, SgdOptions options, std::vector<ParamRole> roles = {});

  // Drops every gradient (zero_grad with set_to_none).
  void zero_grad();
  // The gradients concatenated in the flat buffer's order (zeros where a parameter has none).
  torch::Tensor flat_grad() const;
  // One step from `grad` (flat).  With found_inf (0-dim float, 1 = skip), parameters and momentum
  // are left unchanged when it is set, without the host reading it.
  void step(const torch::Tensor& grad, const torch::Tensor& found_inf = {});
  // The rate the next steps use (written on the device, no host sync).
  void set_lr(double lr);

  const torch::Tensor& flat_params() const { return flat_; }
  // The momentum buffer (flat), for checkpoints.
  const torch::Tensor& momentum() const { return momentum_; }
  const std::vector<torch::Tensor>& params() const { return params_; }
  // Offsets (in elements) of each parameter in the flat buffer.
  const std::vector<int64_t>& offsets() const { return offsets_; }
  // Parameter i's shape and strides over `flat`, a buffer laid out as the flat parameters (the
  // momentum, the weights' average).
  torch::Tensor param_view(const torch::Tensor& flat, size_t i) const {
    return flat.as_strided(params_[i].sizes(), params_[i].strides(), offsets_[i]);
  }
  // Muon's filter banks as it batches them: per group, [banks, rows, cols] (rows <= cols; smaller
  // banks zero-padded to the group's shape).  Empty without Muon.
  std::vector<std::vector<int64_t>> muon_groups() const;
  // Reorders `flat`, a buffer like flat_params() but written with every 4-d parameter in
  // channels-last order (`channels_last`) or contiguous order, into this buffer's order, in place:
  // for the momentum and the weights' average of a checkpoint made with the other memory format.
  void reorder_from(torch::Tensor flat, bool channels_last) const;

 private:
  // Muon's banks of one padded shape: `index` holds, for each of their [banks, rows, cols]
  // elements, its position in storage_ (padding: the zero at its end); `target`: [banks, 1, 1],
  // sqrt(output channels) per bank.
  struct MuonGroup {
    torch::Tensor index, target;
    int64_t banks = 0, rows = 0, cols = 0;
  };
  std::vector<size_t> plan_muon();  // fills muon_; returns the parameters Muon moves
  void muon_step(const torch::Tensor& grad, const torch::Tensor& found_inf);

  std::vector<torch::Tensor> params_;
  std::vector<int64_t> offsets_;
  torch::Tensor storage_;  // the flat buffer and one zero after it (what Muon's padding reads)
  torch::Tensor flat_, momentum_;
  torch::Tensor lr_;     // 0-dim float on the parameters' device
  torch::Tensor decay_;  // per element: weight_decay, or 0 where it does not apply
  // Muon: per element momentum (muon_momentum in the filters), the step's direction (with a zero
  // after it, as storage_), the groups.
  torch::Tensor momentum_coef_, direction_;
  std::vector<MuonGroup> muon_;
  SgdOptions options_;
};

// Newton-Schulz's quintic iteration as Muon runs it (coefficients 3.4445, -4.7750, 2.0315), `steps`
// times on each matrix of g ([batch, rows, cols], rows <= cols), from g / ||g|| (Frobenius, per
// matrix; an all-zero matrix stays zero), in g's dtype: an approximate orthogonalization U S' V^T
// of g = U S V^T whose S' is near 1 (not 1: the coefficients trade exactness for speed).  Zero
// rows and columns (padding) stay zero and leave the rest as it would be without them.
torch::Tensor newton_schulz(const torch::Tensor& g, int steps);

// `param`'s gradient as a flat tensor that lines up with the parameter's slice of the flat buffer
// (its memory order; a view where the gradient already has the parameter's strides); undefined
// when the parameter has no gradient.
torch::Tensor flat_grad_of(const torch::Tensor& param);

}  // namespace faster::train

// SGD with momentum, weight decay and Nesterov (torch.optim.SGD semantics, dampening 0), over all
// parameters at once: the parameters are re-pointed into one flat buffer so that a step is a
// handful of kernels, whatever the layer count, and a skipped (non-finite) step is decided on the
// device. The learning rate lives on the device too, so a schedule changes it between the replays
// of a captured CUDA graph.
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
};

class FlatSgd {
 public:
  // `params` keep their shapes and memory formats; their storage moves into one flat buffer.
  FlatSgd(std::vector<torch::Tensor> params, SgdOptions options);

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
  // Reorders `flat`, a buffer like flat_params() but written with every 4-d parameter in
  // channels-last order (`channels_last`) or contiguous order, into this buffer's order, in place:
  // for the momentum and the weights' average of a checkpoint made with the other memory format.
  void reorder_from(torch::Tensor flat, bool channels_last) const;

 private:
  std::vector<torch::Tensor> params_;
  std::vector<int64_t> offsets_;
  torch::Tensor flat_, momentum_;
  torch::Tensor lr_;     // 0-dim float on the parameters' device
  torch::Tensor decay_;  // per element: weight_decay, or 0 where a 1-d parameter is not decayed
  SgdOptions options_;
};

// `param`'s gradient as a flat tensor that lines up with the parameter's slice of the flat buffer
// (its memory order; a view where the gradient already has the parameter's strides); undefined
// when the parameter has no gradient.
torch::Tensor flat_grad_of(const torch::Tensor& param);

}  // namespace faster::train

// GradReducer implementation.  The hooks run on autograd's threads; a mutex orders them.
#include "faster/train/parallel/grad_reducer.h"

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "faster/core/error.h"
#include "faster/train/sgd.h"

namespace faster::train {
namespace {

// Runs a callback after a parameter's AccumulateGrad node has written .grad.
class AfterAccumulate : public torch::autograd::FunctionPostHook {
 public:
  explicit AfterAccumulate(std::function<void()> fn) : fn_(std::move(fn)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    fn_();
    return outputs;
  }

 private:
  std::function<void()> fn_;
};

}  // namespace

GradReducer::GradReducer(Dist& dist, std::vector<torch::Tensor> params,
                         std::vector<int64_t> offsets, int64_t bucket_bytes)
    : dist_(dist), params_(std::move(params)), offsets_(std::move(offsets)) {
  FASTER_CHECK(!params_.empty() && params_.size() == offsets_.size(),
               "GradReducer: bad parameters");
  const int64_t total = offsets_.back() + params_.back().numel();
  flat_ = torch::zeros({total}, params_[0].options().requires_grad(false));
  bucket_of_.assign(params_.size(), 0);
  // Reverse order: the last layers' gradients are ready first.
  Bucket current;
  current.end = total;
  int64_t bytes = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    const int64_t b = params_[k].numel() * params_[k].element_size();
    if (current.params > 0 && bytes + b > bucket_bytes) {
      current.begin = offsets_[k + 1];
      buckets_.push_back(current);
      current = Bucket{};
      current.end = offsets_[k + 1];
      bytes = 0;
    }
    bucket_of_[k] = static_cast<int>(buckets_.size());
    ++current.params;
    bytes += b;
  }
  current.begin = 0;
  buckets_.push_back(current);
  for (size_t k = 0; k < params_.size(); ++k) {
    auto acc = torch::autograd::impl::grad_accumulator(params_[k]);
    FASTER_CHECK(acc, "GradReducer: parameter ", k, " does not require grad");
    acc->add_post_hook(std::make_unique<AfterAccumulate>([this, k] { on_ready(k); }));
    accumulators_.push_back(std::move(acc));
  }
  begin();
}

GradReducer::~GradReducer() = default;

void GradReducer::begin() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& b : buckets_) b.pending = b.params;
  ready_.assign(buckets_.size(), false);
  works_.clear();
  works_.resize(buckets_.size());
  next_launch_ = 0;
}

void GradReducer::on_ready(size_t k) {
  const auto& p = params_[k];
  auto segment = flat_.narrow(0, offsets_[k], p.numel());
  const auto g = flat_grad_of(p);
  if (g.defined())
    segment.copy_(g);
  else
    segment.zero_();
  std::lock_guard<std::mutex> lock(mutex_);
  auto& b = buckets_[bucket_of_[k]];
  if (--b.pending == 0) ready_[bucket_of_[k]] = true;
  launch_ready_locked();
}

void GradReducer::launch_ready_locked() {
  while (next_launch_ < buckets_.size() && ready_[next_launch_]) {
    const auto& b = buckets_[next_launch_];
    works_[next_launch_] = dist_.all_reduce_sum_async(flat_.narrow(0, b.begin, b.end - b.begin));
    ++next_launch_;
  }
}

torch::Tensor GradReducer::finish() {
  {
    // Parameters that took no part in this backward: their gradient is zero on this rank.
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t k = 0; k < params_.size(); ++k) {
      auto& b = buckets_[bucket_of_[k]];
      if (b.pending > 0 && !params_[k].grad().defined()) {
        flat_.narrow(0, offsets_[k], params_[k].numel()).zero_();
        if (--b.pending == 0) ready_[bucket_of_[k]] = true;
      }
    }
    for (size_t i = 0; i < buckets_.size(); ++i)
      FASTER_CHECK(ready_[i], "GradReducer: bucket ", i, " incomplete after backward");
    launch_ready_locked();
  }
  for (auto& w : works_) w->wait();
  flat_.div_(dist_.world().world);
  return flat_;
}

}  // namespace faster::train

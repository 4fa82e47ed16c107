// Shift and flip as two gathers (rows, then columns) over the padded batch: a handful of kernels
// for a whole epoch, on any device.
#include "faster/data/augment/shift_flip.h"

#include <torch/torch.h>

#include "faster/core/error.h"
#include "faster/data/augment/crop_params.h"

namespace faster::data {

torch::Tensor shift_flip_params(const std::vector<int64_t>& indices, const ShiftFlipOptions& o,
                                uint64_t seed, int64_t epoch) {
  FASTER_CHECK(o.pad >= 0, "shift_flip: negative pad");
  const auto n = static_cast<int64_t>(indices.size());
  auto params = torch::empty({n, 3}, torch::kLong);
  auto* p = params.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    SampleRng rng(seed, epoch, indices[i]);
    p[3 * i] = rng.integer(0, 2 * o.pad);
    p[3 * i + 1] = rng.integer(0, 2 * o.pad);
    bool coin = rng.coin();
    if (o.alternate) {
      SampleRng first(seed, 0, indices[i]);  // epoch 0's draws, in the same order
      first.integer(0, 2 * o.pad), first.integer(0, 2 * o.pad);
      coin = first.coin() != (epoch % 2 == 1);
    }
    p[3 * i + 2] = o.flip && coin ? 1 : 0;
  }
  return params;
}

torch::Tensor shift_flip(const torch::Tensor& padded, const torch::Tensor& params, int pad) {
  FASTER_CHECK(padded.dim() == 4 && params.dim() == 2 && params.size(0) == padded.size(0) &&
                   params.size(1) == 3,
               "shift_flip: images [n, C, H, W] and params [n, 3]");
  const int64_t n = padded.size(0), c = padded.size(1), pw = padded.size(3);
  const int64_t h = padded.size(2) - 2 * pad, w = pw - 2 * pad;
  FASTER_CHECK(h > 0 && w > 0, "shift_flip: pad ", pad, " leaves no image");
  const auto column = [&](int64_t k) { return params.select(1, k).view({n, 1, 1, 1}); };
  const auto ys = torch::arange(h, params.options()).view({1, 1, h, 1}) + column(0);
  const auto rows = padded.gather(2, ys.expand({n, c, h, pw}));
  const auto xs = torch::arange(w, params.options()).view({1, 1, 1, w});
  const auto xs_flipped = (w - 1) - xs;
  const auto cols = torch::where(column(2).to(torch::kBool), xs_flipped, xs) + column(1);
  return rows.gather(3, cols.expand({n, c, h, w}));
}

}  // namespace faster::data

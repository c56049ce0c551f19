#include "impl/sampling/inverse_cdf.h"

#include <ATen/ATen.h>

namespace specgate {

at::Tensor sample_tokens(const at::Tensor& weights, const at::Tensor& uniforms) {
  const int64_t vocab = weights.size(-1);
  const at::Tensor cumulative = weights.cumsum(-1);
  const at::Tensor target = uniforms.unsqueeze(-1) * cumulative.narrow(-1, vocab - 1, 1);
  // The first bin whose cumulative mass passes the target: never one of zero weight.
  const at::Tensor drawn = cumulative.le(target).sum(-1);
  // A target at or past the total (all weights zero) takes the last token of positive weight.
  const at::Tensor last_positive = (weights.gt(0) * at::arange(vocab, drawn.options())).amax(-1);
  return at::where(drawn.lt(vocab), drawn, last_positive);
}

}  // namespace specgate

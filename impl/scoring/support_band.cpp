#include "impl/scoring/support_band.h"

#include <cmath>

#include <ATen/ATen.h>

namespace specgate {

at::Tensor within_support_margin(const at::Tensor& logits, const at::Tensor& shaped, const SamplingParams& sampling,
                                 const SupportMargin& margin) {
  const at::Tensor l = logits.to(at::kDouble);
  const int64_t vocab = l.size(-1);
  at::Tensor within = shaped.eq(0.0);
  at::Tensor in_top_k = at::ones_like(within);
  if (sampling.top_k > 0 && sampling.top_k < vocab) {
    const at::Tensor kth = std::get<0>(l.topk(sampling.top_k, -1)).narrow(-1, sampling.top_k - 1, 1);
    in_top_k = l.ge(kth);
    within = within.logical_and((l + margin.logits).ge(kth));
  }
  if (sampling.min_p > 0.0) {
    const at::Tensor threshold = l.amax(-1, /*keepdim=*/true) + sampling.temperature * std::log(sampling.min_p);
    within = within.logical_and((l + margin.logits).ge(threshold));
  }
  if (sampling.top_p < 1.0) {
    // Weights of the tempered softmax; the mass ahead of a top-k token is that of the top-k
    // tokens before it in descending order, and a token outside the top-k has all of them ahead.
    const at::Tensor weight = ((l - l.amax(-1, /*keepdim=*/true)) / sampling.temperature).exp();
    const at::Tensor kept = weight * in_top_k;
    const auto [sorted, order] = l.sort(/*stable=*/true, -1, /*descending=*/true);
    const at::Tensor kept_sorted = kept.gather(-1, order);
    const at::Tensor ahead_sorted = kept_sorted.cumsum(-1) - kept_sorted;
    const at::Tensor ahead = at::empty_like(ahead_sorted).scatter_(-1, order, ahead_sorted);
    const at::Tensor total = kept.sum(-1, /*keepdim=*/true);
    const at::Tensor ahead_mass = at::where(in_top_k, ahead / total, total / (total + weight));
    within = within.logical_and(ahead_mass.lt(sampling.top_p + margin.mass));
  }
  return within;
}

}  // namespace specgate

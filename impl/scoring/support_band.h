#pragma once

#include <ATen/core/Tensor.h>

#include "impl/sampling/sampling_params.h"
#include "impl/scoring/support_margin.h"

namespace specgate {

// The tokens outside the shaped support (`shaped` gives them no mass) that each warper would take
// in were its input off by the margin, judged warper by warper on what it compares: top-k the
// token's logit against the k-th largest, min-p its logit against the largest plus temperature
// times log(min_p), each raised by `margin.logits`; top-p the mass ahead of the token (in the
// distribution after the temperature and the top-k, the token joining it), which must stay under
// top_p plus `margin.mass`. Only the token moves: never the whole tail, which rounding never
// shifts together. logits [n, V] (before the temperature), shaped [n, V] -> bool [n, V].
at::Tensor within_support_margin(const at::Tensor& logits, const at::Tensor& shaped, const SamplingParams& sampling,
                                 const SupportMargin& margin);

}  // namespace specgate

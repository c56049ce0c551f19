#pragma once

#include <ATen/core/Tensor.h>

namespace specgate {

// Draws one token per distribution by inverse CDF, as batched tensor ops on the tensors'
// device: weights [..., V] (>= 0, float64, not necessarily normalised), uniforms [...] in
// [0, 1). Token i is drawn when u * sum(w) falls in its cumulative bin; on a CPU the sums run
// in vocabulary order, so the draw is exactly that of a sequential walk. int64 [...].
at::Tensor sample_tokens(const at::Tensor& weights, const at::Tensor& uniforms);

}  // namespace specgate

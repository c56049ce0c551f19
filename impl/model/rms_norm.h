#pragma once

#include <ATen/core/Tensor.h>

namespace specgate {

// weight * (x * rsqrt(mean(x^2 over the last axis) + eps)), as Hugging Face's Llama RMSNorm
// computes it (float32 inside for half precisions). A decode step normalises each of its few
// rows with eight of libtorch's operators, several times a layer, and on the CPU their calls cost
// more than their arithmetic: there, for contiguous float32 and float64 without gradients, one
// loop does it. Its sum of squares runs in a fixed order of its own, so a row's result is the
// same bits whatever rows come with it, whatever the threads and whatever the CPU's vector
// instructions; it rounds where libtorch's mean does not, by about an ulp of the variance.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

}  // namespace specgate

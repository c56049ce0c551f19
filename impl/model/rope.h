#pragma once

#include <ATen/core/Tensor.h>

#include "impl/model/config.h"

namespace specgate {

// Rotary position embedding (the "rotate half" layout of Hugging Face Llama).
class RotaryEmbedding {
 public:
  RotaryEmbedding(const ModelConfig& config, const at::TensorOptions& options);

  // cos and sin for explicit position ids [B, T], each [B, T, 1, head_dim], in the model dtype,
  // sin's first half negated: "rotate half" negates the half of x that it multiplies, and
  // (-a) * b and a * (-b) are the same bits.
  std::pair<at::Tensor, at::Tensor> cos_sin(const at::Tensor& positions) const;
  // x [B, T, H, head_dim] rotated by the angles of cos_sin(): x * cos + rotate_half(x) * sin,
  // each product rounded, then their sum, as libtorch computes it. On the CPU, for contiguous
  // float32 and float64 without gradients, in one loop instead of six operators.
  static at::Tensor apply(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& signed_sin);

  const at::Tensor& inverse_frequencies() const { return inv_freq_; }

 private:
  at::Tensor inv_freq_;  // [head_dim / 2], float64
  at::ScalarType dtype_;
};

}  // namespace specgate

#include "impl/model/rope.h"

#include <cmath>
#include <numbers>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/record_function.h>

namespace specgate {
namespace {

// Frequencies after `rope_scaling`, as transformers' ROPE_INIT_FUNCTIONS compute them.
std::vector<double> scaled_inverse_frequencies(const ModelConfig& config) {
  const int64_t half = config.head_dim / 2;
  std::vector<double> inv_freq(half);
  for (int64_t i = 0; i < half; ++i)
    inv_freq[i] = 1.0 / std::pow(config.rope_theta, static_cast<double>(2 * i) / config.head_dim);

  const RopeScaling& s = config.rope_scaling;
  switch (s.kind) {
    case RopeScaling::Kind::kNone:
      break;
    case RopeScaling::Kind::kLinear:
      for (double& f : inv_freq) f /= s.factor;
      break;
    case RopeScaling::Kind::kLlama3: {
      const double old_context = static_cast<double>(s.original_max_position_embeddings);
      const double low_freq_wavelen = old_context / s.low_freq_factor;
      const double high_freq_wavelen = old_context / s.high_freq_factor;
      for (double& f : inv_freq) {
        const double wavelen = 2 * std::numbers::pi / f;
        if (wavelen > low_freq_wavelen) {
          f /= s.factor;
        } else if (wavelen >= high_freq_wavelen) {
          const double smooth =
              (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
          f = (1 - smooth) * f / s.factor + smooth * f;
        }
      }
      break;
    }
  }
  return inv_freq;
}

}  // namespace

RotaryEmbedding::RotaryEmbedding(const ModelConfig& config, const at::TensorOptions& options)
    : dtype_(options.dtype().toScalarType()) {
  const std::vector<double> freq = scaled_inverse_frequencies(config);
  inv_freq_ = at::tensor(freq, options.dtype(at::kDouble));
}

std::pair<at::Tensor, at::Tensor> RotaryEmbedding::cos_sin(const at::Tensor& positions) const {
  const at::Tensor angles = positions.to(at::kDouble).unsqueeze(-1) * inv_freq_;  // [B, T, D/2]
  const at::Tensor sin = angles.sin();
  return {at::cat({angles, angles}, -1).unsqueeze(2).cos().to(dtype_), at::cat({-sin, sin}, -1).unsqueeze(2).to(dtype_)};
}

at::Tensor RotaryEmbedding::apply(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& signed_sin) {
  const at::ScalarType dtype = x.scalar_type();
  const int64_t head_dim = x.size(-1), half = head_dim / 2;
  const bool fused = x.dim() == 4 && (dtype == at::kFloat || dtype == at::kDouble) && x.device().is_cpu() &&
                     !x.requires_grad() && x.is_contiguous() && cos.scalar_type() == dtype &&
                     signed_sin.scalar_type() == dtype && cos.is_contiguous() && signed_sin.is_contiguous() &&
                     cos.sizes() == at::IntArrayRef({x.size(0), x.size(1), 1, head_dim}) &&
                     signed_sin.sizes() == cos.sizes();
  if (!fused) {
    // x's halves swapped; the sign of "rotate half" is in signed_sin.
    const at::Tensor swapped = at::cat({x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
    return x * cos + swapped * signed_sin;
  }
  RECORD_FUNCTION("specgate::rotary_embedding", std::vector<c10::IValue>());  // for libtorch's profiler
  at::Tensor y = at::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES(dtype, "specgate::rotary_embedding", [&] {
    const scalar_t* in = x.const_data_ptr<scalar_t>();
    scalar_t* out = y.mutable_data_ptr<scalar_t>();
    const int64_t positions = x.size(0) * x.size(1), heads = x.size(2);
    for (int64_t p = 0; p < positions; ++p) {
      const scalar_t* c = cos.const_data_ptr<scalar_t>() + p * head_dim;
      const scalar_t* s = signed_sin.const_data_ptr<scalar_t>() + p * head_dim;
      for (int64_t h = 0; h < heads; ++h, in += head_dim, out += head_dim) {
        for (int64_t i = 0; i < half; ++i) out[i] = in[i] * c[i] + in[i + half] * s[i];
        for (int64_t i = half; i < head_dim; ++i) out[i] = in[i] * c[i] + in[i - half] * s[i];
      }
    }
  });
  return y;
}

}  // namespace specgate
